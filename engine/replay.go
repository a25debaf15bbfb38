package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// Replayed is one run's answer to a witness's input, again.
type Replayed struct {
	Run     sandbox.RunConditions `json:"run"`
	Value   string                `json:"value"`
	Breaker string                `json:"breaker,omitempty"`
	Value2  string                `json:"value2,omitempty"` // the breaker's second answer
	Detail  string                `json:"detail,omitempty"` // why there is no value
}

// Replay re-runs one function of a report on its witness input, under the
// conditions of the witness's two runs, exactly as recorded. root is the
// folder the report's targets are relative to ("" for the current one).
func Replay(ctx context.Context, opts Options, rep *report.Report, id, root string) ([]Replayed, *report.Function, error) {
	f := rep.Function(id)
	if f == nil {
		return nil, nil, &usageError{fmt.Sprintf("no function %q in the report", id)}
	}
	w := f.Replayable()
	if w == nil {
		return nil, f, &usageError{fmt.Sprintf("%s has no witness to replay (its verdict is %s)", f.ID, f.Verdict)}
	}
	target, name, err := locate(rep, f.ID, root, opts.ProjectRoot)
	if err != nil {
		return nil, f, err
	}
	if opts.Notes != nil {
		// The report chose the file: say which one runs.
		fmt.Fprintf(opts.Notes, "nondet-sandbox: replaying %s::%s\n", target.Path, name)
	}
	var runs []sandbox.RunConditions
	for _, a := range w.Answers {
		if a.Run < 0 || a.Run >= len(rep.RunsOf(f)) {
			return nil, f, &usageError{fmt.Sprintf("the report's witness names run %d, which it does not describe", a.Run)}
		}
		rc, err := checkRun(rep.RunOf(f, a.Run), opts.Runtime.Isolated())
		if err != nil {
			return nil, f, err
		}
		rc.Purpose = sandbox.PurposeReplay
		runs = append(runs, rc)
	}
	opts.ExplicitRuns = runs
	opts.Tests = f.TestCase // a test's finding came from a scan with --tests
	opts.Runs = len(runs)
	opts.SmellRuns = -1
	s, closeScan, err := openTargets(ctx, opts, []Target{target})
	if err != nil {
		return nil, f, err
	}
	defer closeScan()
	s.context = packageSiblings(s.files)
	pr, err := s.probeAll(ctx, []Target{target})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, f, err
	}
	probes, res := pr.probes, pr.results
	if len(probes) != 1 {
		return nil, f, fmt.Errorf("replay: %s could not be probed", f.ID)
	}
	p := probes[0]
	if fails := res.importErr[p.Module]; len(fails) == len(runs) {
		return nil, f, fmt.Errorf("replay: import failed: %s", firstOf(fails))
	}
	rungs := res.calls[p.Index]
	if w.Rung >= len(rungs) {
		return nil, f, fmt.Errorf("replay: the ladder has no rung %d any more", w.Rung)
	}
	// A rung is an index: a changed signature (another arity, annotation
	// or docstring example) puts another input there, and replaying it
	// would say "fixed" of a call the report never made.
	if now := pr.disc.ladder[p.Ladder]; w.Rung < len(now) && !slices.Equal(now[w.Rung], w.Args) {
		return nil, f, &usageError{fmt.Sprintf("%s changed since the report: its rung %d is now (%s), the witness was (%s); scan it again",
			f.ID, w.Rung, strings.Join(now[w.Rung], ", "), strings.Join(w.Args, ", "))}
	}
	if recv := pr.disc.receivers[p.Ladder]; w.Receiver != "" && !p.TestCase && w.Rung < len(recv) {
		if now := receiverExpr(p.Class, p.callee(w.Rung), recv[w.Rung]); now != w.Receiver {
			return nil, f, &usageError{fmt.Sprintf("%s changed since the report: its rung %d is now called on %s, the witness on %s; scan it again",
				f.ID, w.Rung, now, w.Receiver)}
		}
	}
	var out []Replayed
	for slot, o := range rungs[w.Rung] {
		r := Replayed{Run: rep.Runs[w.Answers[slot].Run], Value: o.value, Breaker: o.breaker, Value2: o.value2, Detail: o.detail}
		out = append(out, r)
	}
	return out, f, nil
}

// locate finds the file of a report's function id from the report's
// targets, relative to root: the target to probe, and the function's
// name in it. An id is relative to its project's root (projectRoot, when
// set, says which), some folder at or above its target; else, as in
// reports of older versions, the nearest folder at or above the target
// that holds the id's file inside the target.
func locate(rep *report.Report, id, root string, projectRoot func(string) string) (Target, string, error) {
	file, name, err := checkID(id)
	if err != nil {
		return Target{}, "", err
	}
	for _, arg := range rep.Targets {
		t, err := ParseTarget(filepath.Join(root, targetFile(arg)))
		if err != nil {
			continue
		}
		var dirs []string
		if projectRoot != nil {
			if r := projectRoot(t.Base); r != "" {
				dirs = append(dirs, r)
			}
		}
		for dir := t.Base; ; dir = filepath.Dir(dir) {
			dirs = append(dirs, dir)
			if dir == filepath.Dir(dir) {
				break
			}
		}
		for _, dir := range dirs {
			path := filepath.Join(dir, filepath.FromSlash(file))
			if path == t.Path || within(path, t.Path) {
				if _, err := os.Stat(path); err == nil {
					if target, err := ParseTarget(path + "::" + name); err == nil {
						return target, name, nil
					}
				}
			}
		}
	}
	return Target{}, "", &usageError{fmt.Sprintf("cannot find %s from the report's targets %v; run replay from the folder the scan ran in, or pass --root", file, rep.Targets)}
}

// checkID splits a function id read from a report into its file and
// function, and refuses one no scan writes: the file must be a .py path
// inside the target it came from (no "..", not absolute), the function a
// name. A report is untrusted input; its id must not reach a file outside
// the scanned tree.
func checkID(id string) (file, name string, err error) {
	if !strings.Contains(id, "::") {
		return "", "", &usageError{fmt.Sprintf("%q is not a function id (FILE.py::function or FILE.py::Class.method)", id)}
	}
	file, name = report.SplitID(id)
	if !strings.HasSuffix(file, ".py") || !filepath.IsLocal(filepath.FromSlash(file)) || strings.Contains(file, "\\") || filepath.ToSlash(filepath.Clean(filepath.FromSlash(file))) != file {
		return "", "", &usageError{fmt.Sprintf("the report's id %q names a file outside the scanned tree; the report was changed or is not from this tool", id)}
	}
	if !isQualName(name) {
		return "", "", &usageError{fmt.Sprintf("the report's id %q does not end in a function name; the report was changed or is not from this tool", id)}
	}
	return file, name, nil
}

// targetFile is a target argument without its ::function.
func targetFile(arg string) string {
	file, _ := report.SplitID(arg)
	return file
}
