package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/gate"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// attribution is the plan that names what moved a group of findings whose
// witnesses compare the same two runs.
type attribution struct {
	base, other int
	runs        []sandbox.RunConditions // control pair first, then one flip each
	probes      []*probe
}

// attribute names the cause of every cross-run finding, exactly: for the
// functions found nondeterministic, and only for them, it runs the base
// conditions three times (controls: if any two disagree, the process
// itself moves the answer: a clock, an RNG, an address) and then once per
// condition that differs between the witness's two runs, with that one
// condition taken from the other run, and once under all of the other
// run's conditions (which tells conditions acting together from state
// other functions left behind when no single flip moves it). A condition
// whose flip alone moves the witness rung's answer is a cause. reprotest
// bisects greedily; this is exact, at one interpreter per condition, only
// when there is a finding.
//
// Each run calls only the findings, each up to its witness rung, a child
// per module. A finding alone in its module there ran alone (a child that
// imported only its module and called only it), so these runs confirm it
// too: two answers among them, or its repeat breaker firing, and confirm
// need not run it. The rest are returned for confirm: those that shared
// their module's child, and those whose runs all agreed (with the clock
// pinned, a clock of one-second resolution agrees with itself: confirm
// runs them under the runs' own clocks, in both of its rounds).
//
// Naming causes is an explanation, never the verdict: a finding whose
// flips would take past Options.ExplainBudget (its calls up to the witness rung
// took that long in the main runs) runs only the base and its controls,
// which tell the process moving it from a condition, and its cause is
// otherwise unattributed (budget).
//
// The plan (planAttribution) and the naming (nameCauses) are functions of
// data; this runs the plan's interpreters between them.
func (s *scan) attribute(ctx context.Context, probes []*probe, main *results, ladder ladders) (pending []*probe) {
	groups := planAttribution(probes, s.runs)
	// Every group's runs share one pool, so no core idles at a group's end.
	var tasks []task
	results := make([]*results, len(groups))
	over := map[int]time.Duration{} // finding -> its flips' cost, past the budget
	budget := s.ex.opts.ExplainBudget
	for i, g := range groups {
		var full, cut []*probe
		for _, p := range g.probes {
			if c := runCost(main, p) * time.Duration(len(g.runs)-firstFlip); budget > 0 && c > budget {
				over[p.Index] = c
				cut = append(cut, p)
			} else {
				full = append(full, p)
			}
		}
		results[i] = s.ex.newRunResults(nil, 0, ladder)
		tasks = append(tasks, s.attributionTasks(full, g.runs, results[i])...)
		tasks = append(tasks, s.attributionTasks(cut, g.runs[:firstFlip], results[i])...)
	}
	s.ex.runPool(ctx, tasks)
	if ctx.Err() != nil {
		return nil
	}
	named := make([][]namedCauses, len(groups))
	for i, g := range groups {
		res := results[i]
		for _, p := range g.probes {
			res.importAnswers(p)
			outs := res.calls[p.Index][p.fn.Witness.Rung]
			n := namedCauses{outs: outs}
			if c, cut := over[p.Index]; cut {
				n.causes, n.note = nameCauses(g.runs[:firstFlip], outs[:firstFlip], firstOf(res.shardError[p.Index]))
				if canonical(outs[0]) {
					// Whatever the base runs named, the flips were not
					// made: the report says so.
					n.note = fmt.Sprintf("its conditions were not flipped one by one (budget): its calls up to the witness rung take about %s a run, so that would take about %s, past the %s one finding's causes may take",
						(c / time.Duration(len(g.runs)-firstFlip)).Round(time.Millisecond), c.Round(time.Second), budget)
					if n.causes[0] == "process" {
						n.note = "the base conditions alone moved it; " + n.note
					}
				}
			} else {
				n.causes, n.note = nameCauses(g.runs, outs, firstOf(res.shardError[p.Index]))
			}
			named[i] = append(named[i], n)
		}
	}
	for round := 0; round < flipRounds && ctx.Err() == nil; round++ {
		s.flipAgain(ctx, groups, named, ladder)
	}
	if ctx.Err() != nil {
		return nil
	}
	for i, g := range groups {
		res := results[i]
		inModule := map[int]int{}
		for _, p := range g.probes {
			inModule[p.Module]++
		}
		for j, p := range g.probes {
			f, n := p.fn, named[i][j]
			causes, note := clockCause(f.Smells, n.causes, n.note)
			if note != "" {
				f.CauseNote = note
				f.Reason += "; " + note
			}
			f.Causes = mergeCauses(causes, f.Causes)
			repeat := slices.Contains(breakersOf(res.calls[p.Index]), BreakerRepeat)
			if inModule[p.Module] > 1 || !canonical(n.outs[0]) || agreeAlone(n.outs, repeat) {
				pending = append(pending, p)
			}
		}
	}
	return pending
}

// namedCauses is what the first round of attribution named for one
// finding, and its witness rung's answers there.
type namedCauses struct {
	causes []string
	note   string
	outs   []outcome
}

// attributionTasks are the interpreters that call probes, each up to its
// witness rung, under runs.
func (s *scan) attributionTasks(probes []*probe, runs []sandbox.RunConditions, res *results) []task {
	if len(probes) == 0 {
		return nil
	}
	shards := planShards(probes, s.ex.shardsFor(probes, func(p *probe) int { return p.fn.Witness.Rung + 1 }))
	for _, sh := range shards {
		sh.upTo = map[int]int{}
		for _, p := range sh.Probes {
			sh.upTo[p.Index] = p.fn.Witness.Rung
		}
	}
	res.makeRoom(shards, len(runs))
	return s.ex.tasks(shards, runs, res)
}

// flipRounds is how many more times a flip time could have moved is run:
// under load a slow start can tick a one-second clock in two rounds in a
// row (a seed of the stability test named a second cause so), seldom in
// three.
const flipRounds = 2

// flipAgain runs once more, for the findings a flip moved, every flip
// that moved one of its group's findings, and keeps a cause only where its
// flip moved the answer to the same place again (the base's three runs
// agreed already). A clock of one-second resolution ticks during
// a flip that happens to run slower: the flip moved it once, by chance,
// and a condition is named only when it moves the answer each time.
func (s *scan) flipAgain(ctx context.Context, groups []*attribution, named [][]namedCauses, ladder ladders) {
	var tasks []task
	type again struct {
		probes []*probe
		slots  []int // of the group's runs, the flips run again
		res    *results
	}
	agains := make([]*again, len(groups))
	for i, g := range groups {
		a := &again{}
		moved := map[int]bool{}
		for j, p := range g.probes {
			slots := tickable(g.runs, named[i][j], p.fn.Smells)
			if len(slots) == 0 {
				continue
			}
			a.probes = append(a.probes, p)
			for _, slot := range slots {
				moved[slot] = true
			}
		}
		if len(a.probes) == 0 {
			continue
		}
		for slot := firstFlip; slot < len(g.runs); slot++ {
			if moved[slot] {
				a.slots = append(a.slots, slot)
			}
		}
		runs := make([]sandbox.RunConditions, len(a.slots))
		for k, slot := range a.slots {
			runs[k] = g.runs[slot]
		}
		a.res = s.ex.newRunResults(nil, 0, ladder)
		tasks = append(tasks, s.attributionTasks(a.probes, runs, a.res)...)
		agains[i] = a
	}
	if len(tasks) == 0 {
		return
	}
	s.ex.runPool(ctx, tasks)
	if ctx.Err() != nil {
		return
	}
	for i, g := range groups {
		a := agains[i]
		if a == nil {
			continue
		}
		for j, p := range g.probes {
			if !slices.Contains(a.probes, p) {
				continue
			}
			a.res.importAnswers(p)
			outs := a.res.calls[p.Index][p.fn.Witness.Rung]
			second := map[int]outcome{}
			for k, slot := range a.slots {
				second[slot] = outs[k]
			}
			n := &named[i][j]
			n.causes, n.note = steadyCauses(g.runs, n, second)
		}
	}
}

// flipSlots are the slots of runs whose flip moved a finding's answer
// and named a condition.
func flipSlots(runs []sandbox.RunConditions, n namedCauses) []int {
	var slots []int
	for slot := firstFlip; slot < len(runs) && slot < len(n.outs); slot++ {
		if name := string(runs[slot].Flip); name != "" && slices.Contains(n.causes, name) {
			slots = append(slots, slot)
		}
	}
	return slots
}

// tickable are the flips of a finding's causes that time alone could
// have moved, the ones flipAgain runs again: where the clock may move its
// answer (the clock's flip moved it, its body reads a clock, or the two
// runs had one clock, so no flip ruled time out), every flip that named a
// condition but the clock's own. Where the clock's flip left it alone,
// time does not move it, and no flip moved it by chance.
func tickable(runs []sandbox.RunConditions, n namedCauses, smells []gate.Smell) []int {
	clockSlot := slices.IndexFunc(runs, func(r sandbox.RunConditions) bool { return r.Flip == sandbox.Clock })
	timed := clockSlot < 0 || slices.Contains(n.causes, string(sandbox.Clock)) ||
		slices.ContainsFunc(smells, func(sm gate.Smell) bool { return sm.Kind == "clock" })
	if !timed {
		return nil
	}
	return slices.DeleteFunc(flipSlots(runs, n), func(slot int) bool { return slot == clockSlot })
}

// steadyCauses keeps of a finding's causes those whose flip, run again,
// answered as it did the first time (second holds the second round's
// answers by slot): a flip that moved the answer elsewhere, or not at
// all, is no cause.
func steadyCauses(runs []sandbox.RunConditions, n *namedCauses, second map[int]outcome) ([]string, string) {
	var causes, chance []string
	for _, slot := range flipSlots(runs, *n) {
		name := string(runs[slot].Flip)
		if o := second[slot]; !canonical(o) || o.value == n.outs[slot].value {
			causes = append(causes, name) // no answer the second time: the first stands
		} else {
			chance = append(chance, name)
		}
	}
	if len(causes) > 0 {
		return causes, ""
	}
	return []string{"unattributed"}, fmt.Sprintf("a flip of %s moved it once but not again: it moves only now and then", strings.Join(chance, ", "))
}

// runCost is what one run of a finding's calls up to its witness rung
// took in the slower of its witness's two main runs.
func runCost(main *results, p *probe) time.Duration {
	w := p.fn.Witness
	var cost [2]time.Duration
	for rung := 0; rung <= w.Rung && rung < len(main.calls[p.Index]); rung++ {
		for i, a := range w.Answers[:2] {
			if run := a.Run; run >= 0 && run < len(main.calls[p.Index][rung]) {
				cost[i] += time.Duration(main.calls[p.Index][rung][run].took) * time.Microsecond
			}
		}
	}
	return max(cost[0], cost[1])
}

// agreeAlone says whether a finding's runs alone failed to reproduce it:
// the base answered, and every run that answered answered as it did,
// without the repeat breaker firing.
func agreeAlone(outs []outcome, repeat bool) bool {
	if repeat || len(outs) == 0 || !canonical(outs[0]) {
		return false
	}
	for _, o := range outs[1:] {
		if canonical(o) && o.value != outs[0].value {
			return false
		}
	}
	return true
}

// apart says how many varied conditions runs a and b of the scan differ
// in.
func (s *scan) apart(a, b int) int {
	n := 0
	for _, c := range sandbox.Varieds {
		if !c.Same(s.runs[a], s.runs[b]) {
			n++
		}
	}
	return n
}

// planAttribution groups the cross-run findings by the two runs their
// witnesses compare and plans each group's runs: the base, two controls,
// all of the other run's conditions, then one flip per condition the two
// runs differ in. The clock starts at one instant in every attribution run.
func planAttribution(probes []*probe, runs []sandbox.RunConditions) []*attribution {
	keys, groups := byWitnessRuns(probes)
	out := make([]*attribution, 0, len(keys))
	for _, key := range keys {
		g := &attribution{base: key[0], other: key[1], probes: groups[key]}
		out = append(out, g)
		base, other := runs[key[0]], runs[key[1]]
		if base.Clock != "" {
			base.Clock, other.Clock = sandbox.PinnedClock+base.Clock, sandbox.PinnedClock+other.Clock
		}
		ctrl, ctrl2 := base, base
		base.ID, base.Purpose = -1, sandbox.PurposeBase
		ctrl.ID, ctrl.Purpose = -1, sandbox.PurposeControl
		ctrl2.ID, ctrl2.Purpose = -1, sandbox.PurposeControl
		g.runs = append(g.runs, base, ctrl, ctrl2)
		var flips []sandbox.RunConditions
		for _, c := range sandbox.Varieds {
			if c.Same(base, other) {
				continue
			}
			flip := base
			flip.Purpose, flip.Flip = sandbox.PurposeFlip, c.Name
			c.Take(&flip, other)
			flips = append(flips, flip)
		}
		if len(flips) != 1 {
			// The other run's conditions all at once, to tell conditions
			// acting together from the calls before it; with one
			// condition apart, its flip is that run.
			all := other
			all.ID, all.Purpose = -1, sandbox.PurposeAll
			g.runs = append(g.runs, all)
		}
		g.runs = append(g.runs, flips...)
	}
	return out
}

// byWitnessRuns groups the cross-run findings among probes by the two runs
// their witnesses compare, keys in the order first seen: a group shares
// its confirmation and attribution interpreters.
func byWitnessRuns(probes []*probe) (keys [][2]int, groups map[[2]int][]*probe) {
	groups = map[[2]int][]*probe{}
	for _, p := range probes {
		w := p.fn.Witness
		if p.fn.Verdict != VerdictNondeterministic || w == nil || w.Breaker != "" {
			continue
		}
		key := [2]int{w.Answers[0].Run, w.Answers[1].Run}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], p)
	}
	return keys, groups
}

// An attribution group's runs: the base, two controls, all of the other
// run's conditions (unless one condition differs), then one flip per
// differing condition.
const firstFlip = 3

// nameCauses names what moved a witness rung from its answers in a
// group's runs (outs[i] under runs[i]); note, when set, says why no cause
// could be named. failed is why the sandbox could not run them, or "".
func nameCauses(runs []sandbox.RunConditions, outs []outcome, failed string) (causes []string, note string) {
	base, ctrl, ctrl2 := outs[0], outs[1], outs[2]
	switch {
	case !canonical(base) || !canonical(ctrl) || !canonical(ctrl2):
		why := "the witness rung gave no canonical answer in the attribution runs"
		if failed != "" {
			why = "the sandbox could not run them: " + failed
		}
		return []string{"unattributed"}, "its cause could not be named: " + why
	case base.value != ctrl.value || base.value != ctrl2.value:
		return []string{"process"}, ""
	}
	allSlot := -1
	for slot := firstFlip; slot < len(runs); slot++ {
		if runs[slot].Purpose == sandbox.PurposeAll {
			allSlot = slot
			continue
		}
		if o := outs[slot]; canonical(o) && o.value != base.value {
			causes = append(causes, string(runs[slot].Flip))
		}
	}
	if len(causes) > 0 {
		return causes, ""
	}
	if allSlot < 0 {
		allSlot = len(runs) - 1 // the one flip is the other run
	}
	if all := outs[allSlot]; allSlot >= firstFlip && canonical(all) && all.value != base.value {
		return []string{"unattributed"}, "no single varied condition moved it alone; the other run's conditions together did"
	}
	return []string{"unattributed"}, "no varied condition moved it when the findings were run again, alone or together: it moves only now and then"
}

// clockCause names the clock where attribution could name no single
// condition (process: the base conditions disagreed with themselves;
// unattributed: it moved now and then) and the function's body reads a
// clock and no other source a process moves by itself: a clock moves
// between any two runs, pinned or not, so whether attribution caught it
// moving is chance, and the cause must not be.
func clockCause(smells []gate.Smell, causes []string, note string) ([]string, string) {
	if len(causes) != 1 || causes[0] != "process" && causes[0] != "unattributed" {
		return causes, note
	}
	var clock *gate.Smell
	for i, sm := range smells {
		switch sm.Kind {
		case "clock":
			if clock == nil {
				clock = &smells[i]
			}
		case "rng", "urandom", "uuid", "secrets", "id":
			return causes, note
		}
	}
	if clock == nil {
		return causes, note
	}
	return []string{string(sandbox.Clock)}, fmt.Sprintf("it reads the clock (%s, line %d), which moves between any two runs", clock.Call, clock.Line)
}

func canonical(o outcome) bool { return o.kind == answered || o.kind == raisedK }

// mergeCauses keeps attribution's causes first, then the in-process
// breakers already named.
func mergeCauses(first, rest []string) []string {
	out := append([]string{}, first...)
	for _, c := range rest {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// breakersOf lists the in-process breakers any call of a function tripped.
// firings is how many calls' breaker b fired on.
func firings(rungs [][]outcome, b string) int {
	n := 0
	for _, runs := range rungs {
		for _, o := range runs {
			if o.breaker == b {
				n++
			}
		}
	}
	return n
}

func breakersOf(rungs [][]outcome) []string {
	seen := map[string]bool{}
	for _, runs := range rungs {
		for _, o := range runs {
			if o.breaker != "" {
				seen[o.breaker] = true
			}
		}
	}
	var out []string
	for b := range seen {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}
