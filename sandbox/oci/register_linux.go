package oci

import (
	"context"
	"path/filepath"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func init() {
	sandbox.Register(sandbox.Registration{
		Name: "oci", Rank: 30, Help: "an external OCI runtime", Flags: []sandbox.Flag{{Name: "oci-runtime", Path: true}, {Name: "seccomp"}, {Name: "userns"}},
		Variant: func(s sandbox.Settings) string { return filepath.Base(s.OCIBinary) },
		New: func(ctx context.Context, s sandbox.Settings) (sandbox.Runtime, error) {
			o := DefaultOptions()
			if s.OCIBinary != "" {
				o.Binary = s.OCIBinary
			}
			o.Seccomp, o.UserNS = s.Seccomp, s.UserNS
			return sandbox.Made(New(ctx, o))
		},
	})
}
