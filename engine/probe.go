package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

type outcomeKind uint8

const (
	notRun     outcomeKind = iota
	answered               // a canonical value
	raisedK                // a canonical exception type
	excluded               // a value with no canonical form
	timedOut               // ran past the per-call limit
	crashed                // killed its interpreter
	skipped                // not called: the function timed out or crashed earlier in the run
	overBudget             // not called: the function's calls took its budget in the run
)

// leftOut says the call was not made: skipped or over budget.
func (k outcomeKind) leftOut() bool { return k == skipped || k == overBudget }

// outcome is one call: one function, one rung, one run.
type outcome struct {
	kind   outcomeKind
	value  string // V:… or E:…
	free   string // the value with sets sorted, when it holds a set
	detail string // why excluded, or how it crashed
	// breaker names the in-process breaker (repeat, dict-order) under which
	// the same process answered value2 instead of value.
	breaker string
	value2  string
	reach   reach
	// took is how long the call took, as the worker measured it, in
	// microseconds: what replaying it costs a bisection.
	took uint32
	// sandbox names what of the sandbox made the call raise, when the
	// exception says so and the host agrees: see executor.sandboxCause.
	sandbox string
	// receiver is a digest of the instance a method was called on, when
	// a callee other than its class built it.
	receiver string
	// traces are the call's line events, when the plan asked for them:
	// one per traced call.
	traces []*callTrace
}

// reach is whether a call entered the function's own frame.
type reach uint8

const (
	reachUnknown reach = iota // not measured: no code object, or no answer
	reachYes                  // it returned, or raised from inside its body
	reachNo                   // it raised before its body ran (binding the arguments)
)

// results collects every outcome of a scan.
type results struct {
	calls      map[int][][]outcome // probe -> rung -> run
	mu         sync.Mutex
	importErr  map[int]map[int]string // module -> run slot -> why its import failed
	notCall    map[int]string         // probe -> why it is not callable
	events     map[int][]report.Event
	shardError map[int]map[int]string // probe -> run slot -> why its shard could not run
	// loaded are, per module, the host paths of the files its processes
	// had loaded, in any run: what the verdict cache keys it by.
	loaded map[int]map[string]bool
	ladder ladders
}

func (r *results) event(p int, e report.Event) {
	r.mu.Lock()
	r.events[p] = append(r.events[p], e)
	r.mu.Unlock()
}

func newResults() *results {
	return &results{calls: map[int][][]outcome{}, importErr: map[int]map[int]string{}, notCall: map[int]string{},
		events: map[int][]report.Event{}, shardError: map[int]map[int]string{}, loaded: map[int]map[string]bool{}}
}

// runRuns runs every shard under every one of runs, up to Jobs
// interpreters at once; each run's outcomes go to its slot in runs.
func (x *executor) runRuns(ctx context.Context, shards []*shard, runs []sandbox.RunConditions, ladder ladders) *results {
	res := x.newRunResults(shards, len(runs), ladder)
	x.runPool(ctx, x.tasks(shards, runs, res))
	return res
}

// newRunResults makes room for every probe of shards under n runs.
func (x *executor) newRunResults(shards []*shard, n int, ladder ladders) *results {
	res := newResults()
	res.ladder = ladder
	res.makeRoom(shards, n)
	return res
}

// makeRoom makes room for every probe of shards under n runs.
func (r *results) makeRoom(shards []*shard, n int) {
	for _, sh := range shards {
		for _, p := range sh.Probes {
			rungs := make([][]outcome, len(r.ladder[p.Ladder]))
			for i := range rungs {
				rungs[i] = make([]outcome, n)
			}
			r.calls[p.Index] = rungs
		}
	}
}

// task is one interpreter: a shard under one run, its outcomes going to
// slot of res.
type task struct {
	sh   *shard
	rc   sandbox.RunConditions
	slot int
	res  *results
}

func (x *executor) tasks(shards []*shard, runs []sandbox.RunConditions, res *results) []task {
	var out []task
	for _, sh := range shards {
		for slot, rc := range runs {
			out = append(out, task{sh, rc, slot, res})
		}
	}
	return out
}

// inFlight is how many interpreters may be under way at once: Jobs, and
// as many more starting on a runtime that starts them ahead (each waits
// for one of the Jobs places before it runs).
func (x *executor) inFlight() int {
	if x.running != nil {
		return 2 * x.opts.Jobs
	}
	return x.opts.Jobs
}

// runPool runs tasks, up to Jobs at once.
func (x *executor) runPool(ctx context.Context, tasks []task) {
	planned := x.tasksPlanned.Add(int64(len(tasks)))
	if x.opts.Progress != nil {
		x.opts.Progress(Progress{Phase: x.phaseName(), Done: int(x.tasksDone.Load()), Planned: int(planned)})
	}
	var g errgroup.Group
	g.SetLimit(x.inFlight())
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			x.runShard(ctx, t.sh, t.rc, t.slot, t.res.ladder, t.res)
			if x.opts.Progress != nil {
				x.opts.Progress(Progress{Phase: x.phaseName(), Done: int(x.tasksDone.Add(1)), Planned: int(x.tasksPlanned.Load())})
			}
			return nil
		})
	}
	_ = g.Wait() // tasks report into their results, never an error
}

type planModule struct {
	Index int    `json:"index"`
	Root  string `json:"root"`
	Name  string `json:"name"`
	Path  string `json:"path"`
}

type planFunction struct {
	Module    int      `json:"module"`
	Name      string   `json:"name"`
	Arity     int      `json:"arity"`
	Kinds     []string `json:"kinds,omitempty"`
	OrderFree []int    `json:"order_free,omitempty"`
	// A method: its class, its name there, its kind, and its class's
	// constructor when it is called on an instance.
	Class    string       `json:"class,omitempty"`
	Attr     string       `json:"attr,omitempty"`
	Kind     string       `json:"kind,omitempty"`
	Receiver *receiverSig `json:"receiver,omitempty"`
	// Doctests are its docstring examples' arguments: its first rungs.
	Doctests [][]string `json:"doctests,omitempty"`
	// TestCase: a test method, called as its runner calls it (--tests).
	TestCase bool `json:"test_case,omitempty"`
	// Trace is the rung whose call is traced line by line (see diverge),
	// TraceCalls how many times in a row (2: a repeat's two calls).
	Trace      *int `json:"trace,omitempty"`
	TraceCalls int  `json:"trace_calls,omitempty"`
}

type workerPlan struct {
	envelope
	Modules   []planModule   `json:"modules"`
	Functions []planFunction `json:"functions"`
	Calls     [][2]int       `json:"calls"`
	Start     int            `json:"start"`
	Skip      []int          `json:"skip"`
	ASLimit   int64          `json:"address_space_limit,omitempty"`
	// Segments are the indices in Calls where a lone run starts: the worker
	// runs each segment in a child forked before anything scanned is
	// imported.
	Segments []int `json:"segments,omitempty"`
	// NoZygotes has no package imported outside a child: a package's
	// zygote imports the package without a record, so a worker that died
	// outside any import or call may have died there, and its retry
	// imports each package in a child that says so (forked from a bare
	// zygote, which imports nothing).
	NoZygotes bool `json:"no_zygotes,omitempty"`
	// The limits the worker holds each call and import to, in seconds:
	// it names the call that ran past its limit and goes on with the next.
	CallTimeout   float64 `json:"call_timeout"`
	ImportTimeout float64 `json:"import_timeout"`
	// IdleTimeout ends a call sooner whose process has used no CPU (and
	// has no child) for that long: it is blocked, and named as past its
	// limit.
	IdleTimeout float64 `json:"idle_timeout,omitempty"`
	// FunctionBudget, in seconds, is how long one function's calls may
	// take together in one process: once they have, after n calls, it is
	// called only on rungs below n, and each call left out is answered
	// "ob". Zero: no budget.
	FunctionBudget float64 `json:"function_budget,omitempty"`
	// CodeDir holds the scanned modules' bytecode, compiled by discovery.
	CodeDir string `json:"code_dir,omitempty"`
}

// backstop is how long the engine waits past a step's own limit before it
// ends the whole worker: the worker holds calls to their limit itself, so
// this fires only when the worker itself is stuck (stopped by a signal).
const backstop = 5 * time.Second

// runShard drives one shard through one run. When a call hangs or kills
// the interpreter, that call is named and a fresh interpreter resumes the
// shard after it, so every other function's results survive.
//
// rc is the run's conditions; its outcomes go to slot run of res.
func (x *executor) runShard(ctx context.Context, sh *shard, rc sandbox.RunConditions, run int, ladder ladders, res *results) {
	if sh = sh.under(rc); sh == nil {
		return
	}
	plan := workerPlan{envelope: envelope{Nonce: newScanID() + newScanID()}, Skip: []int{}, CodeDir: x.codeDir}
	modIndex := map[int]int{} // scan module -> plan module
	var modOf []int           // plan module -> scan module
	for _, p := range sh.Probes {
		if _, ok := modIndex[p.Module]; !ok {
			modIndex[p.Module] = len(plan.Modules)
			modOf = append(modOf, p.Module)
			plan.Modules = append(plan.Modules, planModule{Index: len(plan.Modules), Root: x.inside(p.File.Root), Name: p.File.Name, Path: x.inside(p.File.Path)})
		}
		pf := planFunction{Module: modIndex[p.Module], Name: p.Name, Arity: p.Arity, Kinds: p.Kinds, OrderFree: p.orderFree,
			Class: p.Class, Attr: p.Attr, Kind: p.Kind, Receiver: p.Receiver, Doctests: p.Doctests, TestCase: p.TestCase}
		if rung, ok := sh.upTo[p.Index]; ok && sh.trace > 0 {
			pf.Trace, pf.TraceCalls = &rung, sh.trace
		}
		plan.Functions = append(plan.Functions, pf)
	}
	plan.Calls, plan.Segments = sh.callPlan(rc, ladder)
	drops := x.dropPastLimit(sh, rc, &plan, run, res)
	if budgeted(sh, rc) && x.opts.FunctionBudget > 0 {
		plan.FunctionBudget = x.opts.FunctionBudget.Seconds()
	}
	x.children.Add(int64(stretches(&plan)))
	if !x.opts.Runtime.Isolated() {
		plan.ASLimit = x.opts.Limits.MemoryBytes
	}
	skip := map[int]bool{}
	importTimeout := max(30*time.Second, 3*x.opts.CallTimeout)
	plan.CallTimeout, plan.ImportTimeout = x.opts.CallTimeout.Seconds(), importTimeout.Seconds()
	if x.opts.IdleTimeout < x.opts.CallTimeout {
		plan.IdleTimeout = x.opts.IdleTimeout.Seconds()
	}
	set := func(fi, ri int, o outcome) { res.calls[sh.Probes[fi].Index][ri][run] = o }

	for attempt := 0; plan.Start < len(plan.Calls); attempt++ {
		plan.Skip = plan.Skip[:0]
		for fi := range skip {
			plan.Skip = append(plan.Skip, fi)
		}
		slices.Sort(plan.Skip)
		wd := &watchdog{}
		sink := &shardRun{x: x, sh: sh, plan: &plan, run: run, res: res, modOf: modOf, wd: wd}
		rr := newRecordReader(&plan, skip, sink, x.opts.CallTimeout+backstop, importTimeout+backstop)
		out, err := x.runJob(ctx, fmt.Sprintf("s%d-%s", sh.ID, runLabel(rc)), rc, "probe", &plan, importTimeout, rr.handle, wd)
		x.addSpent(rr.ended())
		if ctx.Err() != nil {
			// Interrupted: the kill was ours, not the code's. What was
			// answered before it stands; nothing is charged to a call,
			// an import or the sandbox (an import cut short would
			// otherwise become that run's answer, and a false witness).
			return
		}
		if err != nil {
			x.shardFailed(sh, run, res, err.Error())
			return
		}
		curMod, last, forged, between := rr.module, rr.last, rr.forged, rr.between(out.mark)
		if forged >= 0 {
			// Drop what was recorded from the forger's call on, name it,
			// and resume after it in a fresh interpreter.
			for _, i := range rr.recorded {
				if i >= forged {
					set(plan.Calls[i][0], plan.Calls[i][1], outcome{})
				}
			}
			fi, ri := plan.Calls[forged][0], plan.Calls[forged][1]
			detail := "forged records on the channel; its results and those after it in this run were dropped and re-run"
			set(fi, ri, outcome{kind: crashed, detail: detail})
			res.event(sh.Probes[fi].Index, report.Event{Kind: "tampered", Run: run, Rung: ri, Detail: detail})
			skip[fi] = true
			plan.Start = forged + 1
			continue
		}
		if rr.done {
			x.commitDrops(sh, drops, run, res, skip)
			return
		}
		switch {
		case curMod >= 0:
			detail := "import killed its interpreter (" + out.describe() + ")"
			if out.watchdog {
				detail = fmt.Sprintf("import ran past %s", importTimeout)
			}
			res.failImport(modOf[curMod], run, detail)
			for fi, p := range sh.Probes {
				if p.Module == modOf[curMod] {
					skip[fi] = true
				}
			}
			plan.Start = last + 1
		case between >= 0:
			// The worker died in a call of a module's process (it may have
			// killed the worker's parent): the call it marked is charged,
			// and the calls before it whose answers died with the process
			// run again.
			kind, detail := "crash", "killed its interpreter ("+out.describe()+")"
			if out.watchdog {
				kind, detail = "timeout", fmt.Sprintf("ran past the %s call limit", x.opts.CallTimeout)
			} else if out.exit != nil && out.exit.OOMKilled {
				detail = "exceeded the memory limit and was killed"
			}
			rr.sink.lost(between, kind, detail, true)
			skip[plan.Calls[between][0]] = true
			plan.Start = last + 1
		default:
			if last+1 == plan.Start && plan.NoZygotes {
				x.shardFailed(sh, run, res, "the worker "+out.describe()+" before calling anything"+out.stderrTail())
				return
			}
			plan.NoZygotes = true
			plan.Start = last + 1
		}
		for fi := range skip {
			for ri := range ladder[sh.Probes[fi].Ladder] {
				if o := &res.calls[sh.Probes[fi].Index][ri][run]; o.kind == notRun {
					o.kind = skipped
				}
			}
		}
	}
	x.commitDrops(sh, drops, run, res, skip)
}

// stretches counts the children a plan's worker forks when no call
// crashes or hangs: one per run of one module's calls and per segment.
func stretches(plan *workerPlan) int {
	cuts := map[int]bool{}
	for _, c := range plan.Segments {
		if c < len(plan.Calls) {
			cuts[c] = true
		}
	}
	for i, c := range plan.Calls {
		if i == 0 || plan.Functions[c[0]].Module != plan.Functions[plan.Calls[i-1][0]].Module {
			cuts[i] = true
		}
	}
	return len(cuts)
}

// pastLimit remembers the rungs that ran past the call limit, by probe
// and rung, with what the run that waited wrote of it. A hang is paid
// once: a function that sleeps or waits for input would otherwise cost
// the whole limit again in every run.
type pastLimit struct {
	mu sync.Mutex
	m  map[[2]int]string
}

func (l *pastLimit) add(probe, rung int, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[[2]int]string{}
	}
	if _, ok := l.m[[2]int{probe, rung}]; !ok {
		l.m[[2]int{probe, rung}] = detail
	}
}

func (l *pastLimit) known() map[[2]int]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.m)
}

// dropPastLimit takes out of a main run's plan the rungs that ran past
// the call limit in a run before it, and does what waiting for them would
// have done: the function's later calls in this run are skipped, and the
// calls after it go on in a fresh process; commitDrops, once the run has
// gone through, records the rung as past the limit (the detail and event
// the first run wrote, so the report does not say which run waited). A
// hang that every run would meet gives the same report as before.
// Confirmation, attribution and bisection are left alone: they call a
// witness's rungs, which answered in the witness's run, and must call
// them as that run did.
func (x *executor) dropPastLimit(sh *shard, rc sandbox.RunConditions, plan *workerPlan, run int, res *results) []drop {
	if !budgeted(sh, rc) {
		return nil
	}
	known := x.pastLimit.known()
	if len(known) == 0 {
		return nil
	}
	var drops []drop
	cut := map[int]bool{}
	kept := plan.Calls[:0:0]
	for _, c := range plan.Calls {
		p := sh.Probes[c[0]]
		detail, hung := known[[2]int{p.Index, c[1]}]
		switch {
		case cut[c[0]]:
			res.calls[p.Index][c[1]][run] = outcome{kind: skipped}
		case hung:
			drops = append(drops, drop{fi: c[0], rung: c[1], detail: detail})
			cut[c[0]] = true
			plan.Segments = append(plan.Segments, len(kept))
		default:
			kept = append(kept, c)
		}
	}
	plan.Calls = kept
	slices.Sort(plan.Segments)
	plan.Segments = slices.Compact(plan.Segments)
	return drops
}

// budgeted says whether a run may leave out calls to save time: a main
// or smell run may. Confirmation, attribution and bisection call a
// witness's rungs, which answered in the witness's run, and must call
// them as that run did.
func budgeted(sh *shard, rc sandbox.RunConditions) bool {
	return (rc.Purpose == sandbox.PurposeMain || rc.Purpose == sandbox.PurposeHashSeed) && !sh.alone && sh.calls == nil && len(sh.upTo) == 0
}

// drop is a rung a run did not call because it ran past the call limit
// in an earlier run.
type drop struct {
	fi, rung int // function in the shard, rung
	detail   string
}

// commitDrops records a run's drops once it has gone through: past the
// limit, unless the function never got that far in this run (its import
// failed, or an earlier call of it crashed or hung), when it is skipped as
// waiting would have left it.
func (x *executor) commitDrops(sh *shard, drops []drop, run int, res *results, skip map[int]bool) {
	for _, d := range drops {
		p := sh.Probes[d.fi]
		o := &res.calls[p.Index][d.rung][run]
		res.mu.Lock()
		_, importFailed := res.importErr[p.Module][run]
		res.mu.Unlock()
		if o.kind != notRun || importFailed {
			continue // the import's failure is the run's answer
		}
		if skip[d.fi] {
			o.kind = skipped
			continue
		}
		*o = outcome{kind: timedOut, detail: d.detail}
		res.event(p.Index, report.Event{Kind: "timeout", Run: run, Rung: d.rung, Detail: d.detail})
		x.notWaited.Add(1)
	}
}

// shardRun is what one attempt of a shard's records does to the scan's
// results.
type shardRun struct {
	x     *executor
	sh    *shard
	plan  *workerPlan
	run   int
	res   *results
	modOf []int // plan module -> scan module
	wd    *watchdog
	cut   map[int]bool // functions whose budget this attempt's records said was spent
}

func (a *shardRun) probeOf(call int) *probe { return a.sh.Probes[a.plan.Calls[call][0]] }

func (a *shardRun) answered(call int, rec record) {
	ri := a.plan.Calls[call][1]
	x := a.x
	o := outcome{kind: answered, value: x.unplace(rec.Value), free: x.unplace(rec.OrderFree), breaker: rec.Breaker, value2: x.unplace(rec.Value2), receiver: rec.Receiver, traces: rec.Traces}
	switch {
	case rec.Excluded != "":
		o = outcome{kind: excluded, detail: rec.Excluded}
	case len(rec.Value) > 1 && rec.Value[0] == 'E':
		o.kind = raisedK
	}
	if o.kind == raisedK && rec.Sandbox != "" {
		o.sandbox = x.sandboxCause(rec.Sandbox)
	}
	if rec.Reached != nil {
		o.reach = reachNo
		if *rec.Reached == 1 {
			o.reach = reachYes
		}
	}
	p := a.probeOf(call)
	o.took = uint32(min(rec.took.Microseconds(), math.MaxUint32))
	a.res.calls[p.Index][ri][a.run] = o
	x.timeCall(p, rec.took)
	if rec.Threads > 0 {
		a.res.event(p.Index, report.Event{Kind: "thread", Run: a.run, Rung: ri,
			Detail: fmt.Sprintf("left %d non-daemon thread(s) running", rec.Threads)})
	}
}

func (a *shardRun) importFailed(module int, err string) {
	a.res.failImport(a.modOf[module], a.run, err)
}

func (a *shardRun) notCallable(call int, why string) {
	a.res.mu.Lock()
	a.res.notCall[a.probeOf(call).Index] = why
	a.res.mu.Unlock()
}

// overBudget records a call the worker did not make because its
// function's calls took their budget in this run; the first such call of
// a function in a run says so in the report.
func (a *shardRun) overBudget(call int, spent time.Duration, below int) {
	fi, ri := a.plan.Calls[call][0], a.plan.Calls[call][1]
	p := a.sh.Probes[fi]
	a.res.calls[p.Index][ri][a.run] = outcome{kind: overBudget}
	if a.cut == nil {
		a.cut = map[int]bool{}
	}
	if a.cut[fi] {
		return
	}
	a.cut[fi] = true
	a.res.event(p.Index, report.Event{Kind: "budget", Run: a.run, Rung: ri,
		Detail: fmt.Sprintf("its calls took %s together, past the %s a function may take in one run; from then on it was called only on rungs below %d",
			spent.Round(100*time.Millisecond), a.x.opts.FunctionBudget, below)})
	a.x.overBudget.Add(1)
}

func (a *shardRun) lost(call int, kind, detail string, inCall bool) {
	p, ri := a.probeOf(call), a.plan.Calls[call][1]
	o := outcome{kind: crashed, detail: detail}
	if kind == "timeout" {
		o.kind = timedOut
		if inCall {
			// Only a call that ran is known to hang; one charged because
			// its process ended before it is not.
			a.x.pastLimit.add(p.Index, ri, detail)
		}
	}
	a.res.calls[p.Index][ri][a.run] = o
	a.res.event(p.Index, report.Event{Kind: kind, Run: a.run, Rung: ri, Detail: detail})
}

func (a *shardRun) arm(d time.Duration) { a.wd.arm(d) }

func (a *shardRun) loaded(module int, files []string) {
	if module >= len(a.modOf) {
		return
	}
	mod := a.modOf[module]
	a.res.mu.Lock()
	defer a.res.mu.Unlock()
	set := a.res.loaded[mod]
	if set == nil {
		set = map[string]bool{}
		a.res.loaded[mod] = set
	}
	for _, f := range files {
		set[a.x.hostPath(f)] = true
	}
}
func (a *shardRun) kill() { a.wd.kill() }

// unplace writes the host runtime's scratch directory, where HOME and the
// working directory live there, as $SCRATCH in an answer, and its TMPDIR
// as $TMPDIR: the report holds no temporary paths, and two runs' answers
// compare on the condition, not on where the scan happened to make it.
func (x *executor) unplace(v string) string {
	if x.opts.Runtime.Isolated() || v == "" {
		return v
	}
	return strings.NewReplacer(filepath.Join(x.scratch, "conditions"), sandbox.ScratchVar,
		x.hostFolders().tmp, "$TMPDIR").Replace(v)
}

// sandboxCause says what of the sandbox a raised call's trace names (see
// the worker's sandbox_trace), or "" when the code, not the sandbox, is
// to blame: nothing of the kind on the host runtime, and a path missing
// inside that is missing on the host too.
func (x *executor) sandboxCause(trace string) string {
	if !x.opts.Runtime.Isolated() {
		return ""
	}
	switch trace {
	case "erofs":
		return "a read-only file system"
	case "net":
		return "no network"
	}
	path, ok := strings.CutPrefix(trace, "enoent:")
	if !ok {
		return ""
	}
	if host := x.outside(path); host != "" {
		if _, err := os.Stat(host); err == nil {
			return "a file of the scanned tree it does not show"
		}
	}
	return ""
}

// under is the shard as a run sees it: only the functions that smell get
// the extra hash-seed runs (nil when none of the shard's does).
func (sh *shard) under(rc sandbox.RunConditions) *shard {
	if rc.Purpose != sandbox.PurposeHashSeed {
		return sh
	}
	var smelly []*probe
	for _, p := range sh.Probes {
		if p.smelly {
			smelly = append(smelly, p)
		}
	}
	if len(smelly) == 0 {
		return nil
	}
	return &shard{ID: sh.ID, Probes: smelly, upTo: sh.upTo}
}

// callPlan is the order in which a run calls a shard: each function's
// rungs in turn, each module's reversed in a reversed run, each ending at its upTo
// rung when set (and leaving out the rungs its witness's runs did not
// call); or the shard's explicit list. Entries are (function in
// sh.Probes, rung). A lone shard runs each function in a segment of its
// own (its rungs in the run's order); segments are where each starts.
func (sh *shard) callPlan(rc sandbox.RunConditions, ladder ladders) (calls [][2]int, segments []int) {
	if sh.calls != nil {
		return slices.Clone(sh.calls), slices.Clone(sh.segments)
	}
	reversed := rc.CallOrder == "reversed"
	past := func(c [2]int) bool {
		p := sh.Probes[c[0]]
		w, ok := sh.upTo[p.Index]
		return ok && (!reversed && c[1] > w || reversed && c[1] < w || p.uncalled[c[1]])
	}
	if sh.alone {
		for fi, p := range sh.Probes {
			var own [][2]int
			for ri := range ladder[p.Ladder] {
				own = append(own, [2]int{fi, ri})
			}
			if reversed {
				slices.Reverse(own)
			}
			segments = append(segments, len(calls))
			calls = append(calls, slices.DeleteFunc(own, past)...)
		}
		return calls, segments
	}
	// A reversed run reverses each module's calls, not the order of the
	// modules: each module runs in a child of its own, so nothing of one
	// reaches another but files and process ids, and what a module's
	// functions answer must not hang on which modules share its shard (a
	// split scan's parts pack them differently).
	start := 0
	for fi, p := range sh.Probes {
		if fi > 0 && p.Module != sh.Probes[fi-1].Module {
			if reversed {
				slices.Reverse(calls[start:])
			}
			start = len(calls)
		}
		for ri := range ladder[p.Ladder] {
			calls = append(calls, [2]int{fi, ri})
		}
	}
	if reversed {
		slices.Reverse(calls[start:])
	}
	return slices.DeleteFunc(calls, past), nil
}

// shardFailed records that a shard could not run in one run: its
// functions are judged on the runs that did.
func (x *executor) shardFailed(sh *shard, run int, res *results, why string) {
	res.mu.Lock()
	defer res.mu.Unlock()
	for _, p := range sh.Probes {
		if res.shardError[p.Index] == nil {
			res.shardError[p.Index] = map[int]string{}
		}
		res.shardError[p.Index][run] = why
	}
}

// failImport records that a module's import failed in one run.
func (r *results) failImport(module, run int, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.importErr[module] == nil {
		r.importErr[module] = map[int]string{}
	}
	r.importErr[module][run] = why
}

// firstOf is the failure of the lowest run.
func firstOf(m map[int]string) string {
	best := -1
	for run := range m {
		if best < 0 || run < best {
			best = run
		}
	}
	return m[best]
}
