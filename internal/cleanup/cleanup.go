// Package cleanup is how the scan and the runtimes undo what they made:
// a stack of undo steps released on success (gVisor's pkg/cleanup), and a
// context for cleanup work that runs even after the caller's context was
// cancelled, within a bound (containerd's cleanup.Background).
package cleanup

import (
	"context"
	"time"
)

// Context is for cleanup: it is not cancelled with ctx (an interrupted
// scan must still remove its containers), but ends after d.
func Context(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// Do runs f under Context(ctx, d).
func Do(ctx context.Context, d time.Duration, f func(context.Context)) {
	cctx, cancel := Context(ctx, d)
	defer cancel()
	f(cctx)
}

// Stack holds undo steps, run last first by Clean unless Release was
// called first: build something in steps, push the undo of each, release
// the stack when the whole succeeded.
type Stack struct {
	steps []func()
}

// Push adds an undo step.
func (s *Stack) Push(undo func()) { s.steps = append(s.steps, undo) }

// Clean runs every step not released, last first, once.
func (s *Stack) Clean() {
	for i := len(s.steps) - 1; i >= 0; i-- {
		s.steps[i]()
	}
	s.steps = nil
}

// Release hands the steps over: Clean then does nothing, and the returned
// function runs them (the caller's own undo of the whole).
func (s *Stack) Release() func() {
	steps := s.steps
	s.steps = nil
	return func() { (&Stack{steps: steps}).Clean() }
}
