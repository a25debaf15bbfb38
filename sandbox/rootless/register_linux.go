package rootless

import (
	"context"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func init() {
	sandbox.Register(sandbox.Registration{
		Name: "rootless", Rank: 20, Help: "the same without root, on user namespaces",
		Auto: 2, Flags: []sandbox.Flag{{Name: "seccomp"}},
		New: func(_ context.Context, s sandbox.Settings) (sandbox.Runtime, error) {
			o := DefaultOptions()
			o.Seccomp = s.Seccomp
			return sandbox.Made(New(o))
		},
	})
}
