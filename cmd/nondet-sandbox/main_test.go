package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/spf13/pflag"
)

func fixtureLabels(t *testing.T) map[string]string {
	t.Helper()
	labels := labelMap(t, "known.labels")
	if len(labels) != 19 {
		t.Fatalf("want 19 labels, got %d", len(labels))
	}
	return labels
}

// runJSON runs a real scan on the host runtime: an integration test.
func runJSON(t *testing.T, args ...string) (*report.Report, []byte, error) {
	t.Helper()
	testenv.Integration(t)
	opts := testOptions(t, "host", 0)
	opts.callTimeout, opts.memory = 5*time.Second, 2<<30
	var out, errOut bytes.Buffer
	var flags []string
	for len(args) > 0 && strings.HasPrefix(args[0], "--seed=") {
		flags = append(flags, args[0])
		args = args[1:]
	}
	for _, f := range flags {
		var seed uint64
		if _, err := fmtSscan(strings.TrimPrefix(f, "--seed="), &seed); err != nil {
			t.Fatal(err)
		}
		opts.seed = seed
	}
	err := runRun(context.Background(), opts, args, &out, &errOut)
	var rep report.Report
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("report is not JSON: %v\n%s\nstderr: %s", jerr, out.String(), errOut.String())
	}
	return &rep, out.Bytes(), err
}

// TestFixtureLabels runs the real command over the labelled fixtures and
// grades it against labels written down apart from the names.
func TestFixtureLabels(t *testing.T) {
	testenv.Integration(t)
	labels := fixtureLabels(t)
	rep, _, err := runJSON(t, "../../fixtures/known.py")
	if !errors.Is(err, errFindings) {
		t.Fatalf("want findings (exit 1), got %v", err)
	}
	for name, label := range labels {
		f := rep.Function("known.py::" + name)
		if f == nil {
			t.Errorf("%s: not in the report", name)
			continue
		}
		want := label
		if label == "order-sensitive" {
			want = engine.VerdictDeterministic
			if f.OrderSensitive == nil || f.OrderSensitive.Breaker != engine.BreakerDictOrder {
				t.Errorf("%s: labelled order-sensitive, the report does not say so: %+v", name, f.OrderSensitive)
			}
		}
		if name == "always_raises" {
			// Labelled deterministic, as a fact; the checker never saw it
			// return and says so with a look.
			want = engine.VerdictLook
		}
		if f.Verdict != want {
			t.Errorf("%s: labelled %s, want %s, got %s (%s)", name, label, want, f.Verdict, f.Reason)
		}
		if f.Verdict == engine.VerdictNondeterministic && (f.Witness == nil || len(f.Witness.Answers) != 2 || f.Witness.Answers[0].Value == f.Witness.Answers[1].Value) {
			t.Errorf("%s: a finding needs a witness with two different answers: %+v", name, f.Witness)
		}
	}
	if f := rep.Function("known.py::always_raises"); f != nil && !strings.Contains(f.Reason, "every rung raised") {
		t.Errorf("always_raises: %s", f.Reason)
	}
	if f := rep.Function("known.py::sometimes_raises"); f != nil && (f.Rungs.Raised == 0 || f.Rungs.Answered == 0) {
		t.Errorf("sometimes_raises should both raise and answer: %+v", f.Rungs)
	}
	main := 0
	seeds := map[uint32]bool{}
	for _, r := range rep.Runs {
		seeds[r.HashSeed] = true
		if r.Purpose == "main" {
			main++
		}
	}
	if main != 3 || len(seeds) != len(rep.Runs) || rep.Runs[0].TZ == rep.Runs[1].TZ || rep.Runs[0].Locale == rep.Runs[1].Locale {
		t.Errorf("3 main runs, every run its own hash seed, timezone and locale varied: %+v", rep.Runs)
	}
	// A function that smells gets the extra hash-seed runs, and says so.
	if f := rep.Function("known.py::now_iso"); f == nil || f.Runs != len(rep.Runs) || len(f.Smells) == 0 || f.Smells[0].Kind != "clock" {
		t.Errorf("now_iso: %+v", f)
	}
	if f := rep.Function("known.py::word_count"); f == nil || f.Runs != 3 || len(f.Smells) != 0 {
		t.Errorf("word_count: %+v", f)
	}
	if f := rep.Function("known.py::seeded"); f == nil || len(f.Smells) != 0 {
		t.Errorf("seeded: random.Random(42) is not a smell: %+v", f.Smells)
	}
}

// TestInProcessRepetitionWouldHaveMissedIt is the seed's control: twenty
// calls in one interpreter agree, and fresh processes still disagree. If
// in-process repetition ever catches it, fresh processes are expensive
// theatre and this test says so.
func TestInProcessRepetitionWouldHaveMissedIt(t *testing.T) {
	testenv.Integration(t)
	py := testenv.Python(t)
	script := `
import sys; sys.path.insert(0, sys.argv[1])
import known
words = ["alpha", "beta", "gamma", "delta", "epsilon"]
print(len({repr(list(known.resolve_features(list(words)))) for _ in range(20)}))
`
	fixtures, _ := filepath.Abs("../../fixtures")
	cmd := exec.Command(py, "-B", "-c", script, fixtures)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("in-process repetition saw %s different answers: fresh processes would be theatre", out)
	}
	rep, _, _ := runJSON(t, "../../fixtures/known.py::resolve_features")
	f := rep.Function("known.py::resolve_features")
	if f == nil || f.Verdict != engine.VerdictNondeterministic || f.Witness.Breaker != "" || !f.Witness.OrderOnly {
		t.Fatalf("fresh processes must find an order-only disagreement across runs: %+v", f)
	}
}

// TestSameSeedSameJSON: no timestamps, no temporary paths, so two scans
// with one seed are byte-identical (on functions whose answers do not read
// the clock, an RNG, an address or the pid: those differ by nature).
func TestSameSeedSameJSON(t *testing.T) {
	testenv.Integration(t)
	var outs [][]byte
	for range 2 {
		_, out, _ := runJSON(t, "--seed=99", "../../fixtures/known.py::resolve_features", "../../fixtures/known.py::epoch_year",
			"../../fixtures/known.py::dedup_unsorted", "../../fixtures/known.py::always_raises", "../../fixtures/known.py::hash_of")
		outs = append(outs, out)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatalf("two scans with --seed 99 differ:\n%s\n---\n%s", outs[0], outs[1])
	}
	if bytes.Contains(outs[0], []byte(filepath.Join(os.TempDir(), "nondet-sandbox-"))) {
		t.Fatalf("report holds a temporary path:\n%s", outs[0])
	}
}

func TestExitStatus(t *testing.T) {
	ctx := context.Background()
	if code := exitCode(ctx, nil); code != 0 {
		t.Errorf("clean: %d", code)
	}
	if code := exitCode(ctx, errFindings); code != 1 {
		t.Errorf("findings: %d", code)
	}
	_, _, err := runJSON(t, "../../fixtures/known.py::dedup_sorted")
	if err != nil {
		t.Errorf("a deterministic function: want exit 0, got %v", err)
	}
	var opts runOptions
	opts.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	opts.format, opts.runs = "yaml", 3
	opts.jobs, opts.runtimeName = 1, "host"
	err = runRun(ctx, opts, []string{"../../fixtures"}, &bytes.Buffer{}, &bytes.Buffer{})
	if code := exitCode(ctx, err); code != 2 || !strings.Contains(err.Error(), "choose text, concise, json, sarif, github, junit") {
		t.Errorf("bad --format: exit %d, %v", code, err)
	}
	opts.format = "text"
	err = runRun(ctx, opts, []string{"no/such/dir"}, &bytes.Buffer{}, &bytes.Buffer{})
	if code := exitCode(ctx, err); code != 2 {
		t.Errorf("missing path: exit %d, %v", code, err)
	}
	opts.python = testenv.Python(t)
	err = runRun(ctx, opts, []string{t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if code := exitCode(ctx, err); code != exitEmpty {
		t.Errorf("a folder with no Python file: exit %d, want %d (%v)", code, exitEmpty, err)
	}
}

func fmtSscan(s string, v *uint64) (int, error) { return fmt.Sscan(s, v) }
