package cleanup

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestStack(t *testing.T) {
	var order []int
	var s Stack
	s.Push(func() { order = append(order, 1) })
	s.Push(func() { order = append(order, 2) })
	s.Clean()
	s.Clean()
	if !slices.Equal(order, []int{2, 1}) {
		t.Fatalf("undo order %v, want [2 1] once", order)
	}
	order = nil
	s.Push(func() { order = append(order, 3) })
	undo := s.Release()
	s.Clean()
	if len(order) != 0 {
		t.Fatalf("a released stack ran %v", order)
	}
	undo()
	if !slices.Equal(order, []int{3}) {
		t.Fatalf("the released undo ran %v", order)
	}
}

func TestContextOutlivesCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Do(ctx, time.Minute, func(c context.Context) {
		if c.Err() != nil {
			t.Fatalf("cleanup context cancelled with its parent: %v", c.Err())
		}
		if _, ok := c.Deadline(); !ok {
			t.Fatal("cleanup context has no bound")
		}
	})
}
