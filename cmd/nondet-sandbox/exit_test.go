package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestUnjudgedList: a module that could not be read or parsed, and a
// function named on the command line that was not probed, are what a
// clean exit would overstate; a function that was not named, or was
// probed, is not.
func TestUnjudgedList(t *testing.T) {
	rep := &report.Report{Modules: []report.Module{
		{Path: "ok.py", Status: "ok"}, {Path: "pkg/broken.py", Status: "unparseable", Error: "SyntaxError"},
		{Path: "big.py", Status: "too-large"}, {Path: "imp.py", Status: "import-failed"},
	}}
	for id, verdict := range map[string]string{"pkg/kw.py::g": report.VerdictNotProbed, "pkg/kw.py::h": report.VerdictNotProbed, "ok.py::f": report.VerdictLook} {
		rep.AddFunction(id, 1).Verdict = verdict
	}
	targets := []engine.Target{{Path: "/src/pkg/kw.py", Func: "g"}, {Path: "/src/ok.py", Func: "f"}, {Path: "/src"}}
	got := strings.Join(unjudged(rep, targets), "\n")
	for _, want := range []string{"pkg/broken.py: unparseable", "big.py: too-large", "pkg/kw.py::g: not probed"} {
		if !strings.Contains(got, want) {
			t.Errorf("unjudged does not say %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"ok.py:", "imp.py", "::h", "ok.py::f"} {
		if strings.Contains(got, not) {
			t.Errorf("unjudged says %q:\n%s", not, got)
		}
	}
	if code := exitCode(context.Background(), unjudgedError([]string{"x"})); code != exitUnjudged {
		t.Errorf("exit status %d, want %d", code, exitUnjudged)
	}
}

// TestBrokenFileDoesNotPass: a scan whose tree holds a file that does not
// parse, or that names a function it cannot probe, exits 3, not 0; with
// the file excluded, or only probed functions named, it is clean.
func TestBrokenFileDoesNotPass(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	for name, src := range map[string]string{
		"good.py":   "def f(x):\n    return x\n",
		"broken.py": "def ok(:\n    return 1\n",
		"kw.py":     "def g(*, k):\n    return k\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		targets []string
		exclude []string
		want    error
	}{
		{[]string{dir}, nil, errUnjudged},
		{[]string{filepath.Join(dir, "broken.py") + "::ok"}, nil, errUnjudged},
		{[]string{filepath.Join(dir, "kw.py") + "::g"}, nil, errUnjudged},
		{[]string{filepath.Join(dir, "good.py") + "::f"}, nil, nil},
		{[]string{dir}, []string{"broken.py"}, nil},
	} {
		opts := testOptions(t, "host", 3)
		opts.exclude = c.exclude
		var errOut bytes.Buffer
		err := runRun(context.Background(), opts, c.targets, &bytes.Buffer{}, &errOut)
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%v excluding %v: %v, want %v\n%s", c.targets, c.exclude, err, c.want, errOut.String())
		}
	}
}

// TestNumericFlagsAreChecked: a numeric flag out of its range is refused
// before anything runs, with exit status 2 and a message that names the
// flag and says what to write, on every command that takes it.
func TestNumericFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		flags []string
		says  string
	}{
		{[]string{"--pids", "0"}, "--pids 0: at least"},
		{[]string{"--pids", "-5"}, "--pids -5: at least"},
		{[]string{"--cpus", "-1"}, "--cpus -1: 0 for no quota"},
		{[]string{"--memory", "10"}, "write it with a unit"},
		{[]string{"--call-timeout", "-1s"}, "--call-timeout -1s: a positive duration"},
		{[]string{"--call-timeout", "0s"}, "--call-timeout 0s: a positive duration"},
		{[]string{"--smell-runs", "-1"}, "--smell-runs -1: 0 for none"},
		{[]string{"--jobs", "0"}, "--jobs 0: at least 1"},
		{[]string{"--runs", "1"}, "--runs 1: at least 2"},
	} {
		commands := [][]string{{"run", "../../fixtures/known.py"}, {"replay", "--report", "no-such.json", "a.py::f"}, {"doctor"}}
		for _, cmd := range commands {
			args := append(append([]string{cmd[0]}, c.flags...), cmd[1:]...)
			root := newRootCommand()
			root.SetArgs(args)
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			err := root.ExecuteContext(context.Background())
			if err != nil && strings.Contains(err.Error(), "unknown flag") {
				continue // this command does not take it
			}
			if err == nil || !strings.Contains(err.Error(), c.says) || exitCode(context.Background(), err) != exitUsage {
				t.Errorf("%v: want exit 2 saying %q, got %v", args, c.says, err)
			}
		}
	}
}

// TestBaselineThatMatchesNothingIsSaid: a baseline made from other
// targets, or whose ids are none of the scan's, is said; one that fits is
// not.
func TestBaselineThatMatchesNothingIsSaid(t *testing.T) {
	scan := &report.Report{Targets: []string{"src/"}}
	scan.AddFunction("myapp/x.py::f", 1)
	fits := &report.Report{Targets: []string{"src/"}}
	fits.AddFunction("myapp/x.py::f", 1)
	other := &report.Report{Targets: []string{"."}}
	other.AddFunction("src/myapp/x.py::f", 1)
	if notes := baselineNotes(fits, scan, 0); len(notes) != 0 {
		t.Errorf("a baseline that fits: %v", notes)
	}
	notes := strings.Join(baselineNotes(other, scan, 0), "\n")
	for _, want := range []string{`targets ["."]`, `["src/"]`, "none of the baseline's 1 function ids"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, notes)
		}
	}
}
