package kubernetes

import (
	"context"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func init() {
	sandbox.Register(sandbox.Registration{
		Name: "kubernetes", Rank: 50, Help: "a pod per interpreter on a cluster", ImageInterpreter: true,
		Flags: []sandbox.Flag{{Name: "image"}, {Name: "kubeconfig", Path: true}, {Name: "namespace"}, {Name: "runtime-class"}, {Name: "baked"}},
		New: func(ctx context.Context, s sandbox.Settings) (sandbox.Runtime, error) {
			return sandbox.Made(New(ctx, Options{Kubeconfig: s.Kubeconfig, Namespace: s.Namespace, Image: s.Image, RuntimeClass: s.RuntimeClass, Baked: s.Baked}))
		},
	})
}
