package host

import (
	"context"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func init() {
	sandbox.Register(sandbox.Registration{
		Name: "host", Rank: 90, Help: "no isolation",
		New: func(_ context.Context, s sandbox.Settings) (sandbox.Runtime, error) {
			return NewWith(Options{Unconfined: s.Unsafe}), nil
		},
	})
}
