package engine

import (
	"io"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Options configure one scan. The command line fills them from flags;
// tests fill them directly.
type Options struct {
	Runtime sandbox.Runtime
	// Python is the interpreter: a name looked up on PATH or a path.
	Python string
	// Runs is how many fresh interpreters each shard gets (at least 2).
	Runs int
	// SmellRuns is how many extra hash-seed runs a function that smells
	// gets; negative for none.
	SmellRuns int
	// Jobs is how many interpreters run at once.
	Jobs int
	// Shards is the most shards (interpreters per run) the modules are
	// packed into; 0 for twice Jobs, which keeps every job busy.
	Shards int
	// Seed reproduces a whole scan's conditions.
	Seed uint64
	// Unsafe lifts the static gate on the host runtime.
	Unsafe bool
	// Private also probes functions whose names start with an underscore.
	Private bool
	// Tests probes the test methods of test cases through their runner's
	// protocol (setUpClass, setUp, the method, tearDown, tearDownClass,
	// or pytest's setup_method and friends), a fresh instance per call;
	// without it a test case's methods are listed, not probed.
	Tests bool
	// CallTimeout bounds one call; the call is named and the shard goes on.
	// The default, 5 s: on the corpus of fourteen packages no call that
	// ends takes a second; in the standard library a few walk every
	// installed package or time themselves, and a 1 s limit makes five of
	// them looks (docs/benchmark.md).
	CallTimeout time.Duration
	// IdleTimeout ends a call sooner when its process has used no CPU for
	// that long and has no child process: it waits on input, a lock, a
	// socket or a sleep, and is named as past its limit. At CallTimeout or
	// above it does nothing. The default, 2 s: a call blocked for good
	// costs 2 s, not 5, and a function that sleeps a second still answers
	// (docs/benchmark.md).
	IdleTimeout time.Duration
	// FunctionBudget bounds how long one function's calls may take
	// together in one main or smell run: past it, its later rungs in that
	// run are not called, and the report says so. Negative: no budget.
	// The default, 5 s, what one call may take: a function that sleeps a
	// second per call (below the idle limit, so never ended as blocked)
	// cost a minute and a quarter; on the corpus and the standard library
	// the budget never fires (docs/benchmark.md).
	FunctionBudget time.Duration
	// ExplainBudget bounds the interpreter time naming one finding's
	// causes may take: a finding whose calls up to its witness rung would
	// take longer over the runs that flip one condition each is run only
	// under its base conditions, and its cause, unless the process moved
	// it, is unattributed (budget). It never changes a verdict. Negative:
	// no budget. The default, 10 s: on the standard library it cuts
	// attribution's two slowest findings (docs/benchmark.md).
	ExplainBudget time.Duration
	// Limits bound each interpreter.
	Limits sandbox.Limits
	// CacheDir holds generated locales between scans.
	CacheDir string
	// VerdictCache is the folder of the verdict cache: each module's
	// verdicts, reused while nothing they depend on changed ("" for none).
	VerdictCache string
	// CacheKey is what else shapes a verdict that the engine cannot see
	// (a runtime's image, its OCI binary): part of every module's key.
	CacheKey string
	// CacheSecret seals the cache's entries: only entries sealed with it
	// are read (at least 16 bytes; none, no cache).
	CacheSecret []byte
	// CacheLog, when set, hears why each module was scanned again.
	CacheLog io.Writer
	// TempDir is where the scan's scratch directory is made ("" for the
	// system default).
	TempDir string
	// Notes, when set, gets what the scan did beside scanning: leftovers of
	// interrupted scans it removed, cleanup that failed.
	Notes io.Writer
	// Progress, when set, is told when a phase starts (Done and Planned
	// 0) and each time one of its interpreters finishes its (shard, run):
	// how many have, of how many the phase planned so far.
	Progress func(Progress)
	// PhaseDone, when set, is told what each phase cost as it ends.
	PhaseDone func(PhaseCost)
	// OrderFree declares arguments whose order must not matter, as
	// "FILE.py::function:parameter"; the worker also calls with each
	// reversed.
	OrderFree []string
	// ExplicitRuns, when set, are the runs' conditions instead of a plan
	// drawn from Seed: replay sets them from a report.
	ExplicitRuns []sandbox.RunConditions
	// Measure adds each worker's peak memory to the report.
	Measure bool
	// Version is the tool version written into the report.
	Version string
	// CallerHashSeed is the caller's PYTHONHASHSEED, if set: it is never
	// passed on, and the report says it was set.
	CallerHashSeed string
	// ProjectRoot, when set, is the folder a report's ids under dir are
	// relative to (see Filter.Root): replay looks for an id's file there
	// first.
	ProjectRoot func(dir string) string
	// LocationBase is the folder module locations in the report are
	// relative to (the repository root, or the working directory); none
	// when empty.
	LocationBase string
}

// DefaultOptions are every default of a scan, in one place: the command
// line's flags take theirs from here, and a zero field of Options gets its
// value from here too.
func DefaultOptions() Options {
	return Options{
		Python: "python3", Runs: 3, SmellRuns: 3, Jobs: 1, CallTimeout: 5 * time.Second, IdleTimeout: 2 * time.Second,
		FunctionBudget: 5 * time.Second, ExplainBudget: 10 * time.Second,
		Limits:  sandbox.Limits{MemoryBytes: 2 << 30, Pids: 256, TmpfsBytes: sandbox.DefaultTmpfsBytes},
		Version: "dev",
	}
}

func (o *Options) shards() int {
	if o.Shards > 0 {
		return o.Shards
	}
	return 2 * o.Jobs
}

func (o *Options) defaults() {
	d := DefaultOptions()
	if o.Runs < 2 {
		o.Runs = d.Runs
	}
	if o.SmellRuns == 0 {
		o.SmellRuns = d.SmellRuns
	}
	if o.SmellRuns < 0 {
		o.SmellRuns = 0
	}
	if o.Jobs < 1 {
		o.Jobs = d.Jobs
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = d.CallTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = d.IdleTimeout
	}
	if o.FunctionBudget == 0 {
		o.FunctionBudget = d.FunctionBudget
	}
	if o.ExplainBudget == 0 {
		o.ExplainBudget = d.ExplainBudget
	}
	if o.Python == "" {
		o.Python = d.Python
	}
	if o.Limits.MemoryBytes == 0 {
		o.Limits.MemoryBytes = d.Limits.MemoryBytes
	}
	if o.Limits.Pids == 0 {
		o.Limits.Pids = d.Limits.Pids
	}
	if o.Limits.TmpfsBytes == 0 {
		o.Limits.TmpfsBytes = d.Limits.TmpfsBytes
	}
	if o.Version == "" {
		o.Version = d.Version
	}
}

// Progress is how far a scan's phase is: discovering, probing,
// attributing, or confirming (lone runs and bisection).
type Progress struct {
	Phase         string
	Done, Planned int
}

// PhaseCost is what one phase of a scan took.
type PhaseCost struct {
	Phase        string
	Wall         time.Duration
	Interpreters int
	// NotWaited counts the calls the phase did not make because the same
	// rung ran past the call limit in an earlier run (see pastLimit).
	NotWaited int
	// OverBudget counts the (function, run) pairs whose calls took the
	// function budget, so their later rungs were not called.
	OverBudget int
	// Children counts the worker's children the phase's plans asked for
	// (one per stretch of a module's calls), restarts after a crash or a
	// hang not included.
	Children int
	// Spent is where the phase's interpreters spent their time.
	Spent Spent
	// Slowest are the functions whose calls that answered took longest
	// in the phase, most first (five at most).
	Slowest []FunctionTime
}

// FunctionTime is how long one function's calls took in a phase.
type FunctionTime struct {
	ID    string
	Calls int
	Time  time.Duration
}

// Spent is where interpreters' time went, summed over all of them (so
// it exceeds the wall time when several ran at once).
type Spent struct {
	// Start: from starting the sandbox to the worker's first record (the
	// container, the interpreter, the worker's own imports).
	Start time.Duration
	// Imports and Calls: the scanned modules' imports and the calls that
	// answered, as the worker measured them.
	Imports, Calls time.Duration
	// Hangs: the calls and imports that ran past their limit.
	Hangs time.Duration
	// Other: the rest of the interpreters' lives: the worker's forks of
	// its children, its relay of their records, the exit.
	Other time.Duration
}

// Add adds o to s.
func (s *Spent) Add(o Spent) {
	s.Start += o.Start
	s.Other += o.Other
	s.Imports += o.Imports
	s.Calls += o.Calls
	s.Hangs += o.Hangs
}
