package engine

import (
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestJudge: a verdict from a function's answers alone, without Python. A
// disagreement across runs or within one process is a witness; a
// dict-order disagreement is order sensitivity beside the verdict; a
// function with any answer and no disagreement is deterministic; one whose
// rungs only raised, had no canonical form or were contained is a look.
func TestJudge(t *testing.T) {
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	e := outcome{kind: raisedK, value: "E:TypeError"}
	x := outcome{kind: excluded, detail: "an address"}
	ladder := [][]string{{"0"}, {"1"}}
	for _, c := range []struct {
		name      string
		rungs     [][]outcome
		verdict   string
		reason    string
		runs      [2]int // the witness's runs, when there is one
		breaker   string
		orderOnly bool
		sensitive bool
	}{
		{"across runs", [][]outcome{{v("1"), v("1"), v("1")}, {v("a"), e, v("b")}}, VerdictNondeterministic, "two answers to one input", [2]int{0, 1}, "", false, false},
		{"order only", [][]outcome{{{kind: answered, value: "V:set[1,2]", free: "V:set[1,2]"}, {kind: answered, value: "V:set[2,1]", free: "V:set[1,2]"}}},
			VerdictNondeterministic, "different order", [2]int{0, 1}, "", true, false},
		{"repeat", [][]outcome{{v("1"), {kind: answered, value: "V:1", breaker: BreakerRepeat, value2: "V:2"}}}, VerdictNondeterministic, "two answers", [2]int{1, 1}, BreakerRepeat, false, false},
		{"dict order", [][]outcome{{v("1"), {kind: answered, value: "V:1", breaker: BreakerDictOrder, value2: "V:2"}}}, VerdictDeterministic, "no run disagreed", [2]int{}, "", false, true},
		{"deterministic", [][]outcome{{v("1"), v("1")}, {e, e}}, VerdictDeterministic, "raised on 1 of 2 rungs", [2]int{}, "", false, false},
		{"only raised", [][]outcome{{e, e}, {e, e}}, VerdictLook, "every rung raised", [2]int{}, "", false, false},
		{"no canonical form", [][]outcome{{x, x}, {x, x}}, VerdictLook, "no answer had a canonical form", [2]int{}, "", false, false},
		{"contained", [][]outcome{{{kind: timedOut}, {kind: timedOut}}, {{kind: skipped}, {kind: skipped}}}, VerdictLook, "timed out", [2]int{}, "", false, false},
	} {
		f := &report.Function{}
		judge(f, c.rungs, ladder, nil)
		if f.Verdict != c.verdict || !strings.Contains(f.Reason, c.reason) {
			t.Errorf("%s: %s (%s), want %s saying %q", c.name, f.Verdict, f.Reason, c.verdict, c.reason)
			continue
		}
		if (f.OrderSensitive != nil) != c.sensitive {
			t.Errorf("%s: order sensitive %v, want %v", c.name, f.OrderSensitive != nil, c.sensitive)
		}
		if c.verdict != VerdictNondeterministic {
			if f.Witness != nil {
				t.Errorf("%s: a witness %+v beside verdict %s", c.name, f.Witness, f.Verdict)
			}
			continue
		}
		w := f.Witness
		if w == nil || w.Answers[0].Run != c.runs[0] || w.Answers[1].Run != c.runs[1] || w.Answers[0].Value == w.Answers[1].Value ||
			w.Breaker != c.breaker || w.OrderOnly != c.orderOnly || len(w.Args) != 1 || w.Args[0] != ladder[w.Rung][0] {
			t.Errorf("%s: witness %+v", c.name, w)
		}
	}
}

// TestLookNamesWhatStoppedIt: a look whose rungs all raised names the
// exception types, so a user can tell the ladder's type errors from a
// body or a sandbox that stopped every call.
func TestLookNamesWhatStoppedIt(t *testing.T) {
	e := func(typ string) outcome { return outcome{kind: raisedK, value: "E:" + typ} }
	for _, c := range []struct {
		rungs [][]outcome
		says  string
	}{
		{[][]outcome{{e("TypeError"), e("TypeError")}, {e("TypeError"), e("TypeError")}}, "every rung raised TypeError — the ladder reached this function's type errors"},
		{[][]outcome{{e("FileNotFoundError")}, {e("FileNotFoundError")}, {e("TypeError")}}, "every rung raised FileNotFoundError, TypeError — its body, or what it reads, stopped every call (FileNotFoundError on 2, TypeError on 1; 3 of 3 rungs)"},
		{[][]outcome{{e("EOFError")}, {{kind: excluded}}}, "no rung answered: 1 raised, 1 had no canonical form (of 2 rungs); raised: EOFError on 1"},
		// Where each was raised, most first: the sandbox's refusals apart
		// from the code's own, the signature apart from the body.
		{[][]outcome{{at(e("OSError"), reachYes, "a read-only file system")}, {at(e("OSError"), reachYes, "a read-only file system")}, {at(e("KeyError"), reachYes, "")}},
			"every rung raised OSError, KeyError — the sandbox stopped most calls: a read-only file system (OSError on 2 by the sandbox: a read-only file system, KeyError on 1 in the body; 3 of 3 rungs)"},
		{[][]outcome{{at(e("TypeError"), reachNo, "")}, {at(e("TypeError"), reachNo, "")}, {at(e("ValueError"), reachYes, "")}},
			"every rung raised TypeError, ValueError — the ladder's inputs never fit its signature (TypeError on 2 binding the arguments, ValueError on 1 in the body;"},
		{[][]outcome{{at(e("TypeError"), reachYes, "")}}, "every rung raised TypeError — the ladder reached this function's type errors and never its behaviour (TypeError on 1 in the body;"},
		// Not a binding error, and the body never ran: unittest.skip's
		// wrapper, not the signature.
		{[][]outcome{{at(e("SkipTest"), reachNo, "")}, {at(e("SkipTest"), reachNo, "")}},
			"every rung raised SkipTest — a wrapper around it (a decorator) stopped every call before its body (SkipTest on 2 by a wrapper, before the body;"},
	} {
		f := &report.Function{}
		judge(f, c.rungs, nil, nil)
		if f.Verdict != VerdictLook || !strings.HasPrefix(f.Reason, c.says) {
			t.Errorf("%s: %q, want it to start %q", f.Verdict, f.Reason, c.says)
		}
		if len(f.Stopped) == 0 {
			t.Errorf("%q: no stops recorded", f.Reason)
		}
	}
}

func at(o outcome, r reach, sandbox string) outcome {
	o.reach, o.sandbox = r, sandbox
	return o
}

// TestJudgeAll: what failed in some runs only stays an answer of those
// runs; what failed in every run a function was called in makes it not
// probed with the reason, and a smelly function's extra runs count.
func TestJudgeAll(t *testing.T) {
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	file := &sourceFile{Rel: "m.py"}
	mk := func(i, module int, smelly bool) *probe {
		return &probe{Index: i, File: file, Module: module, Ladder: "l", smelly: smelly, fn: &report.Function{}}
	}
	// 0: its module failed to import in one of three runs;
	// 1: smelly, five runs, the sandbox failed three of them;
	// 2: the sandbox failed every one of its three runs;
	// 3: not callable.
	probes := []*probe{mk(0, 0, false), mk(1, 1, true), mk(2, 1, false), mk(3, 1, false)}
	res := newResults()
	res.calls[0] = [][]outcome{{v("1"), v("1"), v("1")}}
	res.calls[1] = [][]outcome{{v("1"), v("1"), {}, {}, {}}}
	res.calls[2] = [][]outcome{{{}, {}, {}}}
	res.calls[3] = [][]outcome{{{}, {}, {}}}
	res.importErr[0] = map[int]string{2: "ValueError: bad locale"}
	res.shardError[1] = map[int]string{2: "no", 3: "no", 4: "no"}
	res.shardError[2] = map[int]string{0: "no room", 1: "no room", 2: "no room"}
	res.notCall[3] = "not a function"
	rep := &report.Report{Modules: []report.Module{{Path: "m.py"}}}
	judgeAll(rep, probes, res, ladders{"l": {{"0"}}}, runCounts{main: 3, all: 5})

	if m := rep.Modules[0]; m.Status == "import-failed" || !strings.Contains(m.Error, "import failed in 1 of 3 runs") {
		t.Errorf("module: status %q, error %q", m.Status, m.Error)
	}
	// The failed import is run 2's answer: two answers to one input.
	if f := probes[0].fn; f.Verdict != VerdictNondeterministic || f.Runs != 3 {
		t.Errorf("import failed once: %s over %d runs (%s)", f.Verdict, f.Runs, f.Reason)
	}
	if f := probes[1].fn; f.Verdict != VerdictDeterministic || f.Runs != 5 || len(f.Contained) != 3 {
		t.Errorf("smelly, sandbox failed 3 of 5: %s over %d runs, %d events", f.Verdict, f.Runs, len(f.Contained))
	}
	if f := probes[2].fn; f.Verdict != VerdictNotProbed || !strings.Contains(f.Reason, "no room") {
		t.Errorf("sandbox failed every run: %s (%s)", f.Verdict, f.Reason)
	}
	if f := probes[3].fn; f.Verdict != VerdictNotProbed || f.Reason != "not a function" {
		t.Errorf("not callable: %s (%s)", f.Verdict, f.Reason)
	}
}

// TestMarkInterrupted: after an interruption, a function some run never
// called is not probed, one whose runs all answered keeps its verdict,
// and a finding keeps its witness with a word on what it lacks.
func TestMarkInterrupted(t *testing.T) {
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	mk := func(i int, verdict string) *probe {
		return &probe{Index: i, fn: &report.Function{Verdict: verdict, Reason: "r"}}
	}
	probes := []*probe{mk(0, VerdictDeterministic), mk(1, VerdictDeterministic), mk(2, VerdictNondeterministic)}
	res := newResults()
	res.calls[0] = [][]outcome{{v("1"), v("1"), v("1")}}
	res.calls[1] = [][]outcome{{v("1"), {}, {}}}
	res.calls[2] = [][]outcome{{v("1"), v("2"), {}}}
	markInterrupted(probes, res, runCounts{main: 3, all: 3}, false)
	if f := probes[0].fn; f.Verdict != VerdictDeterministic {
		t.Errorf("every run answered: %s %q", f.Verdict, f.Reason)
	}
	if f := probes[1].fn; f.Verdict != VerdictNotProbed || f.Reason != "the scan was interrupted before 2 of its 3 runs called it" {
		t.Errorf("two runs missing: %s %q", f.Verdict, f.Reason)
	}
	if f := probes[2].fn; f.Verdict != VerdictNondeterministic || !strings.Contains(f.Reason, "not confirmed alone") {
		t.Errorf("a witness: %s %q", f.Verdict, f.Reason)
	}
}

// TestALookCountsEveryRung: a look's reason accounts for every rung the
// ladder had, those the budget or an earlier hang left out too.
func TestALookCountsEveryRung(t *testing.T) {
	e := outcome{kind: raisedK, value: "E:TypeError"}
	for _, c := range []struct {
		rungs [][]outcome
		says  string
	}{
		{[][]outcome{{e}, {{kind: timedOut}}, {{kind: overBudget}}, {{kind: overBudget}}, {{kind: skipped}}, {{}}},
			"no rung answered: 1 raised, 0 had no canonical form, 1 timed out, 0 killed the interpreter, 2 skipped by the function budget, 1 not called after an earlier call hung or crashed, 1 never called (of 6 rungs)"},
		{[][]outcome{{{kind: timedOut}}, {{kind: overBudget}}, {{kind: overBudget}}},
			"every call it made timed out and had to be contained; the rest of its rungs were not called (1 of 3 rungs reached; 2 skipped by the function budget)"},
	} {
		f := &report.Function{}
		judge(f, c.rungs, nil, nil)
		if f.Verdict != VerdictLook || !strings.HasPrefix(f.Reason, c.says) {
			t.Errorf("%s: %q, want it to start %q", f.Verdict, f.Reason, c.says)
		}
		r := f.Rungs
		if sum := r.Answered + r.Raised + r.Excluded + r.TimedOut + r.Crashed + r.Budget + r.Skipped + r.Uncalled; sum != r.Total {
			t.Errorf("%q: the counts add up to %d of %d rungs", f.Reason, sum, r.Total)
		}
	}
}
