package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/renameio/v2"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// runOptions are run's flags: every group.
type runOptions struct {
	sandboxOptions
	callOptions
	outputOptions
	runs    int
	seed    uint64
	private bool
	tests   bool
	quiet   bool
	verbose bool
	// forceExclude applies the excludes to named files too.
	forceExclude bool
	// extendExclude adds to exclude: a config's exclude and the command
	// line's both hold.
	extendExclude []string
	// ignoreCauses, selectCauses and perFileIgnores take causes out of
	// the exit status.
	ignoreCauses, selectCauses, perFileIgnores []string
	measure                                    bool
	smellRuns                                  int
	orderFree                                  []string
	baseline                                   string
	include                                    []string
	exclude                                    []string
	config                                     string
	noConfig                                   bool
	configDir                                  string // the config file's folder: include and exclude are relative to it
	packages                                   []string
	allPkgs                                    bool
	noCache                                    bool
	explain                                    time.Duration
	cacheDir                                   string
	shard                                      string
}

// outputOptions are where a report goes and in what form: the flags of
// run, merge and render alike.
type outputOptions struct {
	format string
	output string
	show   []string
}

// showable are --show's values: what the text report lists beside the
// findings when asked.
var showable = []string{"deterministic", "look"}

func (o *outputOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var(newChoice(&o.format, "format", report.Formats[0].Name, report.FormatNames()), "format", "report format: "+report.FormatsHelp())
	fs.StringSliceVar(&o.show, "show", nil, "also list: deterministic (with --format text: every deterministic function; they are counted anyway), look (with --format github: a notice for each look)")
	fs.StringVarP(&o.output, "output", "o", "", "write the report to this file instead of standard output, replacing it only once the whole report is written")
}

// check says what is wrong with the format or --show's values.
func (o *outputOptions) check() error {
	if _, ok := report.FormatNamed(o.format); !ok {
		return usageErrorf("--format %q: choose %s", o.format, strings.Join(report.FormatNames(), ", "))
	}
	for _, s := range o.show {
		if !slices.Contains(showable, s) {
			return usageErrorf("--show %q: choose %s", s, strings.Join(showable, ", "))
		}
	}
	return nil
}

func (o *runOptions) AddFlags(fs *pflag.FlagSet) {
	d := engine.DefaultOptions()
	o.sandboxOptions.AddFlags(fs)
	o.callOptions.AddFlags(fs)
	o.outputOptions.AddFlags(fs)
	fs.IntVar(&o.runs, "runs", d.Runs, "fresh interpreters per shard, each under different conditions (at least 2)")
	fs.StringArrayVar(&o.orderFree, "order-free", nil, "declare an argument whose order must not matter, as `ID:PARAM` (FILE.py::function:parameter; repeatable)")
	fs.IntVar(&o.smellRuns, "smell-runs", d.SmellRuns, "extra hash-seed runs for functions whose body smells of nondeterminism (0 for none)")
	fs.Uint64Var(&o.seed, "seed", 0, "reproduce a whole scan's conditions; a new one is drawn and printed in the report when not given")
	fs.BoolVar(&o.private, "private", false, "also probe functions whose names start with an underscore")
	fs.BoolVar(&o.tests, "tests", false, "also probe test cases' test methods, each as its runner calls it (setUp, the test, tearDown) on a fresh instance: a flaky test is a finding")
	fs.BoolVar(&o.measure, "measure", false, "add each worker's peak memory to the report (which then differs from scan to scan)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print no progress on standard error")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "say on standard error what each phase (discovering, probing, attributing, confirming) took, where its interpreters' time went and which functions were slowest")
	fs.StringArrayVar(&o.include, "include", nil, "read only the files under a directory target that match this `GLOB` (src/**/*.py; repeatable)")
	fs.StringSliceVar(&o.ignoreCauses, "ignore", nil, "a `CAUSE` whose findings do not fail the scan (hash-seed, home, ...; comma-separated or repeated); they are reported, as ignored")
	fs.StringSliceVar(&o.selectCauses, "select", nil, "only findings with one of these causes fail the scan (`CAUSE`, comma-separated or repeated); the rest are reported, as ignored")
	fs.StringArrayVar(&o.perFileIgnores, "per-file-ignores", nil, "ignore causes in the files a glob matches, as `GLOB:CAUSES` (tests/*:home,locale; repeatable)")
	fs.StringArrayVar(&o.extendExclude, "extend-exclude", nil, "more `GLOB`s to skip, added to --exclude and the config's exclude rather than replacing them (repeatable)")
	fs.BoolVar(&o.forceExclude, "force-exclude", false, "apply the excludes (--exclude, the default excluded folders, .gitignore) to files named on the command line too, as a pre-commit hook names them")
	fs.StringArrayVar(&o.exclude, "exclude", nil, "skip the files and folders under a directory target that match this `GLOB` (tests, **/_vendor/**; repeatable)")
	fs.StringArrayVar(&o.packages, "package", nil, "scan an installed distribution, by its `NAME` or the name it is imported by, in the environment of --python (repeatable); ids are relative to its site-packages")
	fs.DurationVar(&o.explain, "explain-budget", engine.DefaultOptions().ExplainBudget, "how long naming one finding's causes may take, in interpreter time, before only its base runs are made and its cause is unattributed (budget); never changes a verdict (0 for none)")
	fs.BoolVar(&o.noCache, "no-cache", os.Getenv(noCacheVar) != "", "neither read nor write the verdict cache: judge every module afresh (for a release audit: the cache does not see the data files a module reads; also "+noCacheVar+"=1)")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "keep the verdict cache in this `DIR` (default .nondet-sandbox-cache in the project's root, or the user's cache folder for --package and --all-packages)")
	fs.BoolVar(&o.allPkgs, "all-packages", false, "scan every distribution installed in the environment of --python, with a census per distribution")
	fs.StringVar(&o.config, "config", "", "read settings from this TOML file instead of the pyproject.toml found from the first target upward")
	fs.BoolVar(&o.noConfig, "no-config", false, "read no config file")
	fs.StringVar(&o.baseline, "baseline", "", "a JSON report of an earlier scan: every finding is reported, but only those it did not have (by id and cause) fail the scan")
	fs.StringVar(&o.shard, "shard", "", "scan only part K of N of the files (`K/N`, K from 1; give every part the same --seed), for a CI matrix or an Indexed Job: nondet-sandbox merge joins the parts' JSON reports")
}

func newRunCommand() *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run PATH...",
		Short: "Probe every module-level function under PATH (a directory, FILE.py or FILE.py::function)",
		Example: `  nondet-sandbox run src/
  nondet-sandbox run src/util.py::normalise
  nondet-sandbox run --format json --seed 7 fixtures/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := opts.configure(cmd.Flags(), args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// After the config file, which may name the packages.
			if len(args) == 0 && !opts.allPkgs && len(opts.packages) == 0 {
				return usageErrorf("give a PATH to scan, or --package NAME, or --all-packages (or package in pyproject.toml)")
			}
			opts.configDir = dir
			return runRun(cmd.Context(), opts, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("seed").DefValue = "random"
	completeChoices(cmd, "runtime", "format")
	return cmd
}

// selection is what a scan takes: its files, the packages and targets
// they came from, and the part of a split scan.
type selection struct {
	src     *engine.Sources
	pkgs    []engine.Package
	targets []engine.Target
	part    *report.Part
}

// sources are the files a scan of args takes, as run and image bake both
// see them: the targets and the packages, the config's and the flags'
// filters, the part. Nil when every file was excluded (said on stderr).
func (opts *runOptions) sources(ctx context.Context, args []string, stderr io.Writer) (*selection, error) {
	part, err := parseShard(opts.shard, opts.seed)
	if err != nil {
		return nil, err
	}
	targets, err := parseTargets(args)
	if err != nil {
		return nil, err
	}
	var pkgs []engine.Package
	if len(opts.packages) > 0 || opts.allPkgs {
		if reg, ok := sandbox.Lookup(opts.runtimeName); ok && reg.ImageInterpreter {
			return nil, usageErrorf("--package reads the environment of --python on this machine; the %s runtime probes with its image's interpreter: use another runtime", opts.runtimeName)
		}
		found, err := engine.FindPackages(ctx, opts.python, opts.packages, opts.allPkgs)
		for _, note := range found.Notes() {
			fmt.Fprintln(stderr, "nondet-sandbox: "+note)
		}
		if err != nil {
			return nil, err
		}
		pkgs = found.Found
		targets = append(targets, engine.PackageTargets(pkgs)...)
	}
	filter := engine.Filter{Base: opts.configDir, Include: opts.include, Exclude: append(slices.Clip(opts.exclude), opts.extendExclude...), Force: opts.forceExclude, Root: projectRoots()}
	if filter.Base == "" {
		filter.Base, _ = os.Getwd()
	}
	src, err := engine.Resolve(targets, filter)
	if errors.Is(err, engine.ErrAllExcluded) {
		fmt.Fprintln(stderr, "nondet-sandbox: "+err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, w := range src.Warnings() {
		fmt.Fprintln(stderr, "nondet-sandbox: warning: "+w)
	}
	if part != nil {
		src = src.Part(part.Index, part.Of)
	}
	return &selection{src: src, pkgs: pkgs, targets: targets, part: part}, nil
}

// closeRuntime releases what a runtime holds (the Docker client).
func closeRuntime(rt sandbox.Runtime) {
	if c, ok := rt.(io.Closer); ok {
		_ = c.Close()
	}
}

// newRuntime makes the runtime --runtime names (its registration's New);
// closeRuntime releases it.
func newRuntime(ctx context.Context, name string, o sandboxOptions) (sandbox.Runtime, error) {
	if name == "auto" {
		return autoRuntime(ctx, o)
	}
	reg, ok := sandbox.Lookup(name)
	if !ok {
		return nil, usageErrorf("unknown runtime %q; choose %s", name, strings.Join(runtimeNames(), ", "))
	}
	rt, err := reg.New(ctx, o.settings())
	if err != nil {
		return nil, engine.Unavailable(err)
	}
	return rt, nil
}

// autoRuntime is the strongest sandbox this machine gives the caller: the
// registered runtimes in their auto order (embedded for root, rootless
// for anyone, then Docker). When none of them runs it says why and names
// --runtime host, which is no sandbox, rather than choose it.
func autoRuntime(ctx context.Context, o sandboxOptions) (sandbox.Runtime, error) {
	var why []string
	for _, reg := range sandbox.AutoOrder(os.Geteuid() == 0) {
		rt, err := newRuntime(ctx, reg.Name, o)
		if err == nil {
			if len(why) > 0 && o.notes != nil {
				fmt.Fprintf(o.notes, "nondet-sandbox: --runtime auto chose %s (%s)\n", reg.Name, strings.Join(why, "; "))
			}
			return rt, nil
		}
		why = append(why, reg.Name+": "+err.Error())
	}
	return nil, engine.Unavailable(sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf(
		"no sandbox runs here (%s); --runtime host runs probes as plain processes, as you, with only the static gate between the scanned code and your files", strings.Join(why, "; "))))
}

func usageErrorf(format string, args ...any) error { return engine.Usagef(format, args...) }

func runRun(ctx context.Context, opts runOptions, args []string, stdout, stderr io.Writer) error {
	// Everything the user typed is checked before any sandbox is built.
	if err := opts.outputOptions.check(); err != nil {
		return err
	}
	if opts.runs < 2 {
		return usageErrorf("--runs %d: at least 2 runs are needed to compare answers", opts.runs)
	}
	if opts.smellRuns < 0 {
		return usageErrorf("--smell-runs %d: 0 for none, or a positive count", opts.smellRuns)
	}
	if err := opts.sandboxOptions.check(); err != nil {
		return err
	}
	if err := opts.callOptions.check(); err != nil {
		return err
	}
	sel, err := opts.sources(ctx, args, stderr)
	if err != nil || sel == nil {
		return err
	}
	src, pkgs, part, targets := sel.src, sel.pkgs, sel.part, sel.targets
	var base *report.Report
	if opts.baseline != "" {
		if base, err = readReport(opts.baseline, "--baseline"); err != nil {
			return err
		}
	}
	// The report's file is opened before the scan, so a path that cannot
	// be written fails at once, not after every probe has run; it replaces
	// the old one only once the whole report is written.
	out, err := openOutput(opts.output, stdout)
	if err != nil {
		return err
	}
	defer out.abort()
	out.show = opts.show
	if src.Len() == 0 {
		// More parts than files: this part scans nothing, and says so.
		rep := &report.Report{Tool: report.Tool{Name: "nondet-sandbox", Version: version}, Runtime: opts.runtimeName,
			Python: opts.python, Seed: opts.seed, Targets: args, Runs: []sandbox.RunConditions{}, Skipped: []sandbox.Support{},
			Modules: []report.Module{}, Functions: []*report.Function{}, Part: part}
		rep.Finish()
		return out.report(opts.format, rep)
	}
	opts.notes, opts.unconfined = stderr, opts.unsafe
	rt, err := newRuntime(ctx, opts.runtimeName, opts.sandboxOptions)
	if err != nil {
		return err
	}
	defer closeRuntime(rt)
	if !rt.Isolated() {
		// Said on every scan, quiet or not: what runs here runs as you.
		guard := rt.Capabilities().Guard
		if guard == "" {
			guard = "nothing else confines it (--unsafe)"
		}
		fmt.Fprintf(stderr, "nondet-sandbox: warning: the host runtime is not a sandbox: the scanned code runs as you, on this machine, behind the static gate (which can be bypassed); %s\n", guard)
	}
	seed := opts.seed
	if seed == 0 {
		seed = rand.Uint64N(1<<31) + 1
	}
	cache := cacheDir()
	verdicts, secret := opts.verdictCache(sel, stderr)
	eo := engine.Options{
		VerdictCache: verdicts, CacheSecret: secret, CacheKey: opts.sandboxOptions.cacheKey(rt),
		Runtime: rt, Python: opts.python, Runs: opts.runs, Jobs: opts.jobs, Seed: seed,
		Unsafe: opts.unsafe, Private: opts.private, Tests: opts.tests, CallTimeout: opts.callTimeout, IdleTimeout: opts.idleTimeout, FunctionBudget: opts.budget(), ExplainBudget: opts.explainBudget(), SmellRuns: smellRuns(opts.smellRuns), OrderFree: opts.orderFree,
		Limits:   opts.limits(),
		CacheDir: cache, Version: version, CallerHashSeed: os.Getenv("PYTHONHASHSEED"),
		Notes: stderr, Measure: opts.measure, LocationBase: locationBase(),
	}
	switch {
	case opts.quiet:
	case isTerminal(stderr) && os.Getenv("TERM") != "dumb":
		var finish func()
		eo.Progress, finish = terminalProgress(stderr)
		defer finish()
	default:
		// A CI log: a plain line at most every progressEvery.
		eo.Progress = plainProgress(stderr, time.Now, progressEvery)
	}
	if opts.verbose {
		eo.CacheLog = stderr
		eo.PhaseDone = func(c engine.PhaseCost) {
			waits := ""
			if c.NotWaited > 0 {
				waits = fmt.Sprintf(", %d calls past the call limit in an earlier run not waited for again", c.NotWaited)
			}
			if c.OverBudget > 0 {
				waits += fmt.Sprintf(", %d times a function's calls took the function budget in a run", c.OverBudget)
			}
			fmt.Fprintf(stderr, "nondet-sandbox: %s took %s, %d interpreters, %d children%s\n", c.Phase, c.Wall.Round(10*time.Millisecond), c.Interpreters, c.Children, waits)
			if s := c.Spent; s != (engine.Spent{}) {
				r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
				fmt.Fprintf(stderr, "nondet-sandbox: %s: interpreter time %s starting, %s importing, %s in calls, %s in calls past the limit, %s forking, relaying and exiting\n",
					c.Phase, r(s.Start), r(s.Imports), r(s.Calls), r(s.Hangs), r(s.Other))
			}
			if len(c.Slowest) > 0 {
				var parts []string
				for _, f := range c.Slowest {
					parts = append(parts, fmt.Sprintf("%s %s (%d calls)", f.ID, f.Time.Round(10*time.Millisecond), f.Calls))
				}
				fmt.Fprintf(stderr, "nondet-sandbox: %s: slowest: %s\n", c.Phase, strings.Join(parts, ", "))
			}
		}
	}
	rep, err := opts.scanSources(ctx, eo, src, pkgs, stderr)
	interrupted := errors.Is(err, engine.ErrInterrupted) && rep != nil
	if err != nil && !interrupted {
		return err
	}
	rep.Part = part
	rep.OCIRuntime = runtimeVariant(rt, opts.sandboxOptions)
	if len(pkgs) > 0 {
		rep.Packages = engine.ReportPackages(pkgs)
		rep.Finish()
	}
	if rules, err := opts.ignoreRules(); err != nil {
		return err
	} else if len(rules) > 0 {
		rep.ApplyIgnores(rules)
	}
	if interrupted {
		return writePartial(opts, rep, out, stdout, stderr, err)
	}
	if base != nil {
		for _, note := range baselineNotes(base, rep, rep.ApplyBaseline(base)) {
			fmt.Fprintln(stderr, "nondet-sandbox: "+report.TerminalSafe(note))
		}
	}
	if err := out.report(opts.format, rep); err != nil {
		return err
	}
	if len(rep.Failing()) > 0 {
		return errFindings
	}
	if u := unjudged(rep, targets); len(u) > 0 {
		return unjudgedError(u)
	}
	return nil
}

// scanSources scans src: at once, or, for an audit of several installed
// distributions, one distribution at a time, joined into one report. Each
// says a line as it ends (unless --quiet), so a long audit is heard from
// in a CI log, and only one distribution's calls are held at a time.
func (opts *runOptions) scanSources(ctx context.Context, eo engine.Options, src *engine.Sources, pkgs []engine.Package, stderr io.Writer) (*report.Report, error) {
	if len(pkgs) < 2 {
		return engine.ScanSources(ctx, eo, src)
	}
	parts := src.ByPackage(pkgs)
	var whole *report.Report
	for i, part := range parts {
		start := time.Now()
		rep, err := engine.ScanSources(ctx, eo, part.Sources)
		interrupted := errors.Is(err, engine.ErrInterrupted) && rep != nil
		if err != nil && !interrupted {
			return nil, err
		}
		whole = joinReports(whole, rep)
		if !opts.quiet {
			what := "the paths given"
			if p := part.Package; p != nil {
				what = p.Name + " " + p.Version
			}
			c := rep.Census
			cached := ""
			if cu := rep.Cache; cu != nil && cu.Reused > 0 {
				cached = fmt.Sprintf("; %d of %d modules unchanged", cu.Reused, cu.Modules)
			}
			fmt.Fprintf(stderr, "nondet-sandbox: %d of %d: %s: %s: %d nondeterministic · %d deterministic · %d look · %d not probed (%s%s)\n",
				i+1, len(parts), report.TerminalSafe(what), fmt.Sprintf("%d functions", len(rep.Functions)), c.Nondeterministic, c.Deterministic, c.Look, c.NotProbed,
				time.Since(start).Round(100*time.Millisecond), cached)
		}
		if interrupted {
			whole.Partial = true
			whole.Finish()
			return whole, err
		}
	}
	whole.Finish()
	return whole, nil
}

// joinReports adds the report of one distribution's scan to the audit's:
// one seed, so the same runs; their modules, functions and counts add up.
func joinReports(whole, rep *report.Report) *report.Report {
	if whole == nil {
		return rep
	}
	whole.Modules = append(whole.Modules, rep.Modules...)
	whole.Functions = append(whole.Functions, rep.Functions...)
	whole.UnusedSuppressions = append(whole.UnusedSuppressions, rep.UnusedSuppressions...)
	whole.Excluded = append(whole.Excluded, rep.Excluded...)
	whole.Processes += rep.Processes
	whole.Calls += rep.Calls
	for _, t := range rep.Targets {
		if !slices.Contains(whole.Targets, t) {
			whole.Targets = append(whole.Targets, t)
		}
	}
	if rep.Cache != nil {
		if whole.Cache == nil {
			whole.Cache = &report.CacheUse{}
		}
		whole.Cache.Modules += rep.Cache.Modules
		whole.Cache.Reused += rep.Cache.Reused
	}
	if m := rep.Measurements; m != nil {
		if whole.Measurements == nil {
			whole.Measurements = &report.Measurements{}
		}
		whole.Measurements.Workers = append(whole.Measurements.Workers, m.Workers...)
	}
	return whole
}

// unjudgedError says what could not be judged, one line each, and why the
// exit status is not 0.
func unjudgedError(items []string) error {
	var b strings.Builder
	for _, u := range items {
		// Each line of the message starts as the first does.
		b.WriteString("not judged: " + report.TerminalSafe(u) + "\nnondet-sandbox: ")
	}
	return fmt.Errorf("%sno findings, but %d could not be judged (exit status %d); fix them, or leave them out of the targets (--exclude): %w",
		b.String(), len(items), exitUnjudged, errUnjudged)
}

// baselineNotes says when a baseline cannot be doing what the user
// meant: it was made from other targets (what they did not hold is new to
// it), or none of its ids is among this scan's, so it silently matches
// nothing.
func baselineNotes(base, rep *report.Report, matched int) []string {
	var notes []string
	if !slices.Equal(base.Targets, rep.Targets) {
		notes = append(notes, fmt.Sprintf("the baseline was made from the targets %q, this scan from %q: a finding outside its targets counts as new",
			base.Targets, rep.Targets))
	}
	ids := map[string]bool{}
	for _, f := range rep.Functions {
		ids[f.ID] = true
	}
	known := 0
	for _, f := range base.Functions {
		if f != nil && ids[f.ID] {
			known++
		}
	}
	if len(base.Functions) > 0 && known == 0 {
		notes = append(notes, fmt.Sprintf("none of the baseline's %d function ids is among this scan's %d (%d findings matched): it applies to nothing here",
			len(base.Functions), len(rep.Functions), matched))
	}
	return notes
}

// unjudged lists what a scan was given and could not judge: the modules
// that could not be read or parsed, and the functions named on the
// command line (FILE::function) that were not probed, with why.
func unjudged(rep *report.Report, targets []engine.Target) []string {
	var out []string
	for _, m := range rep.Modules {
		switch m.Status {
		case "unparseable", "unreadable", "too-large":
			out = append(out, fmt.Sprintf("%s: %s: %s", m.Path, m.Status, m.Error))
		}
	}
	for _, f := range rep.Functions {
		if f.Verdict != report.VerdictNotProbed {
			continue
		}
		path, name := report.SplitID(f.ID)
		for _, t := range targets {
			if t.Func == name && (filepath.ToSlash(t.Path) == path || strings.HasSuffix(filepath.ToSlash(t.Path), "/"+path)) {
				out = append(out, fmt.Sprintf("%s: not probed: %s", f.ID, f.Reason))
				break
			}
		}
	}
	return out
}

// progressEvery is how often a log that is not a terminal hears how a
// scan is going.
const progressEvery = 10 * time.Second

// plainProgress reports progress as plain lines, for a log that is not a
// terminal: a line when a phase starts, one at its first interpreter,
// then at most one every interval, each with the count, the share and an
// estimate of what is left from the phase's rate so far. Interpreters
// finish on several goroutines.
func plainProgress(w io.Writer, now func() time.Time, interval time.Duration) func(engine.Progress) {
	var mu sync.Mutex
	phase := ""
	start, last := now(), time.Time{}
	return func(p engine.Progress) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		done, planned := p.Done, p.Planned
		if p.Phase != phase {
			phase, start, last = p.Phase, t, time.Time{}
			if done == 0 {
				fmt.Fprintf(w, "nondet-sandbox: %s\n", phase)
				return
			}
		}
		if done == 0 || (!last.IsZero() && t.Sub(last) < interval) {
			return
		}
		last = t
		line := fmt.Sprintf("nondet-sandbox: %s: %d of %d interpreters", phase, done, planned)
		if planned > 0 {
			line += fmt.Sprintf(" (%d%%)", done*100/planned)
		}
		if elapsed := t.Sub(start); done > 0 && planned > done && elapsed > 0 {
			left := time.Duration(float64(elapsed) / float64(done) * float64(planned-done))
			line += fmt.Sprintf(", about %s left", left.Round(time.Second))
		}
		fmt.Fprintln(w, line)
	}
}

// output is where a report goes: standard output, or -o's file. A file
// is written atomically: a temporary file in the same folder, renamed over
// the path only once the whole report is written, so a scan that is
// interrupted or fails leaves the previous report as it was. A device or
// a pipe (/dev/null, /dev/stdout, a shell's process substitution) is
// written to as it is: a file renamed over it would replace the node.
type output struct {
	w       io.Writer
	pending *renameio.PendingFile
	direct  *os.File // -o's device or pipe
	show    []string // --show
}

// ignoreRules are the causes --ignore, --select and --per-file-ignores
// take out of the exit status; a cause no finding can have is a usage
// error, so a typo does not silently ignore nothing.
func (o *runOptions) ignoreRules() ([]report.IgnoreRule, error) {
	known := engine.CauseNames()
	check := func(flag string, causes []string) error {
		for _, c := range causes {
			if !slices.Contains(known, c) {
				return usageErrorf("%s %q is not a cause; choose from %s", flag, c, strings.Join(known, ", "))
			}
		}
		return nil
	}
	var rules []report.IgnoreRule
	if err := check("--ignore", o.ignoreCauses); err != nil {
		return nil, err
	}
	if len(o.ignoreCauses) > 0 {
		rules = append(rules, report.IgnoreRule{Causes: o.ignoreCauses})
	}
	if err := check("--select", o.selectCauses); err != nil {
		return nil, err
	}
	if len(o.selectCauses) > 0 {
		var rest []string
		for _, c := range known {
			if !slices.Contains(o.selectCauses, c) {
				rest = append(rest, c)
			}
		}
		rules = append(rules, report.IgnoreRule{Causes: rest})
	}
	for _, spec := range o.perFileIgnores {
		glob, list, ok := strings.Cut(spec, ":")
		if !ok || glob == "" || list == "" || !doublestar.ValidatePattern(glob) {
			return nil, usageErrorf("--per-file-ignores %q: give GLOB:CAUSE,... such as tests/*:home,locale", spec)
		}
		causes := strings.Split(list, ",")
		for i := range causes {
			causes[i] = strings.TrimSpace(causes[i])
		}
		if err := check("--per-file-ignores", causes); err != nil {
			return nil, err
		}
		rules = append(rules, report.IgnoreRule{Glob: glob, Causes: causes})
	}
	return rules, nil
}

// writePartial writes the report of an interrupted scan, marked partial,
// and returns err (the interruption: exit 130). Never over -o's file, which
// may be a committed baseline: beside it, as FILE.partial (a device or a
// pipe takes it as it is).
func writePartial(opts runOptions, rep *report.Report, out *output, stdout, stderr io.Writer, err error) error {
	dest := "standard output"
	if out.direct != nil {
		dest = opts.output
	} else if opts.output != "" {
		out.abort()
		dest = opts.output + ".partial"
		var oerr error
		if out, oerr = openOutput(dest, stdout); oerr != nil {
			return errors.Join(err, oerr)
		}
		defer out.abort()
	}
	if werr := out.report(opts.format, rep); werr != nil {
		return errors.Join(err, werr)
	}
	fmt.Fprintf(stderr, "nondet-sandbox: interrupted: the report of what ran is marked partial, in %s\n", dest)
	return err
}

// openOutput opens -o's file (stdout when none) for a report. Opening
// first makes a folder that cannot be written fail at once, not after
// every probe has run.
func openOutput(path string, stdout io.Writer) (*output, error) {
	if path == "" {
		return &output{w: stdout}, nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, usageErrorf("--output: %s is a folder; give a file's path", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, usageErrorf("--output: cannot write %s: %v", path, err)
		}
		return &output{w: f, direct: f}, nil
	}
	// Through a link, the file it leads to is replaced, not the link.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)),
		renameio.WithPermissions(0o644), renameio.WithExistingPermissions())
	if err != nil {
		return nil, usageErrorf("--output: cannot write %s: %v", path, err)
	}
	return &output{w: f, pending: f}, nil
}

// report writes rep in format and, for a file, puts it in place.
func (o *output) report(format string, rep *report.Report) error {
	text := report.TextOptions{Color: colorful(o.w), Deterministic: slices.Contains(o.show, "deterministic"), Looks: slices.Contains(o.show, "look"), Path: fromHere()}
	if err := writeReport(o.w, format, rep, text); err != nil {
		return err
	}
	if o.direct != nil {
		if err := o.direct.Close(); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		o.direct = nil
		return nil
	}
	if o.pending == nil {
		return nil
	}
	if err := o.pending.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return nil
}

// abort drops a file that was not put in place; after report, nothing.
func (o *output) abort() {
	if o.pending != nil {
		_ = o.pending.Cleanup()
	}
	if o.direct != nil {
		_ = o.direct.Close()
		o.direct = nil
	}
}

// writeReport writes rep in one of report.Formats (text when format
// names none); text in colour when text.Color.
func writeReport(w io.Writer, format string, rep *report.Report, text report.TextOptions) error {
	f, ok := report.FormatNamed(format)
	if !ok {
		f = report.Formats[0]
	}
	return f.Write(w, rep, text)
}

// colorful says whether w is a terminal that takes colour: not when
// NO_COLOR is set (no-color.org) or TERM is dumb.
func colorful(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// cacheDir holds generated locales. For root it is outside any home
// directory: containers bind it, and a probe can read its bind's source
// path in /proc/self/mountinfo.
func cacheDir() string {
	if os.Geteuid() == 0 {
		return "/var/cache/nondet-sandbox"
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "nondet-sandbox")
	}
	return ""
}

// smellRuns maps the flag (0 is none) to the engine's option (0 is the
// default, negative none).
func smellRuns(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// parseTargets checks the command line's paths and makes their ids
// relative to their project's root (see projectRoot), so a baseline made
// with `run src/` matches `run .`, a hook's staged files and a run from
// another folder.
func parseTargets(args []string) ([]engine.Target, error) {
	var targets []engine.Target
	root := projectRoots()
	for _, a := range args {
		t, err := engine.ParseTarget(a)
		if err != nil {
			return nil, err
		}
		if r := root(t.Base); r != "" && within(t.Path, r) {
			t.Base = r
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// projectRoots is projectRoot from the working directory, with a cache.
func projectRoots() func(dir string) string {
	wd, _ := os.Getwd()
	found := map[string]string{}
	return func(dir string) string { return projectRoot(dir, wd, found) }
}

// projectRoot is the folder ids under dir are relative to: that of the
// pyproject.toml with a [tool.nondet-sandbox] table nearest above dir
// (the one a scan of dir reads, whatever --config or --no-config say, so
// ids do not move with flags), else the root of the git repository dir is
// in, else the working directory wd. found caches answers by dir.
func projectRoot(dir, wd string, found map[string]string) string {
	if root, ok := found[dir]; ok {
		return root
	}
	root := wd
	if path, err := findConfig(dir, io.Discard); err == nil && path != "" {
		root = filepath.Dir(path)
	} else {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
				root = d
				break
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	found[dir] = root
	return root
}

// locationBase is what report locations are relative to: the repository
// the working directory is in (code scanning's root), else the working
// directory itself.
func locationBase() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return wd
		}
	}
}

// fromHere turns a path from the repository root (locationBase) into one
// from the working directory, for people and editors.
func fromHere() func(string) string {
	wd, err := os.Getwd()
	base := locationBase()
	if err != nil || base == "" {
		return nil
	}
	return func(loc string) string {
		rel, err := filepath.Rel(wd, filepath.Join(base, filepath.FromSlash(loc)))
		if err != nil {
			return loc
		}
		return filepath.ToSlash(rel)
	}
}

// parseShard reads --shard K/N; nil when not given. Every part must draw
// the same conditions, so a seed is required.
func parseShard(v string, seed uint64) (*report.Part, error) {
	if v == "" {
		return nil, nil
	}
	var k, n int
	if _, err := fmt.Sscanf(v, "%d/%d", &k, &n); err != nil || fmt.Sprintf("%d/%d", k, n) != v || n < 1 || k < 1 || k > n {
		return nil, usageErrorf("--shard %q: give K/N with 1 <= K <= N, such as 2/4 (the second of four parts)", v)
	}
	if seed == 0 {
		return nil, usageErrorf("--shard %s needs --seed: every part must run under the same conditions to be merged", v)
	}
	return &report.Part{Index: k, Of: n}, nil
}

// runtimeVariant names the flavour of rt that ran (the OCI runtime binary:
// runc, crun, runsc), for the report; "" for runtimes of one flavour.
func runtimeVariant(rt sandbox.Runtime, o sandboxOptions) string {
	reg, ok := sandbox.Lookup(rt.Name())
	if !ok || reg.Variant == nil {
		return ""
	}
	return reg.Variant(o.settings())
}

// terminalProgress is a progress bar on a terminal: one per phase, its
// count and timer from zero, of the interpreters the phase has planned so
// far (a spinner until it has planned any: a bar of zero is a finished
// one, which then stays still).
func terminalProgress(w io.Writer) (func(engine.Progress), func()) {
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("discovering"),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionSetItsString("interpreters"))
	var mu sync.Mutex
	phase, planned := "", -1
	return func(p engine.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Phase != phase {
			phase, planned = p.Phase, -1
			bar.Reset()
			bar.Describe(p.Phase)
		}
		if p.Planned > 0 && p.Planned != planned {
			planned = p.Planned
			bar.ChangeMax(p.Planned)
		}
		_ = bar.Set(p.Done)
	}, func() { _ = bar.Finish() }
}

// explainBudget is --explain-budget as the engine takes it: 0 is none.
func (o *runOptions) explainBudget() time.Duration {
	if o.explain == 0 {
		return -1
	}
	return o.explain
}
