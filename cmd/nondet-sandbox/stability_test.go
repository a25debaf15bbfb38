package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestTheSameVerdictEveryTime: twenty scans with twenty seeds of a
// one-second clock reader, an unseeded RNG and a deterministic control
// give each the same verdict and first cause every time, and --baseline
// made from the first scan passes every later one: a gate a team can
// require. (The clock reader agrees with itself within a second, so a
// lone run or a bisection that happens to fall in one second must not
// turn it into a deterministic function moved by its neighbour.)
func TestTheSameVerdictEveryTime(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	src := `import random
import time


def quote(s):
    return repr(s)


def generate_timestamp():
    return str(int(time.time()))


def token():
    return random.random()


def control(x):
    return type(x).__name__
`
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"m.py::generate_timestamp": {engine.VerdictNondeterministic, "clock"},
		"m.py::token":              {engine.VerdictNondeterministic, "process"},
		"m.py::control":            {engine.VerdictDeterministic, ""},
		"m.py::quote":              {engine.VerdictDeterministic, ""},
	}
	runtimes := []string{"host"}
	if os.Geteuid() == 0 {
		runtimes = append(runtimes, "embedded")
	}
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) {
			baseline := filepath.Join(t.TempDir(), "baseline.json")
			for seed := uint64(1); seed <= 20; seed++ {
				opts := testOptions(t, rt, seed)
				if seed > 1 {
					opts.baseline = baseline
				}
				var out, errOut bytes.Buffer
				err := runRun(context.Background(), opts, []string{dir}, &out, &errOut)
				if errors.Is(err, engine.ErrRuntime) {
					testenv.Skip(t, err.Error())
				}
				switch {
				case seed == 1 && !errors.Is(err, errFindings):
					t.Fatalf("seed 1: %v\n%s", err, errOut.String())
				case seed > 1 && err != nil:
					t.Errorf("seed %d: the baseline of an unchanged tree failed the scan: %v\n%s", seed, err, errOut.String())
					var r report.Report
					if json.Unmarshal(out.Bytes(), &r) == nil {
						for _, f := range r.Failing() {
							t.Errorf("seed %d: %s is not in the baseline, causes %v (%s)", seed, f.ID, f.Causes, f.CauseNote)
						}
					}
				}
				if seed == 1 {
					if err := os.WriteFile(baseline, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				var rep report.Report
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					t.Fatal(err)
				}
				for id, w := range want {
					f := rep.Function(id)
					if f == nil {
						t.Errorf("seed %d: %s missing", seed, id)
						continue
					}
					cause := ""
					if len(f.Causes) > 0 {
						cause = f.Causes[0]
					}
					if f.Verdict != w[0] || cause != w[1] {
						t.Errorf("seed %d: %s: %s, cause %q (%s); want %s, cause %q", seed, id, f.Verdict, cause, f.Reason, w[0], w[1])
					}
				}
			}
		})
	}
}
