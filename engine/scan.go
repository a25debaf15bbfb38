package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/gate"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// scan is the state of one Scan call: its phases' data, around the
// executor that runs their jobs.
type scan struct {
	ex        *executor // holds the scan's options
	runs      []sandbox.RunConditions
	skipped   []sandbox.Support
	orderFree map[string][]int
	files     []sourceFile
	// context are modules discovery parses only so a method's receivers
	// are built as in the scan that made a report (replay's one file: the
	// rest of its package); never probed, never reported.
	context    []sourceFile
	mainShards []*shard // the main runs' shards: bisection replays their order
	// suppressions are the ignore comments of the files read.
	suppressions []*suppressions
	cache        *verdictCache // nil: none
}

// openScan opens the scan's executor and plans its runs' conditions. The
// returned function undoes it all, even after ctx is cancelled.
func openScan(ctx context.Context, opts Options, files []sourceFile) (*scan, func(), error) {
	opts.defaults()
	if opts.Runtime == nil {
		return nil, nil, errors.New("engine: no runtime")
	}
	ex, closeEx, err := openExecutor(ctx, opts, files)
	if err != nil {
		return nil, nil, err
	}
	s := &scan{ex: ex}
	inImage := opts.Runtime.Capabilities().InImage
	s.runs = planRuns(opts.Seed, opts.Runs, opts.SmellRuns, ex.loc, opts.Runtime.Isolated(), inImage || zoneData())
	if len(opts.ExplicitRuns) > 0 {
		s.runs = append([]sandbox.RunConditions(nil), opts.ExplicitRuns...)
	}
	s.skipped = applySupport(s.runs, sandbox.Supported(opts.Runtime), ex.faketime)
	return s, closeEx, nil
}

// Scan discovers, plans, runs and judges the functions under targets.
func Scan(ctx context.Context, opts Options, targets []Target) (*report.Report, error) {
	src, err := Resolve(targets, Filter{})
	if err != nil {
		return nil, err
	}
	return ScanSources(ctx, opts, src)
}

// ScanSources scans what Resolve found.
func ScanSources(ctx context.Context, opts Options, src *Sources) (*report.Report, error) {
	s, closeScan, err := openScan(ctx, opts, src.files)
	if err != nil {
		return nil, err
	}
	s.files = src.files
	defer closeScan()
	opts = s.ex.opts
	targets := src.targets
	pr, err := s.probeAll(ctx, targets)
	if err != nil {
		return nil, err
	}
	rep, probes, results, disc := pr.report, pr.probes, pr.results, pr.disc
	counts := runCounts{main: opts.Runs, all: len(s.runs), apart: s.apart}
	judgeAll(rep, probes, results, disc.ladder, counts)
	markUncalled(probes, results)
	interrupted := ctx.Err() != nil
	if !interrupted {
		// Attribution's runs confirm the findings alone in their module's
		// child there; confirm runs the rest alone and bisects.
		endAttribution := s.ex.phase("attributing")
		pending := s.attribute(ctx, probes, results, disc.ladder)
		endAttribution()
		if len(pending) > 0 && ctx.Err() == nil {
			endConfirm := s.ex.phase("confirming")
			s.confirm(ctx, pending, results, disc.ladder)
			endConfirm()
		}
		if ctx.Err() == nil {
			endDiverge := s.ex.phase("tracing")
			s.diverge(ctx, probes, disc.ladder)
			endDiverge()
		}
	}
	if ctx.Err() != nil {
		rep.Partial = true
		markInterrupted(probes, results, counts, !interrupted)
	}
	if c := s.cache; c != nil {
		c.finish(rep)
		if !rep.Partial {
			c.store(s, rep, probes, results, time.Now())
		}
	}
	rep.Processes = int(s.ex.processes.Load())
	rep.Excluded = src.excluded
	rep.UnusedSuppressions = unusedSuppressions(s.suppressions, rep)
	if opts.Measure {
		sort.Slice(s.ex.workers, func(i, j int) bool { return s.ex.workers[i].Job < s.ex.workers[j].Job })
		rep.Measurements = &report.Measurements{Workers: s.ex.workers}
	}
	for _, rungs := range results.calls {
		for _, runs := range rungs {
			for _, o := range runs {
				if o.kind != notRun && !o.kind.leftOut() {
					rep.Calls++
				}
			}
		}
	}
	rep.Finish()
	if rep.Partial {
		return rep, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	}
	return rep, nil
}

// markInterrupted says of an interrupted scan's functions what it could
// not finish: one that some run never called is not probed (unless two
// runs already disagreed: a witness is a fact), and, when confirmation
// or attribution was cut short, a finding says its causes may be
// missing.
func markInterrupted(probes []*probe, res *results, counts runCounts, lateStop bool) {
	for _, p := range probes {
		f := p.fn
		if f.Verdict == VerdictNondeterministic {
			if lateStop {
				f.Reason += " (the scan was interrupted during confirmation or attribution: its causes may be missing)"
			} else {
				f.Reason += " (the scan was interrupted before confirmation: not confirmed alone, no causes)"
			}
			continue
		}
		runs, missed := counts.of(p), 0
		for slot := 0; slot < runs; slot++ {
			for _, rung := range res.calls[p.Index] {
				if slot < len(rung) && rung[slot].kind == notRun {
					missed++
					break
				}
			}
		}
		if missed > 0 {
			f.Verdict = VerdictNotProbed
			f.Reason = fmt.Sprintf("the scan was interrupted before %d of its %d runs called it", missed, runs)
		}
	}
}

// Sources are the modules a scan reads, found before any sandbox starts.
type Sources struct {
	targets  []Target
	files    []sourceFile
	excluded []string // left out by include and exclude, or git's ignores
	warnings []string // what kept the walk from doing as asked
}

// Warnings are what kept the walk from leaving out what it was asked to
// (an ignore file that is a FIFO, a repository git refuses), for the
// user to read.
func (s *Sources) Warnings() []string { return s.warnings }

// Len is the number of Python files found.
func (s *Sources) Len() int { return len(s.files) }

// Part keeps the k-th of n parts of the sources (k from 1): every file
// in exactly one part, spread by size so that the parts cost about the
// same, and the same split on every machine that resolves the same tree.
// A scan of each part with one seed, merged (report.Merge), is a scan of
// the whole. A part may be empty when there are fewer files than parts.
func (s *Sources) Part(k, n int) *Sources {
	size := make([]int64, len(s.files))
	for i, f := range s.files {
		if st, err := os.Stat(f.Path); err == nil {
			size[i] = st.Size()
		}
	}
	order := make([]int, len(s.files))
	for i := range order {
		order[i] = i
	}
	// Largest first, each to the lightest part (ties: the first part).
	sort.SliceStable(order, func(a, b int) bool { return size[order[a]] > size[order[b]] })
	load := make([]int64, n)
	mine := make([]bool, len(s.files))
	for _, i := range order {
		best := 0
		for p := range load {
			if load[p] < load[best] {
				best = p
			}
		}
		load[best] += size[i] + 1
		mine[i] = best == k-1
	}
	out := &Sources{targets: s.targets, excluded: s.excluded}
	for i, f := range s.files {
		if mine[i] {
			out.files = append(out.files, f)
		}
	}
	return out
}

// PackageSources are the sources of one installed distribution (Package
// nil: the rest, what the paths given named).
type PackageSources struct {
	Package *Package
	Sources *Sources
}

// ByPackage splits the sources into those of each of pkgs, in their
// order, then the rest: an audit scans one distribution at a time, and
// holds one distribution's calls at a time. A package none of whose files
// were kept is left out; the first part carries what was excluded.
func (s *Sources) ByPackage(pkgs []Package) []PackageSources {
	var out []PackageSources
	taken := make([]bool, len(s.files))
	for i := range pkgs {
		p := &pkgs[i]
		part := &Sources{targets: s.targets}
		for fi, f := range s.files {
			if taken[fi] {
				continue
			}
			for _, top := range p.Tops {
				if within(f.Path, filepath.Join(p.Site, top)) {
					part.files = append(part.files, f)
					taken[fi] = true
					break
				}
			}
		}
		if len(part.files) > 0 {
			out = append(out, PackageSources{Package: p, Sources: part})
		}
	}
	rest := &Sources{targets: s.targets}
	for fi, f := range s.files {
		if !taken[fi] {
			rest.files = append(rest.files, f)
		}
	}
	if len(rest.files) > 0 {
		out = append(out, PackageSources{Sources: rest})
	}
	if len(out) > 0 {
		out[0].Sources.excluded = s.excluded
	}
	return out
}

// Resolve walks the targets for the Python files filter keeps; finding
// none is ErrNoSources, most likely a wrong path.
func Resolve(targets []Target, filter Filter) (*Sources, error) {
	if err := filter.check(); err != nil {
		return nil, err
	}
	files, excluded, warnings, err := findSources(targets, filter)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if filter.Force && len(excluded) > 0 {
			return nil, fmt.Errorf("%w: every file named was excluded (%s)", ErrAllExcluded, strings.Join(excluded, ", "))
		}
		return nil, ErrNoSources
	}
	return &Sources{targets: targets, files: files, excluded: excluded, warnings: warnings}, nil
}

// openTargets finds the targets' sources and opens a scan over them.
func openTargets(ctx context.Context, opts Options, targets []Target) (*scan, func(), error) {
	src, err := Resolve(targets, Filter{})
	if err != nil {
		return nil, nil, err
	}
	s, closeScan, err := openScan(ctx, opts, src.files)
	if err != nil {
		return nil, nil, err
	}
	s.files = src.files
	return s, closeScan, nil
}

// probed is what the main runs of a scan found: the report to fill in,
// the functions called, their outcomes and what discovery listed.
type probed struct {
	report  *report.Report
	probes  []*probe
	results *results
	disc    *discovery
}

// probeAll discovers, selects and runs every probe of the scan's targets.
func (s *scan) probeAll(ctx context.Context, targets []Target) (*probed, error) {
	endDiscovery := s.ex.phase("discovering")
	disc, err := s.discover(ctx, append(slices.Clone(s.files), s.context...))
	endDiscovery()
	if err != nil {
		return nil, err
	}
	if err := checkFuncTargets(targets, disc); err != nil {
		return nil, err
	}
	if s.orderFree, err = resolveOrderFree(s.ex.opts.OrderFree, s.files, disc); err != nil {
		return nil, err
	}
	rep := s.newReport(s.files, disc, s.ex.loc)
	for _, t := range targets {
		if !slices.Contains(rep.Targets, t.Arg) { // a package's modules share their site-packages
			rep.Targets = append(rep.Targets, t.Arg)
		}
	}
	s.cache = s.openCache()
	probes := s.selectProbes(s.files, disc, rep)
	s.mainShards = planShards(probes, s.ex.shardsFor(probes, func(p *probe) int { return len(disc.ladder[p.Ladder]) }))
	endProbing := s.ex.phase("probing")
	results := s.ex.runRuns(ctx, s.mainShards, s.runs, disc.ladder)
	endProbing()
	// Interrupted or not: what ran is the caller's to judge.
	return &probed{report: rep, probes: probes, results: results, disc: disc}, nil
}

// checkFuncTargets reports FILE::function targets naming a function that
// the file does not define at module level.
func checkFuncTargets(targets []Target, disc *discovery) error {
	for _, t := range targets {
		if t.Func == "" {
			continue
		}
		rel, _ := filepath.Rel(t.Base, t.Path)
		m := disc.modules[filepath.ToSlash(rel)]
		if m == nil || m.Status != "ok" {
			continue // reported under modules
		}
		found := false
		for _, f := range m.Functions {
			found = found || f.Name == t.Func
		}
		if !found {
			var names []string
			for _, f := range m.Functions {
				names = append(names, f.Name)
			}
			hint := "it defines no module-level functions"
			if len(names) > 0 {
				hint = "it defines: " + strings.Join(names, ", ")
			}
			return &usageError{fmt.Sprintf("%s: no module-level function %q in %s; %s", t.Arg, t.Func, rel, hint)}
		}
	}
	return nil
}

// probe is one function the plan will call.
type probe struct {
	Index     int
	ID        string
	File      *sourceFile
	Name      string
	Arity     int
	Kinds     []string // what annotations say each required parameter takes
	Ladder    string   // the key of its rungs
	Module    int      // index into the scan's module list
	fn        *report.Function
	smelly    bool  // gets the extra hash-seed runs
	orderFree []int // parameters declared order-free
	// A method's class, its name there, kind and constructor; receivers
	// are its rungs' constructor inputs, shown in a witness.
	Class, Attr, Kind string
	Receiver          *receiverSig
	receivers         [][]string
	callees           []string
	Doctests          [][]string // its docstring examples' arguments
	TestCase          bool       // a test method, called through its runner's protocol (--tests)
	// uncalled are the rungs neither of its witness's runs called (its
	// budget spent there): a replay of those runs leaves them out too.
	uncalled map[int]bool
}

// callee is what builds the receiver of a method's rung when not its
// class itself, or "".
func (p *probe) callee(rung int) string {
	if rung < len(p.callees) {
		return p.callees[rung]
	}
	return ""
}

// receiverArgs are the displays of the arguments a rung's receiver is
// built from.
func (p *probe) receiverArgs(rung int) []string {
	if rung < len(p.receivers) {
		return p.receivers[rung]
	}
	return nil
}

// markUncalled records, for each finding, the rungs neither witness run
// called, so attribution and confirmation replay what those runs did: a
// reversed run whose budget ran out called the last rungs and then only
// the first ones, and replaying every rung up to the witness would call
// what it never did, at its slow function's cost.
func markUncalled(probes []*probe, res *results) {
	for _, p := range probes {
		w := p.fn.Witness
		if w == nil || w.Breaker != "" || len(w.Answers) < 2 {
			continue
		}
		a, b := w.Answers[0].Run, w.Answers[1].Run
		for ri, runs := range res.calls[p.Index] {
			if a < len(runs) && b < len(runs) && runs[a].kind.leftOut() && runs[b].kind.leftOut() {
				if p.uncalled == nil {
					p.uncalled = map[int]bool{}
				}
				p.uncalled[ri] = true
			}
		}
	}
}

// selectProbes decides which functions are called, and records every
// other one as not probed with its reason.
func (s *scan) selectProbes(files []sourceFile, disc *discovery, rep *report.Report) []*probe {
	var probes []*probe
	enforce := !s.ex.opts.Runtime.Isolated() && !s.ex.opts.Unsafe
	orderFree := s.orderFree
	for mi := range files {
		f := &files[mi]
		m := disc.modules[f.Rel]
		if m == nil || m.Status != "ok" {
			continue
		}
		facts := map[string]gate.Facts{}
		for _, fn := range m.Functions {
			facts[fn.Name] = fn.Facts
		}
		modRefusal, refused := gate.CheckModule(m.ModuleFacts, facts)
		ignored := s.readSuppressions(f)
		shadow := ""
		if enforce {
			shadow = shadowedBy(f.Path)
		}
		if ignored != nil {
			s.suppressions = append(s.suppressions, ignored)
		}
		var cached *cacheEntry
		if s.cache != nil && f.Func == "" {
			cached = s.cache.lookup(mi, f, s.ex.opts.OrderFree)
		}
		for _, fn := range m.Functions {
			if (f.Func != "" && fn.Name != f.Func) || (f.Func == "" && !s.ex.opts.Private && private(fn.Name)) {
				ignored.of(fn.Line, fn.Lines, "")
				continue
			}
			out := rep.AddFunction(f.Rel+"::"+fn.Name, fn.Line)
			out.Kind, out.TestCase = fn.Kind, fn.TestCase
			out.Suppressed = ignored.of(fn.Line, fn.Lines, out.ID)
			why := signatureProblem(fn)
			switch {
			case why != "":
			case fn.Skip != "":
				why = fn.Skip
			case fn.TestCase && !s.ex.opts.Tests:
				why = testCaseSkip
			case fn.TestCase && !strings.HasPrefix(fn.Attr, "test"):
				why = testHelperSkip
			case shadow != "":
				why = "gate: Python would import " + shadow + ", not the source the gate read; use a container runtime, or --unsafe"
			case enforce && modRefusal != nil:
				why = "gate: module-level code " + modRefusal.Error() + "; importing it runs that code. Use a container runtime, or --unsafe"
			case enforce && refused[fn.Name] != nil:
				why = "gate: " + refused[fn.Name].Error() + ". Use a container runtime, or --unsafe"
			}
			if why != "" {
				out.Verdict, out.Reason = VerdictNotProbed, why
				continue
			}
			out.Smells = gate.Smells(fn.Facts)
			if s.cache != nil {
				s.cache.probed[mi] = true
			}
			if cached != nil && cached.reuse(out, rep.Runs, rep.Seed) {
				continue
			}
			probes = append(probes, &probe{Index: len(probes), ID: out.ID, File: f, Name: fn.Name, Arity: fn.Required,
				Kinds: fn.Kinds, Ladder: fn.Ladder,
				Module: mi, fn: out, smelly: len(out.Smells) > 0, orderFree: orderFree[out.ID],
				Class: fn.Class, Attr: fn.Attr, Kind: fn.Kind, Receiver: fn.Receiver, receivers: disc.receivers[fn.Ladder], callees: disc.callees[fn.Ladder], Doctests: fn.Doctests,
				TestCase: fn.TestCase})
		}
	}
	return probes
}

// private says whether a function or method is private by its name: a
// private class's methods, and a class's private methods, are.
func private(name string) bool {
	class, attr, _ := strings.Cut(name, ".")
	return strings.HasPrefix(class, "_") || strings.HasPrefix(attr, "_")
}

// signatureProblem says why the ladder cannot call a function, or "".
// testCaseSkip is why a test case's methods are not probed; with
// --tests, testHelperSkip why its fixtures and helpers are not.
const (
	testCaseSkip   = "a test case: its runner gives it setUp and tearDown, which a call on a bare instance would not have (--tests runs its test methods so)"
	testHelperSkip = "a test case's fixture or helper: --tests calls its test methods only, each through setUp and tearDown"
)

func signatureProblem(fn discoveredFunction) string {
	switch {
	case fn.Async:
		return "coroutine function (async def): the ladder makes plain calls"
	case len(fn.KwonlyRequired) > 0:
		return fmt.Sprintf("keyword-only parameter %s has no default: the ladder passes positional arguments only", fn.KwonlyRequired[0])
	case fn.Required > maxArity:
		return fmt.Sprintf("%d required parameters: the ladder covers 0 to %d", fn.Required, maxArity)
	case fn.Receiver != nil && fn.Receiver.Arity > maxReceiverArity && len(fn.Receiver.Builds) == 0:
		return fmt.Sprintf("its class's constructor requires %d arguments and its package builds it no other way: receivers are built from 0 to %d", fn.Receiver.Arity, maxReceiverArity)
	}
	return ""
}

// maxArity bounds the ladder's arguments; maxReceiverArity a receiver's
// constructor's (its values are a few per parameter, not a ladder).
const (
	maxArity         = 3
	maxReceiverArity = 6
)

// resolveOrderFree turns --order-free FILE::function:param into parameter
// indices, and says clearly when one does not name a real parameter.
func resolveOrderFree(specs []string, files []sourceFile, disc *discovery) (map[string][]int, error) {
	out := map[string][]int{}
	for _, spec := range specs {
		i := strings.LastIndex(spec, ":")
		if i < 0 || !strings.Contains(spec[:i], "::") || i == len(spec)-1 {
			return nil, &usageError{fmt.Sprintf("--order-free %q: write FILE.py::function:parameter, as in pkg/mod.py::merge:items", spec)}
		}
		id, param := spec[:i], spec[i+1:]
		file, name := report.SplitID(id)
		var fn *discoveredFunction
		for _, f := range files {
			if f.Rel != file {
				continue
			}
			if m := disc.modules[f.Rel]; m != nil {
				for k := range m.Functions {
					if m.Functions[k].Name == name {
						fn = &m.Functions[k]
					}
				}
			}
		}
		if fn == nil {
			return nil, &usageError{fmt.Sprintf("--order-free %q: no function %s among the scanned modules (give the id a report of this scan writes)", spec, id)}
		}
		idx := slices.Index(fn.Params, param)
		if idx < 0 || idx >= fn.Required {
			return nil, &usageError{fmt.Sprintf("--order-free %q: %s has no required positional parameter %q (it has %s)", spec, name, param, strings.Join(fn.Params[:min(fn.Required, len(fn.Params))], ", "))}
		}
		out[id] = append(out[id], idx)
	}
	return out, nil
}

// shadowedBy names what Python imports instead of a module's source when
// something beside it takes precedence (a package folder of the same name,
// an extension module, a sourceless .pyc), or "". The host runtime's gate
// read the source, so it refuses such a module. (Cached bytecode in
// __pycache__ is never used there: its interpreters keep their bytecode
// under the scan's own PYTHONPYCACHEPREFIX.)
func shadowedBy(path string) string {
	dir, base := filepath.Split(path)
	name := strings.TrimSuffix(base, ".py")
	if name == "__init__" {
		return ""
	}
	if st, err := os.Stat(filepath.Join(dir, name, "__init__.py")); err == nil && !st.IsDir() {
		return "the package " + name + "/"
	}
	if _, err := os.Stat(filepath.Join(dir, name, "__init__.pyc")); err == nil {
		return "the package " + name + "/"
	}
	for _, pattern := range []string{name + ".*.so", name + ".so", name + ".pyc"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) > 0 {
			return filepath.Base(m[0])
		}
	}
	return ""
}
