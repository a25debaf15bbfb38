package engine

import (
	"slices"
	"testing"
	"time"
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
			moves := culprit >= 0 && slices.Contains(b.trying(), culprit)
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

// TestBisectionLeavesSlowFunctionsOut: once a prefix moves the finding
// (the verdict's steps, which replay every function before it), naming the
// culprit replays the slow functions only when the fast ones alone do not
// move it; the culprit is named either way, and a fast one is found with
// no slow function replayed after the verdict's steps.
func TestBisectionLeavesSlowFunctionsOut(t *testing.T) {
	before := []int{10, 11, 12, 13, 14, 15, 16, 17}
	cost := map[int]time.Duration{}
	for _, f := range before {
		cost[f] = time.Millisecond
	}
	cost[11], cost[15] = 3*time.Second, slowReplay
	for _, culprit := range before {
		b := &bisection{before: before, cand: before, k: len(before), stage: 1, cost: cost}
		var slowSteps, steps int
		for {
			tried := b.trying()
			moves := slices.Contains(tried, culprit)
			if steps > 0 && (slices.Contains(tried, 11) || slices.Contains(tried, 15)) {
				slowSteps++
			}
			done, got := b.step(moves)
			if steps++; steps > 20 {
				t.Fatalf("culprit %d: no end after %d steps", culprit, steps)
			}
			if done {
				if got != culprit {
					t.Errorf("culprit %d: named %d", culprit, got)
				}
				break
			}
		}
		if slow := culprit == 11 || culprit == 15; !slow && slowSteps > 0 {
			t.Errorf("culprit %d: a slow function was replayed in %d steps after the verdict's", culprit, slowSteps)
		} else if slow && slowSteps == 0 {
			t.Errorf("culprit %d: the slow culprit was never replayed", culprit)
		}
	}
}
