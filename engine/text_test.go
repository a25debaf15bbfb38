package engine

import (
	"strings"
	"testing"
)

func TestTextIsSafeForTerminals(t *testing.T) {
	rep := &Report{Tool: Tool{Name: "nondet-sandbox"}, Modules: []Module{{Path: "evil.py", Status: "import-failed", Error: "RuntimeError: \x1b]0;pwned\x07"}},
		Functions: []*Function{{ID: "evil.py::f\x1b[2J", Verdict: VerdictLook, Reason: "every rung raised"}}}
	rep.finish()
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("control characters reached the text report: %q", b.String())
	}
	if !strings.Contains(b.String(), `\x1b]0;pwned\x07`) {
		t.Fatalf("escaped text missing: %q", b.String())
	}
}
