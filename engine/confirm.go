package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// confirmRounds is how many times a pair of lone runs is tried before a
// finding counts as not reproduced alone: an RNG with few outcomes can
// agree with itself once by chance.
const confirmRounds = 2

// confirm checks alone every cross-run finding attribution's runs did not
// confirm (pending): a fresh interpreter imports only the function's module
// and calls only that function, its own rungs in the witness run's order
// up to the witness rung, under each of the witness's two runs'
// conditions. A function moved by its own earlier calls (a counter, a
// cache) reproduces this way; one moved by what other functions left
// behind does not, and is then not nondeterministic if bisect names the
// function whose calls, replayed before it, give its witness answer
// again; otherwise the finding stands. When its repeat breaker fires in a lone run
// (alone, one input, two answers), that is confirmation too: an RNG whose
// two lone runs agree by chance.
func (s *scan) confirm(ctx context.Context, pending []*probe, main *results, ladder ladders) {
	alone := map[int]string{} // probe -> its one answer alone
	for round := 0; round < confirmRounds && len(pending) > 0; round++ {
		// The findings whose witnesses compare the same two runs share a
		// container per run: each function runs in a child of its own.
		keys, groups := byWitnessRuns(pending)
		tasks, res := s.loneTasks(keys, groups, sandbox.PurposeConfirm, false, ladder)
		s.ex.runPool(ctx, tasks)
		if ctx.Err() != nil {
			return
		}
		var again []*probe
		for _, key := range keys {
			r := res[key]
			for _, p := range groups[key] {
				r.importAnswers(p)
				outs := r.calls[p.Index][p.fn.Witness.Rung]
				repeat := slices.Contains(breakersOf(r.calls[p.Index]), BreakerRepeat)
				prev, seen := alone[p.Index]
				switch judgeAlone(outs[0], outs[1], repeat, prev, seen) {
				case aloneUnanswered:
					// The finding stands on the main runs, and says it was
					// not confirmed.
					why := "the witness rung gave no canonical answer alone"
					if fails := r.shardError[p.Index]; len(fails) > 0 {
						why = "the sandbox could not run it: " + firstOf(fails)
					}
					p.fn.Reason += "; it could not be confirmed alone: " + why
				case aloneAgree:
					alone[p.Index] = outs[0].value
					again = append(again, p)
				}
			}
		}
		pending = again
	}
	if len(pending) > 0 {
		s.bisect(ctx, pending, alone, main, ladder)
	}
}

// What a pair of lone runs says of a finding.
type aloneVerdict int

const (
	// aloneUnanswered: the lone runs could not answer (the sandbox failed,
	// the call crashed).
	aloneUnanswered aloneVerdict = iota
	// aloneReproduced: two answers alone, from the two runs' conditions,
	// from the repeat breaker, or from one round to the next under the same
	// conditions (the process itself moves it): a fact.
	aloneReproduced
	// aloneAgree: the lone runs agree: try again, or bisect.
	aloneAgree
)

// judgeAlone judges one round of a finding's lone runs: a and b are the
// witness rung's answers under the witness's two runs' conditions, repeat
// whether the repeat breaker fired, prev (when seen) the answer an earlier
// round gave alone.
func judgeAlone(a, b outcome, repeat bool, prev string, seen bool) aloneVerdict {
	switch {
	case !canonical(a) || !canonical(b):
		return aloneUnanswered
	case a.value != b.value, repeat, seen && prev != a.value:
		return aloneReproduced
	}
	return aloneAgree
}

// loneTasks are, for each pair of witness runs (keys), interpreters
// under each of the two runs' conditions that call each of the group's
// functions alone, up to its witness rung (traced, with trace), and where
// their outcomes go.
//
// A key whose second run is -1 names one run: a repeat's, whose two
// answers came from one interpreter.
func (s *scan) loneTasks(keys [][2]int, groups map[[2]int][]*probe, purpose sandbox.Purpose, trace bool, ladder ladders) ([]task, map[[2]int]*results) {
	var tasks []task
	res := map[[2]int]*results{}
	for _, key := range keys {
		var runs []sandbox.RunConditions
		for _, run := range key {
			if run < 0 {
				continue
			}
			rc := s.runs[run]
			rc.ID, rc.Purpose = -1, purpose
			runs = append(runs, rc)
		}
		shards := loneShards(groups[key], s.ex.opts.Jobs)
		for _, sh := range shards {
			switch {
			case trace && key[1] < 0:
				sh.trace = 2
			case trace:
				sh.trace = 1
			}
		}
		res[key] = s.ex.newRunResults(shards, len(runs), ladder)
		tasks = append(tasks, s.ex.tasks(shards, runs, res[key])...)
	}
	return tasks, res
}

// loneShards spreads functions over up to jobs lone shards, so a group's
// lone runs use every core.
func loneShards(ps []*probe, jobs int) []*shard {
	n := max(1, min(jobs, len(ps)))
	shards := make([]*shard, n)
	for i := range shards {
		shards[i] = &shard{ID: i, alone: true, upTo: map[int]int{}}
	}
	for i, p := range ps {
		sh := shards[i%n]
		sh.Probes = append(sh.Probes, p)
		sh.upTo[p.Index] = p.fn.Witness.Rung
	}
	return shards
}

// bisection searches the calls that ran before one function in its
// witness run for the function whose calls moved it.
type bisection struct {
	p      *probe
	run    int      // the witness run that was moved
	rung   int      // the witness rung
	moved  string   // what the function answered there
	alone  string   // what it answers alone
	order  [][2]int // the run's calls, as (probe index, rung)
	same   []int    // functions of its own module called before it
	before []int    // every function called before it, in order
	cand   []int    // the candidates being searched
	lo, hi int      // cand[:lo] does not move it, cand[:hi] does
	stage  int      // 0: own module's, 1: everyone's, 2: bisecting, 3: the fast ones alone
	k      int      // the prefix length being tried
	// cost is what each function's calls before it took in the run, as
	// the worker measured them: what replaying them costs a step.
	cost    map[int]time.Duration
	fast    []int // stage 3: the candidates tried without the slow ones
	culprit int   // once found, the culprit's probe index
}

// slowReplay is what a candidate's calls must take, in the run, to be
// left out of a first try at naming the culprit: replayed in every
// step of the halving, a function that walks every installed package or
// launches a browser was most of the scan's bisection time.
const slowReplay = 250 * time.Millisecond

// bisect names, for each function that did not reproduce alone, the
// function whose calls before it moved it: first among its own module's
// (where module-level state lives), then among every function the run
// called before it, by halving the prefix of calls that reproduces the
// moved answer. Each step is a lone run; every pending search's step of a
// round runs at once, the steps replaying one run sharing its containers.
//
// Only the calls since the run's last fresh interpreter count: a call
// that timed out or crashed ended its interpreter, and the state with it.
func (s *scan) bisect(ctx context.Context, pending []*probe, alone map[int]string, main *results, ladder ladders) {
	byIndex := map[int]*probe{}
	shardOf := map[int]*shard{}
	for _, sh := range s.mainShards {
		for _, p := range sh.Probes {
			byIndex[p.Index] = p
			shardOf[p.Index] = sh
		}
	}
	var active, moved []*bisection
	for _, p := range pending {
		w := p.fn.Witness
		b := &bisection{p: p, alone: alone[p.Index], run: -1, rung: w.Rung}
		for _, a := range w.Answers {
			if a.Value != b.alone {
				b.run, b.moved = a.Run, a.Value
				break
			}
		}
		sh := shardOf[p.Index]
		if b.run < 0 || sh == nil {
			s.stands(b, "no run of the witness answered otherwise than it does alone")
			continue
		}
		seen := sh.under(s.runs[b.run])
		if seen == nil {
			s.stands(b, "the calls before it in run %d are not known")
			continue
		}
		calls, _ := seen.callPlan(s.runs[b.run], ladder)
		for _, c := range calls {
			idx := seen.Probes[c[0]].Index
			switch main.calls[idx][c[1]][b.run].kind {
			case timedOut, crashed:
				// A fresh interpreter went on after it: nothing before
				// it can have moved what came after.
				b.order = b.order[:0]
				continue
			case notRun, skipped, overBudget:
				continue
			}
			b.order = append(b.order, [2]int{idx, c[1]})
			if idx == p.Index && c[1] == w.Rung {
				break // nothing after the witness call matters
			}
		}
		b.cost = map[int]time.Duration{}
		for _, c := range b.order {
			if c[0] == p.Index {
				break
			}
			b.cost[c[0]] += time.Duration(main.calls[c[0]][c[1]][b.run].took) * time.Microsecond
			if !slices.Contains(b.before, c[0]) {
				b.before = append(b.before, c[0])
				if byIndex[c[0]].Module == p.Module {
					b.same = append(b.same, c[0])
				}
			}
		}
		switch {
		case !slices.Contains(b.order, [2]int{p.Index, w.Rung}), len(b.before) == 0:
			s.stands(b, "nothing ran before it in run %d since its interpreter started")
			continue
		case len(b.same) > 0:
			b.cand, b.k = b.same, len(b.same)
		default:
			b.cand, b.k, b.stage = b.before, len(b.before), 1
		}
		active = append(active, b)
	}
	for len(active) > 0 && ctx.Err() == nil {
		// One step of every search per round; the steps replaying one run
		// share a container, each in a lone run (a child of its own).
		// The steps of one run spread over up to Jobs shards.
		byRun := map[int][]*shard{}
		var runsOrder []int
		target := make([]*probe, len(active)) // each step's copy of its function
		slot := make([]*shard, len(active))
		for i, b := range active {
			shs := byRun[b.run]
			if shs == nil {
				runsOrder = append(runsOrder, b.run)
			}
			if len(shs) < s.ex.opts.Jobs {
				shs = append(shs, &shard{ID: len(shs), calls: [][2]int{}})
				byRun[b.run] = shs
			}
			sh := shs[0]
			for _, c := range shs {
				if len(c.calls) < len(sh.calls) {
					sh = c
				}
			}
			slot[i] = sh
			target[i] = b.segment(sh, b.trying(), byIndex)
		}
		tasks, res := s.segmentTasks(byRun, runsOrder, sandbox.PurposeBisect, ladder)
		s.ex.runPool(ctx, tasks)
		if ctx.Err() != nil {
			return
		}
		var next []*bisection
		for i, b := range active {
			r := res[slot[i]]
			r.importAnswers(target[i])
			o := r.calls[target[i].Index][b.rung][0]
			// Moved means moved to what it answered in the witness run: a
			// function the process moves (a clock of one second) answers
			// anew in every step, and no replay makes it answer that again.
			moves := canonical(o) && o.value == b.moved
			done, culprit := b.step(moves)
			switch {
			case !done:
				next = append(next, b)
			case culprit < 0:
				s.stands(b, "replaying the calls before it in run %d did not give its answer there again")
			default:
				s.movedBy(b, byIndex[culprit].ID)
				byIndex[culprit].fn.AddMoves(b.p.ID)
				b.culprit = culprit
				moved = append(moved, b)
			}
		}
		active = next
	}
	s.divergeMoved(ctx, moved, byIndex, ladder)
}

// segmentTasks are the tasks that run each of runs' shards (byRun: lone
// segments replaying that run's calls) once under the run's conditions,
// for purpose, and where each shard's outcomes go.
func (s *scan) segmentTasks(byRun map[int][]*shard, runs []int, purpose sandbox.Purpose, ladder ladders) ([]task, map[*shard]*results) {
	var tasks []task
	res := map[*shard]*results{}
	for _, run := range runs {
		rc := s.runs[run]
		rc.ID, rc.Purpose = -1, purpose
		for _, sh := range byRun[run] {
			res[sh] = s.ex.newRunResults([]*shard{sh}, 1, ladder)
			tasks = append(tasks, s.ex.tasks([]*shard{sh}, []sandbox.RunConditions{rc}, res[sh])...)
		}
	}
	return tasks, res
}

// trying is the functions whose calls the next step replays before the
// bisected one.
func (b *bisection) trying() []int {
	if b.stage == 3 {
		return b.fast
	}
	return b.cand[:b.k]
}

// step takes one step of the search, given whether the calls of trying()
// before the function moved it: the search goes on, or is done with the
// culprit (an index of cand's) or none (-1). Its own module's functions
// are tried first, all at once; then every function before it. Those two
// steps decide the verdict; which function it was is an explanation, and
// costs what its steps replay: the prefix that moves it is tried once
// without its slow functions, and the one of them that moves it is then
// found by halving those alone; else the whole prefix is halved to the
// one function that does.
func (b *bisection) step(moves bool) (done bool, culprit int) {
	switch {
	case b.stage < 2 && moves:
		b.stage, b.lo, b.hi = 2, 0, b.k
		b.fast = b.fast[:0]
		for _, c := range b.cand[:b.k] {
			if b.cost[c] < slowReplay {
				b.fast = append(b.fast, c)
			}
		}
		if len(b.fast) > 0 && len(b.fast) < b.k {
			b.stage = 3
			return false, -1
		}
	case b.stage == 3:
		b.stage, b.lo, b.hi = 2, 0, b.k
		if moves {
			b.cand, b.hi = b.fast, len(b.fast)
		}
	case b.stage == 0:
		b.cand, b.k, b.stage = b.before, len(b.before), 1
		return false, -1
	case b.stage == 1:
		return true, -1
	case moves:
		b.hi = b.k
	default:
		b.lo = b.k
	}
	if b.hi-b.lo <= 1 {
		return true, b.cand[b.hi-1]
	}
	b.k = (b.lo + b.hi) / 2
	return false, -1
}

// segment appends to sh a lone run of the run's calls of the given
// functions and of the bisected one up to its witness rung, in the run's
// order. The functions enter sh as copies with indices of their own, so
// several steps' runs in one shard never share a result; it returns the
// bisected function's copy.
func (b *bisection) segment(sh *shard, funcs []int, byIndex map[int]*probe) *probe {
	local := map[int]int{}
	add := func(idx int) int {
		if fi, ok := local[idx]; ok {
			return fi
		}
		cp := *byIndex[idx]
		cp.Index = -1 - len(sh.Probes) // never a real probe's index
		local[idx] = len(sh.Probes)
		sh.Probes = append(sh.Probes, &cp)
		return local[idx]
	}
	sh.segments = append(sh.segments, len(sh.calls))
	var own *probe
	for _, c := range b.order {
		if c[0] == b.p.Index {
			fi := add(c[0])
			own = sh.Probes[fi]
			sh.calls = append(sh.calls, [2]int{fi, c[1]})
			if c[1] == b.rung {
				break
			}
			continue
		}
		if slices.Contains(funcs, c[0]) {
			sh.calls = append(sh.calls, [2]int{add(c[0]), c[1]})
		}
	}
	return own
}

// movedBy turns a finding that did not reproduce alone into what it is:
// a function moved by state another function left behind, which replaying
// that function's calls before it moved to its witness answer again.
func (s *scan) movedBy(b *bisection, culprit string) {
	f := b.p.fn
	w := f.Witness
	m := &report.MovedBy{Culprit: culprit, Run: b.run, Rung: w.Rung, Alone: b.alone, Moved: b.moved}
	f.MovedBy = m
	f.Witness = nil
	f.Causes, f.CauseNote = []string{}, ""
	f.Verdict = VerdictDeterministic
	f.Reason = fmt.Sprintf("called alone it gave one answer under both runs' conditions; in run %d it answered otherwise after %s had run, and does again when that function's calls are replayed before it: state that function left moved it (not nondeterminism)", m.Run, culprit)
}

// stands keeps a finding that did not reproduce alone but that no other
// function's calls explain: two fresh interpreters gave two answers to
// one input, which is a fact whatever a lone run then showed (a clock of
// one second agrees with itself within a second). why says what the
// search found, with the witness run for a %d.
func (s *scan) stands(b *bisection, why string) {
	f := b.p.fn
	if strings.Contains(why, "%d") {
		why = fmt.Sprintf(why, b.run)
	}
	f.Reason += "; called alone it gave one answer, but " + why + ": the finding stands on the main runs"
}
