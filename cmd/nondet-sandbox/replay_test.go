package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

func embeddedOrHost(t *testing.T) string {
	if os.Geteuid() == 0 {
		return "embedded"
	}
	return "host"
}

// TestReplayReproducesWitnesses: replay re-runs a function on its witness
// input under the two recorded runs' conditions and gets both answers again.
func TestReplayReproducesWitnesses(t *testing.T) {
	testenv.Integration(t)
	rt := embeddedOrHost(t)
	report := filepath.Join(t.TempDir(), "report.json")
	opts := testOptions(t, rt, 13)
	opts.output = report
	if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errFindings) {
		t.Fatal(err)
	}
	for id, cause := range map[string]string{"known.py::resolve_features": "hash-seed", "known.py::epoch_year": "timezone", "known.py::first_key": "dict-order (order-sensitive)"} {
		var out bytes.Buffer
		ro := replayOptions{sandboxOptions: opts.sandboxOptions, callOptions: opts.callOptions, report: report, runtimeGiven: true}
		err := runReplay(context.Background(), ro, id, &out, &bytes.Buffer{})
		if !errors.Is(err, errFindings) || !strings.Contains(out.String(), "reproduced: the same two answers again") {
			t.Errorf("%s (%s): not reproduced: %v\n%s", id, cause, err, out.String())
		}
		// A finding's replay says where the report has its runs part.
		if cause != "dict-order (order-sensitive)" && !strings.Contains(out.String(), "recorded as diverging at known.py:") {
			t.Errorf("%s: the replay does not say where its runs parted:\n%s", id, out.String())
		}
	}
	var out bytes.Buffer
	err := runReplay(context.Background(), replayOptions{sandboxOptions: opts.sandboxOptions, callOptions: opts.callOptions, report: report, runtimeGiven: true}, "known.py::word_count", &out, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "has no witness to replay") {
		t.Errorf("replaying a deterministic function: %v", err)
	}
}

// TestDogfoodWorker: the tool scanning its own Python worker, the package
// (without its tests), finds nothing nondeterministic. Every module imports
// as the tree's package, beside the worker's own under its other name.
func TestDogfoodWorker(t *testing.T) {
	testenv.Integration(t)
	opts := testOptions(t, embeddedOrHost(t), 17)
	opts.unsafe = true
	opts.exclude = []string{"tests"}
	var out, errOut bytes.Buffer
	if err := runRun(context.Background(), opts, []string{"../../engine/worker"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Census.Deterministic < 10 {
		t.Errorf("the worker scanning itself: %+v", rep.Census)
	}
	// Only what says it is, with its cause: the fork helper returns a pid.
	for _, f := range rep.Functions {
		if f.Verdict == report.VerdictNondeterministic && f.Suppressed == nil {
			t.Errorf("the worker scanning itself: %s is nondeterministic (%v) and does not say so", f.ID, f.Causes)
		}
	}
	if len(rep.Modules) < 10 {
		t.Errorf("the worker scanning itself read %d modules", len(rep.Modules))
	}
	for _, m := range rep.Modules {
		if m.Status != "ok" || strings.Contains(m.Path, "tests") {
			t.Errorf("the worker scanning itself: %s: %s %s", m.Path, m.Status, m.Error)
		}
	}
}

// TestSameSeedSameFixtureJSON: two scans of the fixtures with one seed give
// the same JSON, byte for byte, except the witness values of the findings
// the process itself moves (a clock, an RNG, an address), which no seed can
// fix: those are compared by everything but their values.
func TestSameSeedSameFixtureJSON(t *testing.T) {
	testenv.Integration(t)
	opts := testOptions(t, embeddedOrHost(t), 99)
	var outs []string
	for range 2 {
		var out bytes.Buffer
		if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &out, &bytes.Buffer{}); !errors.Is(err, errFindings) {
			t.Fatal(err)
		}
		outs = append(outs, blankProcessValues(t, out.Bytes()))
	}
	if outs[0] != outs[1] {
		t.Fatalf("two scans with --seed 99 differ:\n%s\n---\n%s", outs[0], outs[1])
	}
}

var valueField = regexp.MustCompile(`"value": "(?:[^"\\]|\\.)*"`)

func blankProcessValues(t *testing.T, data []byte) string {
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	process := map[string]bool{}
	for _, f := range rep.Functions {
		for _, c := range f.Causes {
			process[f.ID] = process[f.ID] || c == "process" || c == "clock" // a clock moves between any two runs
		}
	}
	// Blank the answer values inside the functions moved by the process,
	// and the two values where their runs parted.
	var b strings.Builder
	current, inValues := "", false
	for _, line := range strings.Split(string(data), "\n") {
		if m := regexp.MustCompile(`^\s*"id": "(.*)",$`).FindStringSubmatch(line); m != nil {
			current = m[1]
		}
		if process[current] {
			line = valueField.ReplaceAllString(line, `"value": "…"`)
			switch t := strings.TrimSpace(line); {
			case strings.HasPrefix(t, `"values": [`):
				inValues = !strings.HasSuffix(t, "],") && !strings.HasSuffix(t, "]")
			case inValues && strings.HasPrefix(t, "]"):
				inValues = false
			case inValues:
				line = "…"
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
