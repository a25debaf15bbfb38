package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/gate"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// finding is a cross-run finding whose witness compares runs a and b.
func finding(index, a, b int) *probe {
	return &probe{Index: index, fn: &report.Function{Verdict: VerdictNondeterministic,
		Witness: &report.Witness{Answers: []report.Answer{{Run: a, Value: "V:1"}, {Run: b, Value: "V:2"}}}}}
}

// TestAttributionPlan: findings are grouped by the two runs their
// witnesses compare; each group runs the base three times, the other run
// whole, then one flip per condition the two runs differ in, each taking
// that condition alone from the other run, with the clock pinned. In-process
// findings and other verdicts are not attributed.
func TestAttributionPlan(t *testing.T) {
	runs := planRuns(5, 3, 0, locales{names: []string{"C.UTF-8", sandbox.SecondLocale}}, true, true)
	repeat := finding(3, 0, 0)
	repeat.fn.Witness.Breaker = BreakerRepeat
	det := &probe{Index: 4, fn: &report.Function{Verdict: VerdictDeterministic}}
	groups := planAttribution([]*probe{finding(0, 0, 1), finding(1, 0, 2), finding(2, 0, 1), repeat, det}, runs)
	if len(groups) != 2 || len(groups[0].probes) != 2 || len(groups[1].probes) != 1 {
		t.Fatalf("want groups (0,1) with two findings and (0,2) with one, got %d groups", len(groups))
	}
	g := groups[0]
	base, other := runs[0], runs[1]
	purposes := []string{}
	for _, r := range g.runs {
		purposes = append(purposes, runLabel(r))
		if r.ID != -1 {
			t.Errorf("%s: an attribution run is numbered %d", runLabel(r), r.ID)
		}
		if r.Clock != "" && !strings.HasPrefix(r.Clock, sandbox.PinnedClock) {
			t.Errorf("%s: clock %q is not pinned", runLabel(r), r.Clock)
		}
	}
	if !slices.Equal(purposes[:firstFlip+1], []string{"attribute-base", "attribute-control", "attribute-control", "attribute-all"}) {
		t.Fatalf("the group starts %v", purposes[:firstFlip+1])
	}
	var flipped []string
	for _, r := range g.runs[firstFlip+1:] {
		name := string(r.Flip)
		flipped = append(flipped, name)
		v, ok := sandbox.VariedCondition(sandbox.Condition(name))
		if !ok {
			t.Fatalf("a flip of %q, which is no condition", name)
		}
		// The flip takes this condition from the other run and keeps every
		// other one at the base's (the clock compared unpinned).
		r.Clock = strings.TrimPrefix(r.Clock, sandbox.PinnedClock)
		for _, c := range sandbox.Varieds {
			from := base
			if c.Name == v.Name {
				from = other
			}
			if !c.Same(r, from) {
				t.Errorf("flip %s: %s is %q, want %q", name, c.Name, c.Show(r), c.Show(from))
			}
		}
	}
	var differ []string
	for _, c := range sandbox.Varieds {
		if !c.Same(base, other) {
			differ = append(differ, string(c.Name))
		}
	}
	if !slices.Equal(flipped, differ) {
		t.Errorf("flips %v, want one per differing condition %v", flipped, differ)
	}
	// Two runs apart in the hash seed alone (a smell run and its main
	// run): the base, two controls and the one flip, which is the other
	// run; no run of all the other's conditions besides it.
	runs = planRuns(5, 3, 2, locales{names: []string{"C.UTF-8", sandbox.SecondLocale}}, true, true)
	groups = planAttribution([]*probe{finding(0, 0, 3)}, runs)
	purposes = purposes[:0]
	for _, r := range groups[0].runs {
		purposes = append(purposes, runLabel(r))
	}
	if !slices.Equal(purposes, []string{"attribute-base", "attribute-control", "attribute-control", "attribute-flip-hash-seed"}) {
		t.Errorf("a pair apart in the hash seed alone: runs %v", purposes)
	}
}

// TestWitnessComparesTheClosestRuns: of the pairs of runs that disagree
// on a rung, the witness compares the two apart in the fewest conditions,
// the first in run order among equals.
func TestWitnessComparesTheClosestRuns(t *testing.T) {
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	apart := func(a, b int) int { // runs 0-2 are main runs, 3 and 4 run 0's with another seed
		if a == 0 && b >= 3 || a >= 3 && b >= 3 {
			return 1
		}
		return 9
	}
	for _, c := range []struct {
		outs []outcome
		want [2]int
	}{
		{[]outcome{v("a"), v("b"), v("a"), v("c"), v("a")}, [2]int{0, 3}},
		{[]outcome{v("a"), v("b"), v("a"), v("a"), v("a")}, [2]int{0, 1}},
		{[]outcome{v("a"), v("a"), v("a"), v("a"), v("b")}, [2]int{0, 4}},
		{[]outcome{{kind: timedOut}, v("a"), v("b"), v("c"), v("d")}, [2]int{3, 4}},
	} {
		w := disagreement(0, c.outs, nil, apart)
		if w == nil || [2]int{w.Answers[0].Run, w.Answers[1].Run} != c.want {
			t.Errorf("%v: witness %+v, want runs %v", c.outs, w, c.want)
		}
	}
	if w := disagreement(0, []outcome{v("a"), v("b"), v("a"), v("c")}, nil, nil); w == nil || w.Answers[1].Run != 1 {
		t.Errorf("without distances the first pair in run order: %+v", w)
	}
}

// TestNameCauses: a cause is a condition whose flip alone moves the
// answer; controls that disagree are the process; no canonical answer, or
// no flip that moves it, is unattributed with a note that says which.
func TestNameCauses(t *testing.T) {
	runs := []sandbox.RunConditions{{Purpose: sandbox.PurposeBase}, {Purpose: sandbox.PurposeControl}, {Purpose: sandbox.PurposeControl},
		{Purpose: sandbox.PurposeAll}, {Purpose: sandbox.PurposeFlip, Flip: "timezone"}, {Purpose: sandbox.PurposeFlip, Flip: "locale"}}
	one := runs[:3:3]
	one = append(one, sandbox.RunConditions{Purpose: sandbox.PurposeFlip, Flip: "hash-seed"})
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	for _, c := range []struct {
		name   string
		outs   []outcome
		failed string
		causes []string
		note   string
	}{
		{"one flip", []outcome{v("a"), v("a"), v("a"), v("b"), v("b"), v("a")}, "", []string{"timezone"}, ""},
		{"two flips", []outcome{v("a"), v("a"), v("a"), v("b"), v("b"), v("c")}, "", []string{"timezone", "locale"}, ""},
		{"controls disagree", []outcome{v("a"), v("b"), v("a"), v("b"), v("b"), v("a")}, "", []string{"process"}, ""},
		{"together", []outcome{v("a"), v("a"), v("a"), v("b"), v("a"), v("a")}, "", []string{"unattributed"}, "together did"},
		{"now and then", []outcome{v("a"), v("a"), v("a"), v("a"), v("a"), v("a")}, "", []string{"unattributed"}, "only now and then"},
		{"a flip with no answer", []outcome{v("a"), v("a"), v("a"), v("b"), {kind: timedOut}, v("b")}, "", []string{"locale"}, ""},
		{"no answer", []outcome{{kind: crashed}, v("a"), v("a"), v("b"), v("b"), v("a")}, "", []string{"unattributed"}, "no canonical answer"},
		{"sandbox failed", []outcome{{kind: notRun}, {kind: notRun}, {kind: notRun}, {}, {}, {}}, "no image", []string{"unattributed"}, "could not run them: no image"},
	} {
		causes, note := nameCauses(runs, c.outs, c.failed)
		if !slices.Equal(causes, c.causes) || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("%s: causes %v, note %q; want %v, a note saying %q", c.name, causes, note, c.causes, c.note)
		}
	}
	// One condition apart: its flip is the other run.
	if causes, _ := nameCauses(one, []outcome{v("a"), v("a"), v("a"), v("b")}, ""); !slices.Equal(causes, []string{"hash-seed"}) {
		t.Errorf("one flip that moves: causes %v", causes)
	}
	if causes, note := nameCauses(one, []outcome{v("a"), v("a"), v("a"), v("a")}, ""); !slices.Equal(causes, []string{"unattributed"}) || !strings.Contains(note, "only now and then") {
		t.Errorf("one flip that does not move: causes %v, note %q", causes, note)
	}
}

// TestAgreeAlone: attribution's lone runs confirm a finding when two of
// them answered differently or the repeat breaker fired; only when the
// base answered and every answer was its answer does it go to confirm
// again.
func TestAgreeAlone(t *testing.T) {
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	for _, c := range []struct {
		name   string
		outs   []outcome
		repeat bool
		agree  bool
	}{
		{"all alike", []outcome{v("a"), v("a"), v("a"), v("a")}, false, true},
		{"a flip moves it", []outcome{v("a"), v("a"), v("a"), v("b")}, false, false},
		{"controls disagree", []outcome{v("a"), v("b"), v("a"), v("a")}, false, false},
		{"the repeat breaker fired", []outcome{v("a"), v("a"), v("a"), v("a")}, true, false},
		{"a raise against an answer", []outcome{v("a"), v("a"), v("a"), {kind: raisedK, value: "E:ValueError"}}, false, false},
		{"the rest did not answer", []outcome{v("a"), {kind: timedOut}, {kind: crashed}, v("a")}, false, true},
		{"no base answer", []outcome{{kind: crashed}, v("a"), v("a"), v("a")}, false, false},
		{"nothing ran", nil, false, false},
	} {
		if got := agreeAlone(c.outs, c.repeat); got != c.agree {
			t.Errorf("%s: agree %v, want %v", c.name, got, c.agree)
		}
	}
}

// TestSteadyCauses: a flip names its condition only when, run again, it
// moves the answer where it moved it the first time; a flip that moved it
// once (a clock that ticked during a slow run) is chance.
func TestSteadyCauses(t *testing.T) {
	runs := []sandbox.RunConditions{{Purpose: sandbox.PurposeBase}, {Purpose: sandbox.PurposeControl}, {Purpose: sandbox.PurposeControl},
		{Purpose: sandbox.PurposeAll}, {Purpose: sandbox.PurposeFlip, Flip: "timezone"}, {Purpose: sandbox.PurposeFlip, Flip: "hostname"}}
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	first := []outcome{v("a"), v("a"), v("a"), v("b"), v("b"), v("c")}
	for _, c := range []struct {
		name   string
		second map[int]outcome
		causes []string
		note   string
	}{
		{"both again", map[int]outcome{4: v("b"), 5: v("c")}, []string{"timezone", "hostname"}, ""},
		{"one by chance", map[int]outcome{4: v("b"), 5: v("a")}, []string{"timezone"}, ""},
		{"elsewhere again", map[int]outcome{4: v("b"), 5: v("d")}, []string{"timezone"}, ""},
		{"all by chance", map[int]outcome{4: v("a"), 5: v("a")}, []string{"unattributed"}, "timezone, hostname moved it once"},
		{"no answer again", map[int]outcome{4: {kind: timedOut}, 5: v("a")}, []string{"timezone"}, ""},
	} {
		n := namedCauses{causes: []string{"timezone", "hostname"}, outs: first}
		if got := flipSlots(runs, n); !slices.Equal(got, []int{4, 5}) {
			t.Fatalf("flip slots %v, want [4 5]", got)
		}
		causes, note := steadyCauses(runs, &n, c.second)
		if !slices.Equal(causes, c.causes) || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("%s: causes %v, note %q; want %v, a note saying %q", c.name, causes, note, c.causes, c.note)
		}
	}
}

// TestTickable: only a finding time could move has its flips run again,
// and never the clock's own flip.
func TestTickable(t *testing.T) {
	runs := []sandbox.RunConditions{{Purpose: sandbox.PurposeBase}, {Purpose: sandbox.PurposeControl}, {Purpose: sandbox.PurposeControl},
		{Purpose: sandbox.PurposeAll}, {Purpose: sandbox.PurposeFlip, Flip: "timezone"}, {Purpose: sandbox.PurposeFlip, Flip: "clock"}, {Purpose: sandbox.PurposeFlip, Flip: "hostname"}}
	clock := []gate.Smell{{Kind: "clock", Call: "time.time"}}
	for _, c := range []struct {
		name   string
		runs   []sandbox.RunConditions
		causes []string
		smells []gate.Smell
		want   []int
	}{
		{"the clock moved it too", runs, []string{"timezone", "clock", "hostname"}, nil, []int{4, 6}},
		{"it reads a clock", runs, []string{"timezone"}, clock, []int{4}},
		{"time left it alone", runs, []string{"timezone", "hostname"}, nil, nil},
		{"the clock alone", runs, []string{"clock"}, clock, nil},
		{"one clock in both runs", slices.Delete(slices.Clone(runs), 5, 6), []string{"hostname"}, nil, []int{5}},
	} {
		n := namedCauses{causes: c.causes, outs: make([]outcome, len(c.runs))}
		if got := tickable(c.runs, n, c.smells); !slices.Equal(got, c.want) {
			t.Errorf("%s: flips again %v, want %v", c.name, got, c.want)
		}
	}
}
