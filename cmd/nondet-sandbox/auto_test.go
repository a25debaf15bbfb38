package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// TestAutoRuntime: --runtime auto (the default) is the strongest sandbox
// the caller has: embedded for root. As another user it is rootless, which
// sandbox/rootless's suite checks as uid 65534.
func TestAutoRuntime(t *testing.T) {
	testenv.NeedRoot(t)
	o := testOptions(t, "auto", 1)
	var notes bytes.Buffer
	o.notes = &notes
	rt, err := newRuntime(context.Background(), "auto", o.sandboxOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRuntime(rt)
	if rt.Name() != "embedded" || !rt.Isolated() {
		t.Fatalf("as root, auto chose %s; notes: %s", rt.Name(), notes.String())
	}
	if notes.Len() != 0 {
		t.Errorf("auto took its first choice and still wrote a note: %q", notes.String())
	}
}
