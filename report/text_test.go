package report

import (
	"strings"
	"testing"
)

func TestTextIsSafeForTerminals(t *testing.T) {
	rep := &Report{Tool: Tool{Name: "nondet-sandbox"}, Modules: []Module{{Path: "evil.py", Status: "import-failed", Error: "RuntimeError: \x1b]0;pwned\x07"}},
		Functions: []*Function{{ID: "evil.py::f\x1b[2J", Verdict: VerdictLook, Reason: "every rung raised"}}}
	rep.Finish()
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

func TestSARIF(t *testing.T) {
	rep := &Report{Tool: Tool{Name: "nondet-sandbox", Version: "t"}, Targets: []string{"src/"},
		Functions: []*Function{
			{ID: "pkg/mod.py::f", Line: 7, Verdict: VerdictNondeterministic, Causes: []string{"hash-seed"},
				Witness: &Witness{Args: []string{`["a","b"]`}, Answers: []Answer{{0, `V:set["a","b"]`}, {1, `V:set["b","a"]`}}}},
			{ID: "pkg/mod.py::g", Line: 9, Verdict: VerdictLook, Reason: "every rung raised"},
			{ID: "pkg/mod.py::h", Line: 11, Verdict: VerdictDeterministic},
		}}
	var b strings.Builder
	if err := WriteSARIF(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`"version": "2.1.0"`, `"ruleId": "nondeterministic"`, `"level": "warning"`,
		`"uri": "src/pkg/mod.py"`, `"startLine": 7`, `causes: hash-seed`, `"ruleId": "look"`, `"level": "note"`} {
		if !strings.Contains(out, want) {
			t.Errorf("SARIF lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mod.py::h") {
		t.Error("a deterministic function is not a result")
	}
}
