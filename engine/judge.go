package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// judgeAll turns outcomes into verdicts. A failure in some runs only (an
// import that fails under one run's conditions, a sandbox that could not
// start once) does not hide the other runs: an import that fails in one run
// is an answer of that run, and a disagreement like any other. runs says
// how many runs called each function.
func judgeAll(rep *report.Report, probes []*probe, res *results, ladder ladders, runs runCounts) {
	for i := range rep.Modules {
		// Modules are listed in files order, the same order probes use.
		for _, p := range probes {
			if rep.Modules[i].Path != p.File.Rel {
				continue
			}
			if fails := res.importErr[p.Module]; len(fails) > 0 {
				rep.Modules[i].Error = firstOf(fails)
				if len(fails) >= runs.of(p) {
					rep.Modules[i].Status = "import-failed"
				} else {
					rep.Modules[i].Error = fmt.Sprintf("import failed in %d of %d runs: %s", len(fails), runs.of(p), firstOf(fails))
				}
			}
			break
		}
	}
	for _, p := range probes {
		f := p.fn
		f.Contained = slices.Clone(res.events[p.Index])
		f.Runs = runs.of(p)
		if fails := res.shardError[p.Index]; len(fails) >= f.Runs {
			f.Verdict, f.Reason = VerdictNotProbed, "the sandbox could not run it: "+firstOf(fails)
			continue
		} else if len(fails) > 0 {
			for run, why := range fails {
				f.Contained = append(f.Contained, report.Event{Kind: "sandbox", Run: run, Detail: why})
			}
		}
		// Runs append their events as they happen, side by side: the
		// report lists them in one order whatever the timing.
		sort.SliceStable(f.Contained, func(i, j int) bool {
			a, b := f.Contained[i], f.Contained[j]
			return a.Run < b.Run || a.Run == b.Run && (a.Rung < b.Rung || a.Rung == b.Rung && a.Kind < b.Kind)
		})
		if fails := res.importErr[p.Module]; len(fails) >= f.Runs {
			f.Verdict, f.Reason = VerdictNotProbed, "import failed: "+firstOf(fails)
			continue
		}
		res.importAnswers(p)
		if why, ok := res.notCall[p.Index]; ok {
			f.Verdict, f.Reason = VerdictNotProbed, why
			continue
		}
		excludeMovedReceivers(p, res.calls[p.Index])
		judge(f, res.calls[p.Index], ladder[p.Ladder], runs.apart)
		if p.receivers == nil {
			continue
		}
		// A constructor that raised differently from run to run is a
		// finding of its own (its witness stands); one that always raised
		// the same leaves nothing judged.
		if raised := neverBuilt(res.calls[p.Index]); raised != "" && f.Witness == nil {
			f.Verdict, f.Witness, f.OrderSensitive = VerdictNotProbed, nil, nil
			f.Reason = fmt.Sprintf("its class %s never built: the constructor raised %s on every receiver the ladder tried", p.Class, raised)
			continue
		}
		for _, w := range []*report.Witness{f.Witness, f.OrderSensitive} {
			switch {
			case w != nil && p.TestCase:
				w.Receiver = p.Class + ", as its runner runs it: set up, the test, torn down"
			case w != nil && w.Rung < len(p.receivers):
				w.Receiver = receiverExpr(p.Class, p.callee(w.Rung), p.receivers[w.Rung])
			}
		}
	}
}

// excludeMovedReceivers excludes the rungs of a method whose receiver,
// built by another callee (Arrow.fromtimestamp(0), a factory, a
// subclass), was not the same instance in every run: one input, but what
// answered differently is the callee, which is probed on its own, not
// the method (Arrow.weekday is not moved by the timezone; the instance
// fromtimestamp built in it is).
func excludeMovedReceivers(p *probe, rungs [][]outcome) {
	for ri, runs := range rungs {
		first := ""
		for _, o := range runs {
			if o.receiver == "" {
				continue
			}
			if first == "" {
				first = o.receiver
			} else if o.receiver != first {
				why := fmt.Sprintf("its receiver %s was not the same instance in every run: what moved is %s's answer, not this method's",
					receiverExpr(p.Class, p.callee(ri), p.receiverArgs(ri)), cmp.Or(p.callee(ri), p.Class))
				for i := range runs {
					if canonical(runs[i]) {
						runs[i] = outcome{kind: excluded, detail: why}
					}
				}
				break
			}
		}
	}
}

// constructorSuffix marks an answer the constructor of a method's
// receiver gave: the method was never called.
const constructorSuffix = " (constructor)"

// neverBuilt names the exceptions the constructor raised when every
// canonical answer of a method came from its constructor, or "".
func neverBuilt(rungs [][]outcome) string {
	var names []string
	for _, runs := range rungs {
		for _, o := range runs {
			if !canonical(o) {
				continue
			}
			name, ok := strings.CutSuffix(o.value, constructorSuffix)
			if !ok {
				return ""
			}
			if name = strings.TrimPrefix(name, "E:"); !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// importAnswers makes a failed import the answer of every rung of the
// module's functions in the runs where it failed.
func (r *results) importAnswers(p *probe) {
	for run, why := range r.importErr[p.Module] {
		value := "E:" + strings.SplitN(why, ":", 2)[0] + " (on import)"
		for _, rung := range r.calls[p.Index] {
			if run < len(rung) {
				rung[run] = outcome{kind: raisedK, value: value}
			}
		}
	}
}

// runCounts are how many runs a scan made: the main ones, and all of them
// with the extra hash-seed runs of functions that smell.
type runCounts struct {
	main, all int
	// apart says how many conditions two runs differ in (nil: none do);
	// a witness compares the two runs that differ in the fewest.
	apart func(a, b int) int
}

// of is how many runs call p.
func (c runCounts) of(p *probe) int {
	if p.smelly {
		return c.all
	}
	return c.main
}

// judge compares one function's canonical answers across runs. A witness
// wins over every other rule: nothing that disagreed can become a look.
func judge(f *report.Function, rungs [][]outcome, ladder [][]string, apart func(a, b int) int) {
	c := report.RungCounts{Total: len(rungs)}
	for ri, runs := range rungs {
		if f.Witness == nil {
			f.Witness = disagreement(ri, runs, ladder, apart)
		}
		has := map[outcomeKind]bool{}
		reached := map[reach]bool{}
		for _, o := range runs {
			has[o.kind] = true
			reached[o.reach] = true
		}
		switch {
		case reached[reachYes]:
			c.Reached++
		case !reached[reachNo] && (has[answered] || has[raisedK]):
			c.Unmeasured++
		}
		switch {
		case has[answered]:
			c.Answered++
		case has[raisedK]:
			c.Raised++
		case has[excluded]:
			c.Excluded++
		case has[timedOut]:
			c.TimedOut++
		case has[crashed]:
			c.Crashed++
		case has[overBudget]:
			c.Budget++
		case has[skipped]:
			c.Skipped++
		default:
			c.Uncalled++
		}
	}
	f.Rungs = c
	if f.Witness == nil {
		f.Witness = inProcess(rungs, ladder, func(b string) bool { return b != BreakerDictOrder })
	}
	// Equal but different inputs answering differently is a fact about
	// the function's contract, not nondeterminism: reported beside the
	// verdict, never as it.
	f.OrderSensitive = inProcess(rungs, ladder, func(b string) bool { return b == BreakerDictOrder })
	f.Causes = []string{}
	for _, b := range breakersOf(rungs) {
		switch {
		case b == BreakerDictOrder:
		case b == BreakerRepeat && f.Witness != nil && f.Witness.Breaker == "" && firings(rungs, b) < 2:
			// Beside two runs' answers, one repeat among all the calls is
			// a one-second clock that ticked between a call and its
			// repeat, not state: hidden state moves every call it is in.
		default:
			f.Causes = append(f.Causes, b)
		}
	}
	if f.Witness != nil {
		f.Verdict = VerdictNondeterministic
		f.Reason = "a witness is a fact: this function gave two answers to one input"
		if f.Witness.OrderOnly {
			f.Reason += " (the same elements in a different order)"
		}
		return
	}
	contained := c.TimedOut + c.Crashed
	n := c.Total
	switch {
	case c.Answered > 0:
		f.Verdict = VerdictDeterministic
		var parts []string
		parts = append(parts, "no run disagreed; not a guarantee")
		parts = append(parts, fmt.Sprintf("raised on %d of %d rungs", c.Raised, n))
		if c.Excluded > 0 {
			parts = append(parts, fmt.Sprintf("%d with no canonical form", c.Excluded))
		}
		if contained > 0 {
			parts = append(parts, fmt.Sprintf("%d contained", contained))
		}
		if uncalled := n - c.Answered - c.Raised - c.Excluded - contained; uncalled > 0 {
			parts = append(parts, fmt.Sprintf("%d never called (%s)", uncalled, strings.Join(uncalledParts(c), ", ")))
		}
		f.Reason = strings.Join(parts, "; ")
	case c.Raised == n:
		f.Verdict = VerdictLook
		f.Stopped = stoppedBy(rungs)
		// The words before " (" group looks alike: what stopped them and
		// where; the counts follow.
		var what string
		switch most := mostlyWhere(f.Stopped); {
		case most.Where == "sandbox":
			what = "the sandbox stopped most calls: " + most.Sandbox
		case most.Where == "call":
			what = "the ladder's inputs never fit its signature"
		case most.Where == "wrapper":
			what = "a wrapper around it (a decorator) stopped every call before its body"
		case stopTypes(f.Stopped) == "TypeError":
			what = "the ladder reached this function's type errors and never its behaviour"
		default:
			what = "its body, or what it reads, stopped every call"
		}
		f.Reason = fmt.Sprintf("every rung raised %s — %s (%s; %d of %d rungs)", stopTypes(f.Stopped), what, describeStops(f.Stopped), n, n)
	case c.Excluded == n:
		f.Verdict = VerdictLook
		f.Reason = fmt.Sprintf("no answer had a canonical form (%d of %d rungs)", n, n)
	case contained > 0 && c.Raised == 0 && c.Excluded == 0:
		what := "timed out"
		switch {
		case c.Crashed > 0 && c.TimedOut > 0:
			what = "timed out or killed its interpreter"
		case c.Crashed > 0:
			what = "killed its interpreter"
		}
		f.Reason = fmt.Sprintf("every call it made %s and had to be contained; the rest of its rungs were not called (%d of %d rungs reached", what, contained, n)
		if rest := uncalledParts(c); len(rest) > 0 {
			f.Reason += "; " + strings.Join(rest, ", ")
		}
		f.Reason += ")"
		f.Verdict = VerdictLook
	default:
		f.Verdict = VerdictLook
		parts := []string{fmt.Sprintf("%d raised", c.Raised), fmt.Sprintf("%d had no canonical form", c.Excluded)}
		if contained > 0 {
			parts = append(parts, fmt.Sprintf("%d timed out", c.TimedOut), fmt.Sprintf("%d killed the interpreter", c.Crashed))
		}
		parts = append(parts, uncalledParts(c)...)
		f.Reason = fmt.Sprintf("no rung answered: %s (of %d rungs)", strings.Join(parts, ", "), n)
		if c.Raised > 0 {
			f.Stopped = stoppedBy(rungs)
			f.Reason += "; raised: " + describeStops(f.Stopped)
		}
	}
}

// uncalledParts says why the rungs never called were not: every rung of
// the ladder is in a reason, the ones left out too.
func uncalledParts(c report.RungCounts) []string {
	var parts []string
	if c.Budget > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped by the function budget", c.Budget))
	}
	if c.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d not called after an earlier call hung or crashed", c.Skipped))
	}
	if c.Uncalled > 0 {
		parts = append(parts, fmt.Sprintf("%d never called", c.Uncalled))
	}
	return parts
}

// stoppedBy counts, per exception type and where it was raised, the
// rungs whose first canonical outcome raised it, most first.
func stoppedBy(rungs [][]outcome) []report.Stop {
	count := map[report.Stop]int{}
	for _, runs := range rungs {
		for _, o := range runs {
			if o.kind == answered {
				break
			}
			if o.kind == raisedK {
				count[whereRaised(o)]++
				break
			}
		}
	}
	var out []report.Stop
	for s, n := range count {
		s.Rungs = n
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Rungs != b.Rungs {
			return a.Rungs > b.Rungs
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Where+a.Sandbox < b.Where+b.Sandbox
	})
	return out
}

// whereRaised is a raised outcome's type and where it was raised.
func whereRaised(o outcome) report.Stop {
	name := strings.TrimPrefix(o.value, "E:")
	if n, ok := strings.CutSuffix(name, constructorSuffix); ok {
		return report.Stop{Type: n, Where: "constructor"}
	}
	s := report.Stop{Type: name}
	switch {
	case o.sandbox != "":
		s.Where, s.Sandbox = "sandbox", o.sandbox
	case o.reach == reachYes:
		s.Where = "body"
	case o.reach == reachNo && s.Type == "TypeError":
		s.Where = "call"
	case o.reach == reachNo:
		// Not a binding error, yet the body never ran: a wrapper around
		// it raised (unittest.skip's SkipTest, a decorator's check).
		s.Where = "wrapper"
	}
	return s
}

// whereWords says where, for people.
func whereWords(s report.Stop) string {
	switch s.Where {
	case "call":
		return "binding the arguments"
	case "body":
		return "in the body"
	case "wrapper":
		return "by a wrapper, before the body"
	case "constructor":
		return "in the receiver's constructor"
	case "sandbox":
		return "by the sandbox: " + s.Sandbox
	}
	return ""
}

// mostlyWhere is where most of the rungs were stopped.
func mostlyWhere(stops []report.Stop) report.Stop {
	rungs := map[report.Stop]int{}
	var best report.Stop
	for _, s := range stops {
		key := report.Stop{Where: s.Where, Sandbox: s.Sandbox}
		rungs[key] += s.Rungs
		if rungs[key] > rungs[best] {
			best = key
		}
	}
	return best
}

// stopTypes names the exception types, three at most, without counts:
// the words that group looks alike.
func stopTypes(stops []report.Stop) string {
	var names []string
	for _, s := range stops {
		if slices.Contains(names, s.Type) {
			continue
		}
		if len(names) == 3 {
			names = append(names, "others")
			break
		}
		names = append(names, s.Type)
	}
	return strings.Join(names, ", ")
}

// describeStops names what stopped the rungs: "FileNotFoundError on 26
// by the sandbox: ..., TypeError on 7 binding the arguments", four at most.
func describeStops(stops []report.Stop) string {
	var parts []string
	for i, s := range stops {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more", len(stops)-4))
			break
		}
		part := fmt.Sprintf("%s on %d", s.Type, s.Rungs)
		if w := whereWords(s); w != "" {
			part += " " + w
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// inProcess returns a witness from an in-process breaker that want
// accepts: one process answered one rung two ways.
func inProcess(rungs [][]outcome, ladder [][]string, want func(breaker string) bool) *report.Witness {
	for ri, runs := range rungs {
		for run, o := range runs {
			if o.breaker == "" || !want(o.breaker) || (o.kind != answered && o.kind != raisedK) {
				continue
			}
			w := &report.Witness{Rung: ri, Args: []string{}, Breaker: o.breaker,
				Answers: []report.Answer{{Run: run, Value: o.value}, {Run: run, Value: o.value2}}}
			if ri < len(ladder) {
				w.Args = ladder[ri]
			}
			return w
		}
	}
	return nil
}

// disagreement returns a witness when two runs gave different canonical
// answers to one rung: of the pairs that did, the two runs that differ in
// the fewest conditions (apart; nil counts none), the first in run order
// among equals. Attribution then has the fewest conditions to flip (a pair
// apart in the hash seed alone needs one), and a seed still gives one
// report.
func disagreement(ri int, runs []outcome, ladder [][]string, apart func(a, b int) int) *report.Witness {
	best, bestApart := [2]int{-1, -1}, 0
	for i, a := range runs {
		if a.kind != answered && a.kind != raisedK {
			continue
		}
		for j := i + 1; j < len(runs); j++ {
			b := runs[j]
			if b.kind != answered && b.kind != raisedK || b.value == a.value {
				continue
			}
			d := 0
			if apart != nil {
				d = apart(i, j)
			}
			if best[0] < 0 || d < bestApart {
				best, bestApart = [2]int{i, j}, d
			}
		}
		if apart == nil && best[0] >= 0 {
			break
		}
	}
	if best[0] < 0 {
		return nil
	}
	a, b := runs[best[0]], runs[best[1]]
	w := &report.Witness{Rung: ri, Args: []string{}, Answers: []report.Answer{{Run: best[0], Value: a.value}, {Run: best[1], Value: b.value}}}
	if ri < len(ladder) {
		w.Args = ladder[ri]
	}
	fa, fb := a.free, b.free
	if fa == "" {
		fa = a.value
	}
	if fb == "" {
		fb = b.value
	}
	w.OrderOnly = fa == fb
	return w
}
