package embedded

import (
	"context"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func init() {
	sandbox.Register(sandbox.Registration{
		Name: "embedded", Rank: 10, Help: "containers made in-process, root",
		Auto: 1, RootOnly: true, Flags: []sandbox.Flag{{Name: "seccomp"}, {Name: "userns"}},
		New: func(_ context.Context, s sandbox.Settings) (sandbox.Runtime, error) {
			o := DefaultOptions()
			o.Seccomp, o.UserNS = s.Seccomp, s.UserNS
			return sandbox.Made(New(o))
		},
	})
}
