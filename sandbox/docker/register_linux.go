package docker

import (
	"context"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func init() {
	sandbox.Register(sandbox.Registration{
		Name: "docker", Rank: 40, Help: "the Docker engine", Auto: 3, ImageInterpreter: true, Flags: []sandbox.Flag{{Name: "image"}},
		New: func(ctx context.Context, s sandbox.Settings) (sandbox.Runtime, error) {
			return sandbox.Made(New(ctx, s.Image))
		},
	})
}
