package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// TestJudgeReplay: a replay tells a fix (the runs agree: exit 0) from a
// finding that stands (the recorded answers, or two others: exit 1) and
// from a run with no answer (exit 3); the same for a breaker's witness.
func TestJudgeReplay(t *testing.T) {
	cross := &report.Witness{Answers: []report.Answer{{Run: 0, Value: "V:1"}, {Run: 1, Value: "V:2"}}}
	repeat := &report.Witness{Breaker: engine.BreakerRepeat, Answers: []report.Answer{{Run: 0, Value: "V:1"}, {Run: 0, Value: "V:2"}}}
	run := func(id int, v string) engine.Replayed {
		return engine.Replayed{Run: sandbox.RunConditions{ID: id}, Value: v, Detail: "timed out"}
	}
	twice := func(v, v2 string) engine.Replayed {
		r := run(0, v)
		if v2 != "" {
			r.Breaker, r.Value2 = engine.BreakerRepeat, v2
		}
		return r
	}
	for _, c := range []struct {
		name string
		w    *report.Witness
		got  []engine.Replayed
		says string
		want error
	}{
		{"the same two", cross, []engine.Replayed{run(0, "V:1"), run(1, "V:2")}, "reproduced", errFindings},
		{"two others", cross, []engine.Replayed{run(0, "V:7"), run(1, "V:8")}, "still nondeterministic", errFindings},
		{"agree", cross, []engine.Replayed{run(0, "V:1"), run(1, "V:1")}, "fixed: the two runs now agree (V:1)", nil},
		{"no answer", cross, []engine.Replayed{run(0, "V:1"), run(1, "")}, "not judged: run 1 gave no answer (timed out)", errUnjudged},
		{"repeat again", repeat, []engine.Replayed{twice("V:1", "V:2")}, "reproduced", errFindings},
		{"repeat, others", repeat, []engine.Replayed{twice("V:5", "V:6")}, "still nondeterministic", errFindings},
		{"repeat fixed", repeat, []engine.Replayed{twice("V:1", "")}, "fixed", nil},
	} {
		says, err := judgeReplay(c.w, c.got)
		if !strings.HasPrefix(says, c.says) || !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, says, err, c.says, c.want)
		}
	}
}
