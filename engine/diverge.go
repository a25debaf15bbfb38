package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// callTrace is a traced call's line events, as the worker's tracing.py
// writes them, and whether its bound cut it short.
type callTrace struct {
	Events []traceEvent `json:"ev"`
	Cut    bool         `json:"cut"`
}

// traceEvent is [kind, file, line, function, depth, data, from]: a line
// about to run ("l", data: the locals its frame's previous line, from,
// changed) or a frame returning ("r", data: the value).
type traceEvent struct {
	Kind     string
	File     string
	Line     int
	Function string
	Depth    int
	Changes  map[string]string
	Value    string
	From     int
}

func (e *traceEvent) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) != 7 {
		return fmt.Errorf("a trace event has %d fields, not 7", len(raw))
	}
	for i, dst := range []any{&e.Kind, &e.File, &e.Line, &e.Function, &e.Depth} {
		if err := json.Unmarshal(raw[i], dst); err != nil {
			return err
		}
	}
	if e.Kind == "r" {
		if err := json.Unmarshal(raw[5], &e.Value); err != nil {
			return err
		}
	} else if err := json.Unmarshal(raw[5], &e.Changes); err != nil {
		return err
	}
	return json.Unmarshal(raw[6], &e.From)
}

func (e *traceEvent) at(o *traceEvent) bool {
	return e.Kind == o.Kind && e.File == o.File && e.Line == o.Line && e.Function == o.Function && e.Depth == o.Depth
}

// diverge names, for each finding, the first line at which its
// witness's two runs parted: a child per function calls its rungs in the
// witness run's order up to the witness rung, under each witness run's
// conditions, the witness call traced line by line (a repeat's: its two
// calls in one child of its run); the two traces are compared event by
// event. It changes no verdict: a function that sees
// the tracer is judged by its untraced runs, and a trace that does not
// part says so.
func (s *scan) diverge(ctx context.Context, probes []*probe, ladder ladders) {
	var findings []*probe
	for _, p := range probes {
		if w := p.fn.Witness; p.fn.Verdict == VerdictNondeterministic && w != nil {
			if w.Breaker != "" && w.Breaker != report.BreakerRepeat {
				w.NoDivergence = "one interpreter gave both answers (" + w.Breaker + "), to two inputs: only one input's calls are traced apart"
				continue
			}
			findings = append(findings, p)
		}
	}
	if len(findings) == 0 {
		return
	}
	keys, groups := byWitnessRuns(findings)
	// A repeat's two answers came from one interpreter: its witness
	// call and the call after it are traced there, one run.
	for _, p := range findings {
		if w := p.fn.Witness; w.Breaker == report.BreakerRepeat {
			key := [2]int{w.Answers[0].Run, -1}
			if _, ok := groups[key]; !ok {
				keys = append(keys, key)
			}
			groups[key] = append(groups[key], p)
		}
	}
	tasks, res := s.loneTasks(keys, groups, sandbox.PurposeDiverge, true, ladder)
	s.ex.runPool(ctx, tasks)
	if ctx.Err() != nil {
		return
	}
	rel, paths := s.treeFiles()
	for _, key := range keys {
		for _, p := range groups[key] {
			w := p.fn.Witness
			outs := res[key].calls[p.Index][w.Rung]
			var traces []*callTrace
			for _, o := range outs {
				traces = append(traces, o.traces...)
			}
			if len(traces) != 2 || traces[0] == nil || traces[1] == nil {
				why := "it did not answer under the tracer"
				for _, o := range outs {
					if len(o.traces) == 0 && o.detail != "" {
						why += ": " + o.detail
						break
					}
				}
				w.NoDivergence = "the traced call gave no trace in one of the runs: " + why
				continue
			}
			d, why := firstDivergence(traces[0], traces[1], rel)
			w.DivergedAt, w.NoDivergence = d, why
			if d != nil {
				quote(d, paths)
			}
		}
	}
}

// treeFiles maps each scanned file inside the sandbox to its id's path
// (rel), and that to the file on this side (paths).
func (s *scan) treeFiles() (rel, paths map[string]string) {
	rel, paths = map[string]string{}, map[string]string{}
	for _, f := range s.files {
		rel[s.ex.inside(f.Path)] = f.Rel
		paths[f.Rel] = f.Path
	}
	return rel, paths
}

// divergeMoved names, for each function another's calls moved, the first
// line at which its witness call alone and its call after the culprit's
// calls parted, in the run that moved it: two lone segments of one child
// under that run's conditions, the witness call traced in each.
func (s *scan) divergeMoved(ctx context.Context, moved []*bisection, byIndex map[int]*probe, ladder ladders) {
	if len(moved) == 0 {
		return
	}
	type pair struct {
		b            *bisection
		sh           *shard
		alone, after *probe
	}
	byRun := map[int][]*shard{}
	var runs []int
	var pairs []pair
	for i, b := range moved {
		shs := byRun[b.run]
		if shs == nil {
			runs = append(runs, b.run)
		}
		if len(shs) < s.ex.opts.Jobs {
			shs = append(shs, &shard{ID: len(shs), calls: [][2]int{}, upTo: map[int]int{}, trace: 1})
			byRun[b.run] = shs
		}
		sh := shs[i%len(shs)]
		alone := b.segment(sh, nil, byIndex)
		after := b.segment(sh, []int{b.culprit}, byIndex)
		sh.upTo[alone.Index], sh.upTo[after.Index] = b.rung, b.rung
		pairs = append(pairs, pair{b, sh, alone, after})
	}
	tasks, res := s.segmentTasks(byRun, runs, sandbox.PurposeDiverge, ladder)
	s.ex.runPool(ctx, tasks)
	if ctx.Err() != nil {
		return
	}
	rel, paths := s.treeFiles()
	for _, pr := range pairs {
		m := pr.b.p.fn.MovedBy
		r := res[pr.sh]
		a, b := r.calls[pr.alone.Index][pr.b.rung][0], r.calls[pr.after.Index][pr.b.rung][0]
		if len(a.traces) == 0 || len(b.traces) == 0 || a.traces[0] == nil || b.traces[0] == nil {
			m.NoDivergence = "the traced call gave no trace alone or after the culprit's calls"
			continue
		}
		d, why := firstDivergence(a.traces[0], b.traces[0], rel)
		m.DivergedAt, m.NoDivergence = d, why
		if d != nil {
			quote(d, paths)
		}
	}
}

// firstDivergence compares two traces of one call event by event and
// names the first place they differ inside the scanned tree (rel): in
// what a line set (data), what a frame returned, or where the runs went
// on (control), with the library divergence that led to it (the value a
// library call handed the scanned line). Where two runs take other lines
// inside a library call, the comparison goes on from where that call
// returns to the tree: its own lines there are the library's (a random
// loop runs as often as its draws say), and only what it returned is
// the tree's. Where the runs part in a library and never in the tree,
// the library's line is given, Under the scanned line it was reached
// from. why says why there is none.
func firstDivergence(a, b *callTrace, rel map[string]string) (*report.Divergence, string) {
	ea, eb := a.Events, b.Events
	var lib, libBefore *report.Divergence // libBefore: lib as the tree's last line left it
	libAt := -1
walk:
	for i, j := 0, 0; i < len(ea) && j < len(eb); i, j = i+1, j+1 {
		x, y := &ea[i], &eb[j]
		if _, ok := rel[x.File]; ok {
			libBefore = lib
		}
		var d *report.Divergence
		switch {
		case !x.at(y):
			if i == 0 || j == 0 {
				return nil, "the two traces start apart"
			}
			// The runs parted after the last event they shared: a line,
			// or a return, whose caller's line then went on.
			k := i - 1
			if ea[k].Kind == "r" {
				k = callerIndex(ea, k)
			}
			if k < 0 {
				return nil, "the two traces part where no line of theirs was traced"
			}
			prev := &ea[k]
			d = &report.Divergence{File: prev.File, Line: prev.Line, Function: prev.Function, Kind: "control",
				Values: []string{fmt.Sprintf("line %d", x.Line), fmt.Sprintf("line %d", y.Line)}}
			if r, ok := rel[d.File]; ok {
				d.File, d.Library = r, lib
				return d, ""
			}
			top := scannedCallerIndex(ea, k, rel)
			ri, rj := -1, -1
			if top >= 0 {
				ri, rj = returnIndex(ea, i, ea[top].Depth+1), returnIndex(eb, j, ea[top].Depth+1)
			}
			if ri < 0 || rj < 0 {
				// No tree frame to come back to, or a bound cut the call.
				d.File = libraryPath(d.File)
				lib, libAt = d, k
				break walk
			}
			ra, rb := &ea[ri], &eb[rj]
			if ra.Value != rb.Value {
				lib = &report.Divergence{File: libraryPath(ra.File), Line: ra.Line, Function: ra.Function, Kind: "return",
					Values: []string{ra.Value, rb.Value}}
				libAt = ri
			} else {
				lib = libBefore // what parted inside gave the tree nothing new
			}
			i, j = ri, rj
			continue
		case x.Kind == "r" && x.Value != y.Value:
			d = &report.Divergence{File: x.File, Line: x.Line, Function: x.Function, Kind: "return", Values: []string{x.Value, y.Value}}
		case x.Kind == "l":
			if name := firstChanged(x.Changes, y.Changes); name != "" {
				d = &report.Divergence{File: x.File, Line: x.From, Function: x.Function, Kind: "data", Local: name,
					Values: []string{orNone(x.Changes, name), orNone(y.Changes, name)}}
				if x.From == 0 {
					// A frame's first line: its arguments came from the
					// line that called it.
					d.File, d.Line, d.Function = x.File, x.Line, x.Function
					if c := callerIndex(ea, i); c >= 0 {
						d.File, d.Line, d.Function = ea[c].File, ea[c].Line, ea[c].Function
					}
				}
			}
		}
		if d == nil {
			continue
		}
		if r, ok := rel[d.File]; ok {
			d.File = r
			d.Library = lib
			return d, ""
		}
		d.File = libraryPath(d.File)
		lib, libAt = d, i
	}
	if lib != nil {
		lib.Outside = true
		if k := scannedCallerIndex(ea, libAt, rel); k >= 0 {
			lib.Under = &report.Divergence{File: rel[ea[k].File], Line: ea[k].Line, Function: ea[k].Function}
		}
		return lib, ""
	}
	if a.Cut || b.Cut {
		return nil, fmt.Sprintf("the traces agree for the %d events their bound kept", min(len(ea), len(eb)))
	}
	return nil, "under the tracer the two runs took the same lines and held the same values: it moves only untraced"
}

// callerIndex is the index of the line that called event i's frame, or
// -1.
func callerIndex(events []traceEvent, i int) int {
	for j := i - 1; j >= 0; j-- {
		if events[j].Depth < events[i].Depth {
			return j
		}
	}
	return -1
}

// scannedCallerIndex is the index of the scanned tree's line that event
// i, in a library, was reached from: the last event before it, less
// deep, in the tree; or -1.
func scannedCallerIndex(events []traceEvent, i int, rel map[string]string) int {
	depth := events[i].Depth
	for j := i - 1; j >= 0; j-- {
		if e := &events[j]; e.Depth < depth {
			if _, ok := rel[e.File]; ok {
				return j
			}
			depth = e.Depth
		}
	}
	return -1
}

// returnIndex is the index, from i on, of the first return of a frame
// at depth, or -1 when the trace ends first.
func returnIndex(events []traceEvent, i, depth int) int {
	for ; i < len(events); i++ {
		if events[i].Kind == "r" && events[i].Depth == depth {
			return i
		}
	}
	return -1
}

func firstChanged(x, y map[string]string) string {
	var names []string
	for k := range x {
		names = append(names, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			names = append(names, k)
		}
	}
	best := ""
	for _, k := range names {
		if x[k] != y[k] && (best == "" || k < best) {
			best = k
		}
	}
	return best
}

func orNone(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return "(unchanged)"
}

// libraryPath shows a library file by its last two parts
// (python3.11/random.py): where it lies on the machine is no part of the
// finding.
func libraryPath(p string) string {
	dir, file := filepath.Split(p)
	return filepath.Join(filepath.Base(dir), file)
}

// excerptLines is how many lines either side of a divergence its
// excerpt holds.
const excerptLines = 2

// quote gives the tree's line of a divergence its source, trimmed, and
// the lines around it (paths: a scanned file's id path -> its path).
func quote(d *report.Divergence, paths map[string]string) {
	if d.Outside {
		if d = d.Under; d == nil {
			return
		}
	}
	path, ok := paths[d.File]
	if !ok {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	ex := &report.Excerpt{First: max(1, d.Line-excerptLines)}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan() && n <= d.Line+excerptLines; n++ {
		if n < ex.First {
			continue
		}
		line := strings.TrimRight(sc.Text(), " \t")
		if r := []rune(line); len(r) > 120 {
			line = string(r[:120]) + "…"
		}
		ex.Lines = append(ex.Lines, line)
		if n == d.Line {
			d.Source = strings.TrimSpace(line)
		}
	}
	if d.Source != "" {
		d.Excerpt = ex
	}
}
