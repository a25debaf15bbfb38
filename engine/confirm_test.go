package engine

import (
	"slices"
	"testing"
)

// TestJudgeAlone: a finding is reproduced alone by two answers under its
// two runs' conditions, by its repeat breaker, or by an answer that moved
// from one round to the next; lone runs that agree are tried again; lone
// runs with no canonical answer leave the finding unconfirmed.
func TestJudgeAlone(t *testing.T) {
	v := func(s string) outcome { return outcome{kind: answered, value: "V:" + s} }
	for _, c := range []struct {
		name   string
		a, b   outcome
		repeat bool
		prev   string
		seen   bool
		want   aloneVerdict
	}{
		{"two answers", v("1"), v("2"), false, "", false, aloneReproduced},
		{"an exception and an answer", outcome{kind: raisedK, value: "E:KeyError"}, v("2"), false, "", false, aloneReproduced},
		{"agree", v("1"), v("1"), false, "", false, aloneAgree},
		{"agree, repeat fired", v("1"), v("1"), true, "", false, aloneReproduced},
		{"agree again", v("1"), v("1"), false, "V:1", true, aloneAgree},
		{"agree, but not with the last round", v("1"), v("1"), false, "V:0", true, aloneReproduced},
		{"timed out", outcome{kind: timedOut}, v("1"), false, "", false, aloneUnanswered},
		{"no canonical form", v("1"), outcome{kind: excluded}, true, "", false, aloneUnanswered},
		{"not run", outcome{}, outcome{}, false, "", false, aloneUnanswered},
	} {
		if got := judgeAlone(c.a, c.b, c.repeat, c.prev, c.seen); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBisectionStep: the search names the one function whose calls move
// the finding, trying its own module's functions first, then every one
// before it, halving the prefix; it names none when no prefix moves it.
func TestBisectionStep(t *testing.T) {
	before := []int{10, 11, 12, 13, 14, 15, 16}
	same := []int{11, 14}
	for _, culprit := range append(before, -1) {
		b := &bisection{before: before, same: same, cand: same, k: len(same)}
		if len(same) == 0 {
			b.cand, b.k, b.stage = before, len(before), 1
		}
		steps := 0
		for {
			// The calls of cand[:k] move it when they hold the culprit.
			moves := culprit >= 0 && slices.Contains(b.cand[:b.k], culprit)
			done, got := b.step(moves)
			steps++
			if steps > 20 {
				t.Fatalf("culprit %d: no end after %d steps", culprit, steps)
			}
			if done {
				if got != culprit {
					t.Errorf("culprit %d: named %d", culprit, got)
				}
				break
			}
		}
	}
}
