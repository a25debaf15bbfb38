package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func causeLabels(t *testing.T) map[string]string {
	t.Helper()
	return labelMap(t, "causes.labels")
}

// TestEachCauseIsNamed: one fixture per cause, and the report names it,
// on every runtime that can vary it.
func TestEachCauseIsNamed(t *testing.T) {
	testenv.Integration(t)
	labels := causeLabels(t)
	if len(labels) != 18 {
		t.Fatalf("want 18 labelled causes, got %d", len(labels))
	}
	containerOnly := map[string]bool{"hostname": true, "user": true, "cpus": true}
	for _, rt := range []string{"host", "embedded", "docker"} {
		t.Run(rt, func(t *testing.T) {
			if rt != "host" {
				testenv.NeedRoot(t)
			}
			python := testenv.Python(t)
			if rt == "docker" {
				python = "python3"
			}
			opts := testOptions(t, rt, 5)
			opts.python, opts.orderFree = python, []string{"causes.py::first_item:items"}
			var out, errOut bytes.Buffer
			err := runRun(context.Background(), opts, []string{"../../fixtures/causes.py"}, &out, &errOut)
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
			// Varying the clock changes nothing but the clock.
			if f := rep.Function("causes.py::touch_device"); rt != "host" && (f == nil || f.Verdict != engine.VerdictDeterministic) {
				t.Errorf("touch_device: want deterministic under a shifted clock, got %+v", f)
			}
			for name, cause := range labels {
				f := rep.Function("causes.py::" + name)
				if f == nil {
					t.Errorf("%s missing", name)
					continue
				}
				if rt == "host" && containerOnly[cause] {
					continue // the host runtime cannot vary it, and says so
				}
				if cause == engine.BreakerDictOrder {
					// Equal but different inputs: a fact beside the
					// verdict, never a finding.
					if f.Verdict == engine.VerdictNondeterministic || f.OrderSensitive == nil {
						t.Errorf("%s: want order-sensitive and not a finding, got %s %+v", name, f.Verdict, f.OrderSensitive)
					}
					continue
				}
				if f.Verdict != engine.VerdictNondeterministic || len(f.Causes) == 0 || f.Causes[0] != cause {
					t.Errorf("%s: want first cause %s, got %s %v", name, cause, f.Verdict, f.Causes)
				}
			}
			if rt == "host" {
				for _, c := range []sandbox.Condition{sandbox.Hostname, sandbox.User, sandbox.CPUs} {
					if !slices.ContainsFunc(rep.Skipped, func(s sandbox.Support) bool { return s.Condition == c }) {
						t.Errorf("the host runtime does not say it skipped %s", c)
					}
				}
			}
		})
	}
}
