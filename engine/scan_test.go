package engine_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/report"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/gate"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
)

// cacheDir is shared by every test, so the second locale is generated once.
var cacheDir string

func TestMain(m *testing.M) {
	host.Init() // the host runtime's probes run under this binary as their shim
	dir, err := os.MkdirTemp("", "nondet-sandbox-test-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// scanOn runs a real scan on the given runtime with a real interpreter:
// an integration test, out of the unit tier (-short).
func scanOn(t *testing.T, rt sandbox.Runtime, mutate func(*engine.Options), args ...string) *report.Report {
	t.Helper()
	testenv.Integration(t)
	opts := engine.Options{
		Runtime: rt, Python: testenv.Python(t), Runs: 3, Jobs: 2, Seed: 11,
		CallTimeout: 3 * time.Second, CacheDir: cacheDir,
	}
	if mutate != nil {
		mutate(&opts)
	}
	var targets []engine.Target
	for _, a := range args {
		tg, err := engine.ParseTarget(a)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	rep, err := engine.Scan(context.Background(), opts, targets)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func scan(t *testing.T, mutate func(*engine.Options), args ...string) *report.Report {
	t.Helper()
	return scanOn(t, host.New(), mutate, args...)
}

func fn(t *testing.T, rep *report.Report, id string) *report.Function {
	t.Helper()
	f := rep.Function(id)
	if f == nil {
		var ids []string
		for _, f := range rep.Functions {
			ids = append(ids, f.ID)
		}
		t.Fatalf("no function %s in report; have %v", id, ids)
	}
	return f
}

func module(t *testing.T, rep *report.Report, path string) report.Module {
	t.Helper()
	for _, m := range rep.Modules {
		if m.Path == path {
			return m
		}
	}
	t.Fatalf("no module %s in report: %+v", path, rep.Modules)
	return report.Module{}
}

func TestContainment(t *testing.T) {
	testenv.Integration(t)
	// --unsafe: the gate would refuse os.kill and ctypes; containment is
	// what is under test.
	rep := scan(t, func(o *engine.Options) { o.Unsafe = true }, "testdata/contain")
	cases := []struct {
		id, kind, detail string
	}{
		{"misbehave.py::hangs", "timeout", "used no CPU"}, // blocked: ended at the idle limit
		{"misbehave.py::spins", "timeout", "call limit"},
		{"misbehave.py::exits", "crash", "exit status 3"},
		{"misbehave.py::kills_itself", "crash", "SIGKILL"},
		{"misbehave.py::segfaults", "crash", "SIGSEGV"},
		{"misbehave.py::leaks_thread", "thread", "non-daemon thread"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			f := fn(t, rep, c.id)
			found := false
			for _, e := range f.Contained {
				found = found || e.Kind == c.kind && strings.Contains(e.Detail, c.detail)
			}
			if !found {
				t.Fatalf("%s: want a contained %s event mentioning %q, got %+v (verdict %s: %s)", c.id, c.kind, c.detail, f.Contained, f.Verdict, f.Reason)
			}
		})
	}
	// Every other function's results survive, printing included: stdout
	// belongs to the scanned code and cannot forge a record.
	for _, id := range []string{"misbehave.py::fine", "misbehave.py::prints"} {
		f := fn(t, rep, id)
		if f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered != f.Rungs.Total {
			t.Errorf("%s: want deterministic with every rung answered, got %s (%+v): %s", id, f.Verdict, f.Rungs, f.Reason)
		}
	}
	if f := fn(t, rep, "misbehave.py::hangs"); f.Verdict != engine.VerdictLook || f.Rungs.TimedOut == 0 {
		t.Errorf("hangs: want a look with timed-out rungs, got %s %+v", f.Verdict, f.Rungs)
	}
}

func TestBrokenModulesAreReportedAndTheScanGoesOn(t *testing.T) {
	rep := scan(t, nil, "testdata/broken")
	if m := module(t, rep, "bad_syntax.py"); m.Status != "unparseable" || !strings.Contains(m.Error, "SyntaxError") {
		t.Errorf("bad_syntax.py: %+v", m)
	}
	if m := module(t, rep, "not_utf8.py"); m.Status != "unparseable" {
		t.Errorf("not_utf8.py: %+v", m)
	}
	if m := module(t, rep, "raises_on_import.py"); m.Status != "import-failed" || !strings.Contains(m.Error, "RuntimeError: this module refuses") {
		t.Errorf("raises_on_import.py: %+v", m)
	}
	if f := fn(t, rep, "raises_on_import.py::never"); f.Verdict != engine.VerdictNotProbed || !strings.Contains(f.Reason, "import failed: RuntimeError") {
		t.Errorf("never: %s %s", f.Verdict, f.Reason)
	}
	if f := fn(t, rep, "ok.py::variadic"); f.Verdict != engine.VerdictDeterministic {
		t.Errorf("variadic: *args is left empty, and the function probed: %s %s", f.Verdict, f.Reason)
	}
	if f := fn(t, rep, "ok.py::good"); f.Verdict != engine.VerdictDeterministic {
		t.Errorf("good: %s %s", f.Verdict, f.Reason)
	}
	notProbed := map[string]string{
		"ok.py::too_many": "4 required parameters",
		"ok.py::kwonly":   "keyword-only parameter key",
		"ok.py::coro":     "async def",
	}
	for id, why := range notProbed {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictNotProbed || !strings.Contains(f.Reason, why) {
			t.Errorf("%s: want not probed because %q, got %s: %s", id, why, f.Verdict, f.Reason)
		}
	}
	if rep.Function("ok.py::_private") != nil {
		t.Error("_private was probed without --private")
	}
}

func TestPackagesImportByDottedName(t *testing.T) {
	dir := t.TempDir()
	if err := exec.Command("cp", "-r", "testdata/pkgtree/.", dir).Run(); err != nil {
		t.Fatal(err)
	}
	// Noise the walk must skip without a word: a symlink loop, bytecode
	// caches, a non-Python file.
	if err := os.Symlink(dir, filepath.Join(dir, "pkg", "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pkg", "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg", "__pycache__", "junk.py"), []byte("def junk(:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := scan(t, nil, dir)
	want := map[string]string{
		"pkg/core.py::doubled":            engine.VerdictDeterministic, // relative import
		"pkg/helpers.py::twice":           engine.VerdictDeterministic,
		"plain/script.py::answer":         engine.VerdictDeterministic, // sibling import
		"ns/inner/nsmod.py::in_namespace": engine.VerdictDeterministic,
	}
	for id, v := range want {
		if f := fn(t, rep, id); f.Verdict != v {
			t.Errorf("%s: %s (%s)", id, f.Verdict, f.Reason)
		}
	}
	for _, m := range rep.Modules {
		if m.Status != "ok" || strings.Contains(m.Path, "__pycache__") || strings.Contains(m.Path, "loop") {
			t.Errorf("module %+v should not be listed or should be ok", m)
		}
	}
	if len(rep.Modules) != 6 {
		t.Errorf("want 6 modules, got %+v", rep.Modules)
	}
}

func TestCanonicalValuesNeitherHangNorCrash(t *testing.T) {
	// What is asserted is that the canonical forms end and the values
	// come back, not how fast: a 50 MB string took 2.85 s of plain Python
	// on a busy 2-core machine, so the call limit is far above that.
	rep := scan(t, func(o *engine.Options) { o.CallTimeout = 2 * time.Minute }, "testdata/values")
	if f := fn(t, rep, "values.py::self_referential"); f.Verdict != engine.VerdictDeterministic {
		t.Errorf("self_referential: %s %s", f.Verdict, f.Reason)
	}
	if f := fn(t, rep, "values.py::fifty_megabytes"); f.Verdict != engine.VerdictDeterministic || len(f.Contained) != 0 {
		t.Errorf("fifty_megabytes: %s %s %+v", f.Verdict, f.Reason, f.Contained)
	}
	if f := fn(t, rep, "values.py::opaque"); f.Verdict != engine.VerdictLook || f.Rungs.Excluded != 1 {
		t.Errorf("opaque: want a look with 1 excluded rung, got %s %+v", f.Verdict, f.Rungs)
	}
}

func TestGateRefusesWritersAndKeepsReadOnlyFindings(t *testing.T) {
	dir := t.TempDir()
	if err := exec.Command("cp", "-r", "testdata/gate/.", dir).Run(); err != nil {
		t.Fatal(err)
	}
	rep := scan(t, nil, dir)
	for _, id := range []string{"writer.py::writes_file", "writer.py::deletes_through_helper"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictNotProbed || !strings.HasPrefix(f.Reason, "gate:") {
			t.Errorf("%s: want refused by the gate, got %s: %s", id, f.Verdict, f.Reason)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "written.txt")); err == nil {
		t.Fatal("the refused function wrote its file")
	}
	if f := fn(t, rep, "writer.py::reads_clock"); f.Verdict != engine.VerdictNondeterministic {
		t.Errorf("reads_clock: the gate must not eat read-only findings, got %s: %s", f.Verdict, f.Reason)
	}
	if f := fn(t, rep, "writer.py::reads_file"); f.Verdict != engine.VerdictDeterministic {
		t.Errorf("reads_file: %s: %s", f.Verdict, f.Reason)
	}
	// --unsafe lifts the gate and the host's guard: the file appears,
	// which is why it is refused.
	unconfined := host.NewWith(host.Options{Unconfined: true})
	rep = scanOn(t, unconfined, func(o *engine.Options) { o.Unsafe = true }, dir+"/writer.py::writes_file")
	if f := fn(t, rep, "writer.py::writes_file"); f.Verdict == engine.VerdictNotProbed {
		t.Errorf("--unsafe: still refused: %s", f.Reason)
	}
	if _, err := os.Stat(filepath.Join(dir, "written.txt")); err != nil {
		t.Errorf("--unsafe: the function ran but its file is missing: %v", err)
	}
}

func TestTargets(t *testing.T) {
	for _, c := range []struct{ arg, want string }{
		{"testdata/nope", "no such file or directory"},
		{"testdata/pkgtree/README.txt", "not a Python source file"},
		{"testdata/pkgtree::x", "is a directory"},
		{"testdata/broken/ok.py::", "give a module-level function or a class"},
	} {
		_, err := engine.ParseTarget(c.arg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want error containing %q, got %v", c.arg, c.want, err)
		}
	}
	tg, err := engine.ParseTarget("testdata/broken/ok.py::missing")
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Scan(context.Background(), engine.Options{Runtime: host.New(), Python: testenv.Python(t)}, []engine.Target{tg})
	if err == nil || !strings.Contains(err.Error(), `no module-level function "missing"`) || !strings.Contains(err.Error(), "good") {
		t.Errorf("want an error naming the missing function and the ones there are, got %v", err)
	}
}

func TestForgedRecordsAreCaughtAndDropped(t *testing.T) {
	testenv.Integration(t)
	rep := scan(t, func(o *engine.Options) { o.Unsafe = true; o.Runs = 2 }, "testdata/forge")
	f := fn(t, rep, "forger.py::a_forger")
	caught := false
	for _, e := range f.Contained {
		caught = caught || e.Kind == "tampered" && strings.Contains(e.Detail, "record")
	}
	if !caught {
		t.Errorf("the forger was not named: %+v", f.Contained)
	}
	v := fn(t, rep, "forger.py::b_victim")
	if v.Verdict != engine.VerdictDeterministic || v.Rungs.Answered != v.Rungs.Total {
		t.Errorf("the victim's real answers did not survive: %s %+v %s", v.Verdict, v.Rungs, v.Reason)
	}
	var js strings.Builder
	if err := report.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), "forged") && strings.Contains(js.String(), `V:\"forged\"`) {
		t.Errorf("a forged answer reached the report")
	}
}

func TestWorkerAndGateAgreeOnOpeners(t *testing.T) {
	// Discovery records the mode of every call the gate treats as an
	// opener (the list travels in the request), so writing through any of
	// them is refused on the host runtime.
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("import builtins, io, codecs, os, gzip, bz2, lzma, tarfile, pathlib\n")
	for i, name := range gate.Openers() {
		call := name
		if strings.HasPrefix(name, ".") {
			call = "pathlib.Path('x')" + name
		}
		fmt.Fprintf(&src, "def f%d():\n    return %s('x', 'w')\n", i, call)
	}
	if err := os.WriteFile(filepath.Join(dir, "openers.py"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := scan(t, nil, dir)
	for i, name := range gate.Openers() {
		f := fn(t, rep, fmt.Sprintf("openers.py::f%d", i))
		if f.Verdict != engine.VerdictNotProbed || !strings.Contains(f.Reason, "gate") {
			t.Errorf("writing through %s: %s (%s)", name, f.Verdict, f.Reason)
		}
	}
}

// TestImportThatFailsInOneRunIsAFinding: an import that fails under one
// run's conditions only is an answer of that run, not a reason to give up.
func TestImportThatFailsInOneRunIsAFinding(t *testing.T) {
	rep := scan(t, nil, "testdata/flaky")
	f := fn(t, rep, "flaky_import.py::value")
	if f.Verdict != engine.VerdictNondeterministic || len(f.Causes) == 0 || f.Causes[0] != "timezone" {
		t.Fatalf("%s %v %s", f.Verdict, f.Causes, f.Reason)
	}
	if m := module(t, rep, "flaky_import.py"); m.Status != "ok" || !strings.Contains(m.Error, "import failed in 1 of 3 runs") {
		t.Errorf("module: %+v", m)
	}
}

// TestGateJudgesWhatPythonImports: on the host runtime the gate reads a
// module's source; when Python would import something else instead (a
// package folder of the same name, an extension module), the module is
// refused, and a planted __pycache__ bytecode file is never run.
func TestGateJudgesWhatPythonImports(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shadowed.py", "def f():\n    return 1\n")
	write("shadowed/__init__.py", "")
	write("native.py", "def g():\n    return 2\n")
	write("native.cpython-311-x86_64-linux-gnu.so", "")
	write("plain.py", "def h():\n    return 3\n# "+strings.Repeat("x", 100)+"\n") // longer than the planted source
	// Bytecode that claims to be plain.py's cache but answers otherwise.
	py := testenv.Python(t)
	src := filepath.Join(dir, "plain.py")
	evil := filepath.Join(t.TempDir(), "evil.py")
	if err := os.WriteFile(evil, []byte("def h():\n    import random\n    return random.random()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `import importlib.util, py_compile, os, sys
src, evil = sys.argv[1], sys.argv[2]
st = os.stat(src)
os.utime(evil, ns=(st.st_atime_ns, st.st_mtime_ns))
# Same size and mtime as the source, so the header matches it.
with open(evil, "a") as fh:
    fh.write(" " * (st.st_size - os.stat(evil).st_size))
os.utime(evil, ns=(st.st_atime_ns, st.st_mtime_ns))
py_compile.compile(evil, cfile=importlib.util.cache_from_source(src), doraise=True)
`
	if out, err := exec.Command(py, "-c", script, src, evil).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rep := scan(t, nil, dir)
	for _, id := range []string{"shadowed.py::f", "native.py::g"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictNotProbed || !strings.Contains(f.Reason, "Python would import") {
			t.Errorf("%s: %s (%s)", id, f.Verdict, f.Reason)
		}
	}
	// The planted bytecode answers a random number: had it run, h would
	// be a finding.
	if f := fn(t, rep, "plain.py::h"); f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered != 1 {
		t.Errorf("plain.py::h (the planted bytecode ran?): %s %s", f.Verdict, f.Reason)
	}
}

// TestScannedRootsCannotShadowTheWorker: a tree's own dataclasses.py
// never runs inside the worker's canonicaliser, so its sibling's verdicts
// stay right.
func TestScannedRootsCannotShadowTheWorker(t *testing.T) {
	rep := scan(t, nil, "testdata/shadow/honest.py")
	f := fn(t, rep, "honest.py::point")
	if f.Verdict != engine.VerdictDeterministic || len(f.Contained) > 0 || f.Rungs.Answered == 0 {
		t.Fatalf("the honest sibling: %s %s %+v", f.Verdict, f.Reason, f.Contained)
	}
}

// A package whose import kills its parent kills the worker's parent from
// its zygote, before any record names an import: the worker is run again
// with bare zygotes, which import nothing, so each child's import kills
// only the bare zygote it came from, and the child goes on. Every
// function is answered in full, the module of another package in the
// shard too.
func TestZygoteDeathCostsItsPackageOnly(t *testing.T) {
	testenv.Integration(t)
	rep := scan(t, func(o *engine.Options) { o.Unsafe, o.Jobs = true, 1 }, "testdata/zygote")
	for _, id := range []string{"zz.py::fine", "apkg/a.py::one", "apkg/b.py::two"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered != f.Rungs.Total {
			t.Errorf("%s: %s %+v: %s", id, f.Verdict, f.Rungs, f.Reason)
		}
	}
}

// oncePerRun says whether f has, in each of runs runs, exactly one
// contained event of kind whose detail holds detail.
func oncePerRun(f *report.Function, kind, detail string, runs int) bool {
	perRun := map[int]int{}
	for _, e := range f.Contained {
		if e.Kind == kind && strings.Contains(e.Detail, detail) {
			perRun[e.Run]++
		}
	}
	return len(perRun) == runs && !slices.ContainsFunc(slices.Collect(maps.Values(perRun)), func(n int) bool { return n != 1 })
}

// A function that is only slow (0.3 s a call: below the idle and call
// limits) makes calls in a run until they have taken the function budget,
// and the report says so once per run; its module's other function is
// called in full. Load only makes the calls slower, so fewer. The one
// reversed run still calls the rungs the forward runs keep, so a slow
// function that reads what only that run varies (the locale) is found.
func TestSlowFunctionsStopAtTheirBudget(t *testing.T) {
	testenv.Integration(t)
	var over int
	rep := scan(t, func(o *engine.Options) {
		o.Runs, o.Jobs, o.SmellRuns, o.FunctionBudget = 3, 1, -1, time.Second
		o.PhaseDone = func(c engine.PhaseCost) { over += c.OverBudget }
	}, "testdata/sleepy")
	f := fn(t, rep, "naps.py::naps")
	if !oncePerRun(f, "budget", "past the 1s", 3) || over < 3 {
		t.Errorf("naps: want one budget event in each of 3 runs (%d counted), got %+v", over, f.Contained)
	}
	// A rung is two calls (the in-process repeat): at most two rungs
	// before the budget, and the reversed run's last two beside them.
	if f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered < 1 || f.Rungs.Answered > 4 {
		t.Errorf("naps: want deterministic on at most 4 rungs, got %s %+v: %s", f.Verdict, f.Rungs, f.Reason)
	}
	if l := fn(t, rep, "naps.py::naps_in_locale"); l.Verdict != engine.VerdictNondeterministic || !slices.Contains(l.Causes, "locale") {
		t.Errorf("naps_in_locale: want a finding caused by the locale, got %s %v: %s", l.Verdict, l.Causes, l.Reason)
	}
	if g := fn(t, rep, "naps.py::fine"); g.Verdict != engine.VerdictDeterministic || g.Rungs.Answered != g.Rungs.Total {
		t.Errorf("fine: %s %+v", g.Verdict, g.Rungs)
	}
}

// A rung that ran past the call limit in one run is not waited for again
// in the runs after it, and the report is what waiting would have given:
// every run has the rung past the limit and the function's rungs after it
// skipped, and the rungs before it answered.
func TestHangsArePaidOnce(t *testing.T) {
	testenv.Integration(t)
	var notWaited int
	rep := scan(t, func(o *engine.Options) {
		o.Runs, o.Jobs, o.SmellRuns, o.CallTimeout = 4, 1, -1, time.Second
		o.PhaseDone = func(c engine.PhaseCost) { notWaited += c.NotWaited }
	}, "testdata/hang")
	// One interpreter at a time. waits_on_big hangs on one rung: waited
	// for in run 0 only. waits hangs on its first call, which a reversed
	// run makes on its last rung: waited for in runs 0 and 1.
	if want := 3 + 2; notWaited != want {
		t.Errorf("%d calls not waited for again, want %d", notWaited, want)
	}
	for _, id := range []string{"slow.py::waits", "slow.py::waits_on_big"} {
		f := fn(t, rep, id)
		if !oncePerRun(f, "timeout", "call limit", 4) {
			t.Errorf("%s: want one call past the limit in each of 4 runs, got %+v", id, f.Contained)
		}
	}
	if f := fn(t, rep, "slow.py::waits"); f.Verdict != engine.VerdictLook || f.Rungs.TimedOut == 0 {
		t.Errorf("waits: want a look with a rung past the limit, got %s %+v", f.Verdict, f.Rungs)
	}
	big := fn(t, rep, "slow.py::waits_on_big")
	if big.Verdict != engine.VerdictDeterministic || big.Rungs.Answered < big.Rungs.Total-2 {
		t.Errorf("waits_on_big: want deterministic with every other rung answered, got %s %+v: %s", big.Verdict, big.Rungs, big.Reason)
	}
	if f := fn(t, rep, "slow.py::fine"); f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered != f.Rungs.Total {
		t.Errorf("fine: %s %+v", f.Verdict, f.Rungs)
	}
}

// TestExplainBudgetNeverChangesAVerdict: a finding whose flips would take
// past the explain budget is run only under its base conditions: still
// nondeterministic, its cause unattributed, and the report says the
// budget kept its conditions from being flipped; without a budget the
// same finding is caused by the zone.
func TestExplainBudgetNeverChangesAVerdict(t *testing.T) {
	testenv.Integration(t)
	for _, tc := range []struct {
		budget time.Duration
		causes []string
		note   string
	}{
		{time.Millisecond, []string{"unattributed"}, "not flipped one by one (budget)"},
		{-1, []string{"timezone"}, ""},
	} {
		rep := scan(t, func(o *engine.Options) {
			o.Runs, o.Jobs, o.SmellRuns, o.Seed, o.ExplainBudget = 3, 2, -1, 5, tc.budget
		}, "testdata/explain")
		f := fn(t, rep, "zone.py::zone")
		if f.Verdict != engine.VerdictNondeterministic || !slices.Equal(f.Causes, tc.causes) {
			t.Errorf("budget %s: want a finding caused by %v, got %s %v: %s", tc.budget, tc.causes, f.Verdict, f.Causes, f.Reason)
		}
		if !strings.Contains(f.CauseNote, tc.note) || tc.note == "" && f.CauseNote != "" {
			t.Errorf("budget %s: cause note %q, want %q", tc.budget, f.CauseNote, tc.note)
		}
	}
}

// TestAnAddressIsNeverADifference: an address written as a template's
// name, a percent-encoded repr or a decimal id() differs in every process
// and is excluded, never a finding; a random 12-digit hex number that is
// no address is one.
func TestAnAddressIsNeverADifference(t *testing.T) {
	testenv.Integration(t)
	rep := scan(t, func(o *engine.Options) { o.Runs, o.Jobs, o.SmellRuns, o.Seed = 3, 2, -1, 4 }, "testdata/addresses")
	for _, id := range []string{"spell.py::memory_name", "spell.py::quoted_repr", "spell.py::decimal_id"} {
		if f := fn(t, rep, id); f.Verdict == engine.VerdictNondeterministic {
			t.Errorf("%s: an address made a finding: %s", id, f.Reason)
		}
	}
	if f := fn(t, rep, "spell.py::token"); f.Verdict != engine.VerdictNondeterministic {
		t.Errorf("token: want a finding, got %s: %s", f.Verdict, f.Reason)
	}
}

// TestTestCasesAreNotTheLibrary: a test case's methods are listed, not
// probed, with the reason, and counted; a library class named Test* and a
// test file's helper class are probed.
func TestTestCasesAreNotTheLibrary(t *testing.T) {
	testenv.Integration(t)
	rep := scan(t, func(o *engine.Options) { o.Runs, o.Jobs, o.SmellRuns, o.Seed = 2, 2, -1, 4 }, "testdata/testcases")
	for _, id := range []string{"tests/test_state.py::Base.setUp", "tests/test_state.py::TestOrder.test_first", "tests/test_state.py::TestPlain.test_count"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictNotProbed || !f.TestCase || !strings.Contains(f.Reason, "a test case") {
			t.Errorf("%s: %s (test case %v): %s", id, f.Verdict, f.TestCase, f.Reason)
		}
	}
	for _, id := range []string{"tests/test_state.py::Helper.size", "lib.py::TestResult.ok"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictDeterministic || f.TestCase {
			t.Errorf("%s: want it probed, got %s: %s", id, f.Verdict, f.Reason)
		}
	}
	if rep.Census.TestCases != 3 {
		t.Errorf("census counts %d test-case methods, want 3", rep.Census.TestCases)
	}
}

// TestReceiversThatBuild: a method is called on instances built the way
// its package builds them: from a docstring's example and an alternative
// constructor (Version, whose own constructor never builds from the
// ladder), through a concrete subclass in another module (an abstract
// class, a mixin), with another class of the package for an annotated
// parameter (Engine(Config())). A witness names the receiver it was
// called on, and replay rebuilds it. A receiver whose builder answered
// differently in two runs (Moment.from_epoch reads the local zone) is
// not the method's finding: those rungs are excluded.
func TestReceiversThatBuild(t *testing.T) {
	testenv.Integration(t)
	var opts engine.Options
	rep := scan(t, func(o *engine.Options) { o.Runs, o.SmellRuns, o.Seed = 3, -1, 5; opts = *o }, "testdata/receivers")
	for _, id := range []string{"shapes/base.py::Version.bumped", "shapes/base.py::Shape.describe", "shapes/base.py::Reader.first", "shapes/base.py::Engine.speed_of"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered == 0 {
			t.Errorf("%s: %s, %d rungs answered: %s", id, f.Verdict, f.Rungs.Answered, f.Reason)
		}
	}
	if f := fn(t, rep, "shapes/base.py::Shape.area"); f.Verdict != engine.VerdictNotProbed {
		t.Errorf("an abstract method: %s: %s", f.Verdict, f.Reason)
	}
	tags := fn(t, rep, "shapes/base.py::Version.tags")
	if tags.Verdict != engine.VerdictNondeterministic || tags.Witness == nil || !strings.HasPrefix(tags.Witness.Receiver, "Version.parse(") {
		t.Fatalf("Version.tags: %s, witness %+v", tags.Verdict, tags.Witness)
	}
	if m := fn(t, rep, "shapes/base.py::Moment.hour_digits"); m.Verdict == engine.VerdictNondeterministic || m.Rungs.Excluded == 0 {
		t.Errorf("Moment.hour_digits, on what from_epoch built: %s, %d rungs excluded: %s", m.Verdict, m.Rungs.Excluded, m.Reason)
	}
	// A mixin's method, on its subclass of another module: replay parses
	// the rest of the package to build it again.
	shuffled := fn(t, rep, "shapes/base.py::Reader.shuffled")
	if shuffled.Verdict != engine.VerdictNondeterministic || shuffled.Witness == nil || !strings.HasPrefix(shuffled.Witness.Receiver, "shapes.square.Lines(") {
		t.Fatalf("Reader.shuffled: %s, witness %+v", shuffled.Verdict, shuffled.Witness)
	}
	for _, f := range []*report.Function{tags, shuffled} {
		replayed, _, err := engine.Replay(context.Background(), opts, rep, f.ID, ".")
		if err != nil {
			t.Fatal(err)
		}
		if len(replayed) != 2 || replayed[0].Value == replayed[1].Value {
			t.Errorf("replay of %s on %s: %+v", f.ID, f.Witness.Receiver, replayed)
		}
	}
}

// TestTestsRunThroughTheirRunner: with Tests, a test method is called as
// its runner calls it, fixtures and all, so one that needs setUp passes
// every time, and a flaky one (hash order) is a finding; a test case's
// helpers stay unprobed.
func TestTestsRunThroughTheirRunner(t *testing.T) {
	testenv.Integration(t)
	var opts engine.Options
	rep := scan(t, func(o *engine.Options) { o.Runs, o.SmellRuns, o.Seed, o.Tests = 4, -1, 3, true; opts = *o }, "testdata/flakytests")
	for _, id := range []string{"tests/test_things.py::TestWithFixtures.test_uses_setup", "tests/test_things.py::TestPytestStyle.test_count"} {
		if f := fn(t, rep, id); f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered == 0 {
			t.Errorf("%s: %s, %d rungs answered: %s", id, f.Verdict, f.Rungs.Answered, f.Reason)
		}
	}
	flaky := fn(t, rep, "tests/test_things.py::TestWithFixtures.test_flaky")
	if flaky.Verdict != engine.VerdictNondeterministic || !slices.Contains(flaky.Causes, "hash-seed") {
		t.Errorf("the flaky test: %s, causes %v: %s", flaky.Verdict, flaky.Causes, flaky.Reason)
	}
	if f := fn(t, rep, "tests/test_things.py::TestWithFixtures.helper"); f.Verdict != engine.VerdictNotProbed || !strings.Contains(f.Reason, "helper") {
		t.Errorf("a test case's helper: %s: %s", f.Verdict, f.Reason)
	}
	if flaky.Witness != nil {
		replayed, _, err := engine.Replay(context.Background(), opts, rep, flaky.ID, ".")
		if err != nil {
			t.Fatal(err)
		}
		if len(replayed) != 2 || replayed[0].Value == replayed[1].Value {
			t.Errorf("replay of the flaky test: %+v", replayed)
		}
	}
	// Without Tests, none of it is probed.
	rep = scan(t, func(o *engine.Options) { o.Runs, o.SmellRuns, o.Seed = 2, -1, 3 }, "testdata/flakytests")
	if rep.Census.TestCases != 8 || rep.Census.Probed != 0 {
		t.Errorf("without tests: census %+v", rep.Census)
	}
}

// TestWhereTwoRunsParted: each finding of the fixtures is traced in its
// witness's two runs, and the first line at which they parted is named:
// the scanned line, and for a value a library computed, that library's
// line too.
func TestWhereTwoRunsParted(t *testing.T) {
	testenv.Integration(t)
	rep := scan(t, func(o *engine.Options) { o.Runs, o.Seed = 3, 3 }, "../fixtures/known.py", "../fixtures/causes.py", "../fixtures/precision/state.py")
	for _, c := range []struct {
		id      string
		line    int
		kind    string
		library string
	}{
		{"known.py::dedup_unsorted", 26, "return", ""},       // hash order: list(set(items))
		{"known.py::now_iso", 69, "return", ""},              // the clock
		{"known.py::format_decimal", 96, "return", "locale"}, // the locale, through locale.py
		{"known.py::epoch_year", 53, "return", ""},           // the timezone
		{"known.py::random_token", 73, "return", ""},         // an unseeded RNG
		{"known.py::object_id", 77, "return", ""},            // id()
		{"known.py::pid_tag", 100, "return", ""},             // the process id
		{"causes.py::from_home", 66, "return", ""},           // HOME
		{"causes.py::from_umask", 56, "data", ""},            // mask = os.umask(0)
		{"causes.py::from_repeat", 98, "return", ""},         // a repeat: the second call in one process
		{"state.py::next_ticket", 24, "return", ""},          // a repeat of its own state
	} {
		f := fn(t, rep, c.id)
		if f.Witness == nil || f.Witness.DivergedAt == nil {
			t.Errorf("%s: no divergence: %+v", c.id, f.Witness)
			continue
		}
		d := f.Witness.DivergedAt
		if d.Line != c.line || d.Kind != c.kind || d.Source == "" || len(d.Values) != 2 || d.Values[0] == d.Values[1] {
			t.Errorf("%s: diverged at %s (%s), want line %d (%s)", c.id, d, d.Kind, c.line, c.kind)
		}
		if c.library != "" && (d.Library == nil || !strings.Contains(d.Library.File, c.library)) {
			t.Errorf("%s: the library line %+v, want one in %s", c.id, d.Library, c.library)
		}
	}
	// Moved by another's state: alone, then after use_mode's calls, it
	// returned two modes.
	m := fn(t, rep, "state.py::current_mode").MovedBy
	if m == nil || m.DivergedAt == nil || m.DivergedAt.Line != 18 || m.DivergedAt.Kind != "return" || m.DivergedAt.Values[0] != `"fast"` {
		t.Errorf("a moved function: %+v", m)
	}
}

// TestTheTracerIsNoVerdict: the divergence is an explanation, taken after
// the verdict: code that answers otherwise under a tracer is judged by its
// untraced runs (a function that sees no tracer there is deterministic,
// whatever it would say under one), and a finding that detects the tracer
// keeps its witness, its verdict and its untraced answers.
func TestTheTracerIsNoVerdict(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	src := `import random
import sys


def sees_tracer():
    return sys.gettrace() is not None


def random_unless_traced():
    if sys.gettrace() is not None:
        return "traced"
    return random.random()
`
	if err := os.WriteFile(filepath.Join(dir, "sly.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := scan(t, func(o *engine.Options) { o.Runs, o.Seed = 3, 4 }, dir)
	if f := fn(t, rep, "sly.py::sees_tracer"); f.Verdict != engine.VerdictDeterministic || f.Witness != nil {
		t.Errorf("sees_tracer: %s (%s), want deterministic", f.Verdict, f.Reason)
	}
	f := fn(t, rep, "sly.py::random_unless_traced")
	if f.Verdict != engine.VerdictNondeterministic || f.Witness == nil {
		t.Fatalf("random_unless_traced: %s (%s), want nondeterministic", f.Verdict, f.Reason)
	}
	for _, a := range f.Witness.Answers {
		if strings.Contains(a.Value, "traced") {
			t.Errorf("a traced answer stands in the witness: %+v", f.Witness.Answers)
		}
	}
	if f.Witness.DivergedAt != nil || f.Witness.NoDivergence == "" {
		t.Errorf("both traced runs answered alike; the report says %+v / %q", f.Witness.DivergedAt, f.Witness.NoDivergence)
	}
}
