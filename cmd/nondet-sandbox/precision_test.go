package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// precisionLabel is one line of fixtures/precision.labels.
type precisionLabel struct {
	id, verdict, extra string
}

func precisionLabels(t *testing.T) []precisionLabel {
	t.Helper()
	var out []precisionLabel
	for _, fs := range labelLines(t, "precision.labels", 3) {
		out = append(out, precisionLabel{fs[0], fs[1], fs[2]})
	}
	if len(out) < 19 {
		t.Fatalf("want at least 19 labels, got %d", len(out))
	}
	return out
}

// TestPrecisionFixtures grades every class of false or missed finding seen
// on real code against labels written down apart from the names: a dict
// echo is not a finding, a getter moved by a setter is not one and names
// the setter, functions in if/try/with blocks are listed, an overload is
// one entry, variadics are probed, lazy answers have a canonical form, and
// dates and paths reach what they must.
func TestPrecisionFixtures(t *testing.T) {
	testenv.Integration(t)
	labels := precisionLabels(t)
	for _, rt := range []string{"host", "embedded"} {
		t.Run(rt, func(t *testing.T) {
			if rt != "host" {
				testenv.NeedRoot(t)
			}
			opts := testOptions(t, rt, 11)
			opts.callTimeout = 3 * time.Second // hangs.py's hang costs one limit per run
			var out, errOut bytes.Buffer
			err := runRun(context.Background(), opts, []string{"../../fixtures/precision"}, &out, &errOut)
			if errors.Is(err, engine.ErrRuntime) {
				testenv.Skip(t, err.Error())
			}
			if !errors.Is(err, errFindings) {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var rep report.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			ids := map[string]int{}
			for _, f := range rep.Functions {
				ids[f.ID]++
			}
			for id, n := range ids {
				if n > 1 {
					t.Errorf("%s appears %d times in the report", id, n)
				}
			}
			for _, l := range labels {
				f := rep.Function(l.id)
				if f == nil {
					t.Errorf("%s: not in the report", l.id)
					continue
				}
				if f.Verdict != l.verdict {
					t.Errorf("%s: want %s, got %s (%s)", l.id, l.verdict, f.Verdict, f.Reason)
				}
				kind, arg, _ := strings.Cut(l.extra, ":")
				switch kind {
				case "order-sensitive":
					if f.OrderSensitive == nil {
						t.Errorf("%s: want order-sensitive", l.id)
					}
				case "moved-by":
					if f.MovedBy == nil || f.MovedBy.Culprit != arg {
						t.Errorf("%s: want moved by %s, got %+v", l.id, arg, f.MovedBy)
					}
				case "moves":
					if !slices.Contains(f.Moves, arg) {
						t.Errorf("%s: want named as moving %s, got %v", l.id, arg, f.Moves)
					}
				case "cause":
					if len(f.Causes) == 0 || f.Causes[0] != arg {
						t.Errorf("%s: want first cause %s, got %v", l.id, arg, f.Causes)
					}
				case "receiver":
					if f.Witness == nil || f.Witness.Receiver != arg {
						t.Errorf("%s: want a witness on a fresh %s, got %+v", l.id, arg, f.Witness)
					}
				case "answered":
					// At least this many rungs had an answer in some run.
					if n, _ := strconv.Atoi(arg); f.Rungs.Answered < n {
						t.Errorf("%s: %d rungs answered, want at least %s: %+v", l.id, f.Rungs.Answered, arg, f.Rungs)
					}
				case "receiver-built":
					// Some call on a receiver built from the constructor's
					// inputs entered the method.
					if f.Rungs.Reached == 0 {
						t.Errorf("%s: no call reached the method: %+v", l.id, f.Rungs)
					}
				}
				if f.Kind == "" && strings.Contains(l.id, ".py::") && strings.Contains(strings.SplitN(l.id, "::", 2)[1], ".") {
					t.Errorf("%s: a method reported without its kind", l.id)
				}
				if f.Verdict == engine.VerdictNondeterministic && f.OrderSensitive == nil && f.Witness == nil {
					t.Errorf("%s: a finding without a witness", l.id)
				}
			}
			if rep.Census.OrderSensitive < 2 || rep.Census.MovedByOthers < 1 {
				t.Errorf("census: %+v", rep.Census)
			}
			// Only findings count for the exit status: rescanning just the
			// echo and the getter finds nothing.
			var quiet bytes.Buffer
			err = runRun(context.Background(), opts, []string{"../../fixtures/precision/echo.py"}, &quiet, &bytes.Buffer{})
			if err != nil {
				t.Errorf("an order-sensitive function alone: want exit 0, got %v", err)
			}
			// Every finding replays.
			report := t.TempDir() + "/r.json"
			if err := os.WriteFile(report, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"precision/blocks.py::scatter", "precision/blocks.py::epoch_hour", "precision/echo.py::keys_csv", "precision/methods.py::Settings.home"} {
				var rout bytes.Buffer
				ro := replayOptions{sandboxOptions: opts.sandboxOptions, callOptions: opts.callOptions, report: report, root: ".", runtimeGiven: true}
				err := runReplay(context.Background(), ro, id, &rout, &bytes.Buffer{})
				if !errors.Is(err, errFindings) {
					t.Errorf("replay %s: %v\n%s", id, err, rout.String())
				}
			}
		})
	}
}
