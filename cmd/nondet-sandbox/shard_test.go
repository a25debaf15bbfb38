package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// splitTargets are the fixtures a split scan is tested on: several files
// of several sizes, findings of every cause the fixtures have.
var splitTargets = []string{"../../fixtures/known.py", "../../fixtures/causes.py", "../../fixtures/precision"}

// TestSplitScanMergesToTheWhole scans the fixtures whole and in three
// parts with one seed, merges the parts, and finds the report of the
// whole: every byte but the interpreters started (more for three parts)
// and the answers no seed can fix (an address, a clock, a random number:
// cause "process"; a process id, which counts the processes its container
// started before: cause "pid"), and what those held where their runs
// parted.
func TestSplitScanMergesToTheWhole(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	scan := func(shard string) *report.Report {
		opts := testOptions(t, "embedded", 5)
		opts.shard = shard
		var out, errOut bytes.Buffer
		err := runRun(context.Background(), opts, splitTargets, &out, &errOut)
		if errors.Is(err, engine.ErrRuntime) {
			testenv.Skip(t, err.Error())
		}
		if err != nil && !errors.Is(err, errFindings) {
			t.Fatalf("--shard %q: %v\n%s", shard, err, errOut.String())
		}
		var rep report.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return &rep
	}
	whole := scan("")
	var parts []*report.Report
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		p := scan(fmt.Sprintf("%d/3", k))
		if p.Part == nil || p.Part.Index != k || p.Part.Of != 3 {
			t.Fatalf("part %d says it is %+v", k, p.Part)
		}
		if len(p.Functions) == 0 || len(p.Functions) == len(whole.Functions) {
			t.Errorf("part %d holds %d of %d functions: not a split", k, len(p.Functions), len(whole.Functions))
		}
		for _, f := range p.Functions {
			seen[f.ID]++
		}
		parts = append(parts, p)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s is in %d parts", id, n)
		}
	}
	merged, err := report.Merge([]*report.Report{parts[2], parts[0], parts[1]})
	if err != nil {
		t.Fatal(err)
	}
	if merged.Processes <= whole.Processes {
		t.Errorf("three parts started %d interpreters, the whole %d: the parts' were not summed", merged.Processes, whole.Processes)
	}
	a, b := unfixable(t, whole), unfixable(t, merged)
	if !bytes.Equal(a, b) {
		t.Errorf("the merged parts are not the whole:\n%s", firstDiff(a, b))
	}
	if merged.Census.Nondeterministic == 0 || merged.Census.Nondeterministic != whole.Census.Nondeterministic {
		t.Errorf("census %+v, whole %+v", merged.Census, whole.Census)
	}
}

// unfixable is a report's JSON without what no seed fixes.
func unfixable(t *testing.T, r *report.Report) []byte {
	t.Helper()
	c := *r
	c.Processes = 0
	var fs []*report.Function
	for _, f := range r.Functions {
		g := *f
		if g.Witness != nil && (slices.Contains(g.Causes, "process") || slices.Contains(g.Causes, "clock") || slices.Contains(g.Causes, "pid")) {
			w := *g.Witness
			w.Answers = slices.Clone(w.Answers)
			for i := range w.Answers {
				w.Answers[i].Value = "(no seed fixes it)"
			}
			if d := w.DivergedAt; d != nil {
				// Where they parted stays; what each run held there is
				// the same unfixable answer.
				d2 := *d
				d2.Values, d2.Library = nil, nil
				w.DivergedAt = &d2
			}
			g.Witness = &w
		}
		fs = append(fs, &g)
	}
	c.Functions = fs
	data, err := json.MarshalIndent(&c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n  whole:  %s\n  merged: %s\ncontext:\n%s", i+1, la[i], lb[i], strings.Join(la[lo:i+1], "\n"))
		}
	}
	return fmt.Sprintf("one is longer: %d and %d lines", len(la), len(lb))
}

// TestShardFlag: --shard takes K/N with a seed, and a part with no file
// (more parts than files) is an empty report that merges, with no sandbox.
func TestShardFlag(t *testing.T) {
	for _, bad := range []string{"0/3", "4/3", "3", "a/b", "1/0", "1/3/5", " 1/3"} {
		opts := testOptions(t, "host", 5)
		opts.shard = bad
		err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, engine.ErrUsage) || !strings.Contains(err.Error(), "K/N") {
			t.Errorf("--shard %q: %v, want a usage error naming K/N", bad, err)
		}
	}
	opts := testOptions(t, "host", 0)
	opts.shard = "1/2"
	if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, engine.ErrUsage) || !strings.Contains(err.Error(), "--seed") {
		t.Errorf("--shard without --seed: %v", err)
	}
	// One file, two parts: the second is empty, and no sandbox is needed
	// to say so (the runtime named does not exist on purpose).
	opts = testOptions(t, "no-such-runtime", 5)
	opts.shard = "2/2"
	var out bytes.Buffer
	if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("empty part: %v", err)
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Part == nil || rep.Part.Index != 2 || len(rep.Functions) != 0 || len(rep.Modules) != 0 {
		t.Errorf("empty part: %+v, %d functions, %d modules", rep.Part, len(rep.Functions), len(rep.Modules))
	}
}

// TestMergeCommand: merge reads part files, refuses what is not one
// scan's parts with a usage error that says what, and exits 1 when the
// whole has findings.
func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *report.Report) string {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	part := func(k, n int, seed uint64, verdict string) *report.Report {
		r := &report.Report{Tool: report.Tool{Name: "nondet-sandbox", Version: version}, Runtime: "embedded", Seed: seed,
			Targets: []string{"src"}, Part: &report.Part{Index: k, Of: n},
			Modules:   []report.Module{{Path: fmt.Sprintf("m%d.py", k), Status: "ok"}},
			Functions: []*report.Function{{ID: fmt.Sprintf("m%d.py::f", k), Verdict: verdict, Causes: []string{}}}}
		r.Finish()
		return r
	}
	p1 := write("p1.json", part(1, 2, 7, report.VerdictDeterministic))
	p2 := write("p2.json", part(2, 2, 7, report.VerdictNondeterministic))
	other := write("other.json", part(2, 2, 8, report.VerdictDeterministic))
	whole := write("whole.json", &report.Report{Tool: report.Tool{Name: "nondet-sandbox"}})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{p1}, "part 2 of 2 is missing"},
		{[]string{p1, p1, p2}, "given twice"},
		{[]string{p1, other}, "differ in seed"},
		{[]string{p1, whole}, "not a part"},
		{[]string{p1, filepath.Join(dir, "none.json")}, "none.json"},
	} {
		err := runMerge(context.Background(), outputOptions{format: "json"}, c.args, &bytes.Buffer{})
		if !errors.Is(err, engine.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("merge %v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
	var out bytes.Buffer
	err := runMerge(context.Background(), outputOptions{format: "json"}, []string{p2, p1}, &out)
	if !errors.Is(err, errFindings) {
		t.Fatalf("merge of a part with a finding: %v, want the findings status", err)
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Part != nil || len(rep.Functions) != 2 || rep.Functions[0].ID != "m1.py::f" || rep.Modules[0].Path != "m1.py" ||
		rep.Census.Nondeterministic != 1 || rep.Census.Deterministic != 1 {
		t.Errorf("merged: part %+v, functions %d, census %+v", rep.Part, len(rep.Functions), rep.Census)
	}
}
