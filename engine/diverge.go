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

// diverge names, for each cross-run finding, the first line at which its
// witness's two runs parted: a child per function calls its rungs in the
// witness run's order up to the witness rung, under each witness run's
// conditions, the witness call traced line by line; the two traces are
// compared event by event. It changes no verdict: a function that sees
// the tracer is judged by its untraced runs, and a trace that does not
// part says so.
func (s *scan) diverge(ctx context.Context, probes []*probe, ladder ladders) {
	var findings []*probe
	for _, p := range probes {
		if w := p.fn.Witness; p.fn.Verdict == VerdictNondeterministic && w != nil {
			if w.Breaker != "" {
				w.NoDivergence = "one interpreter gave both answers (" + w.Breaker + "): its two calls are not traced apart yet"
				continue
			}
			findings = append(findings, p)
		}
	}
	if len(findings) == 0 {
		return
	}
	keys, groups := byWitnessRuns(findings)
	tasks, res := s.loneTasks(keys, groups, "diverge", true, ladder)
	s.ex.runPool(ctx, tasks)
	if ctx.Err() != nil {
		return
	}
	rel := map[string]string{} // a scanned file inside the sandbox -> its id's path
	for _, f := range s.files {
		rel[s.ex.inside(f.Path)] = f.Rel
	}
	for _, key := range keys {
		for _, p := range groups[key] {
			w := p.fn.Witness
			outs := res[key].calls[p.Index][w.Rung]
			a, b := outs[0].trace, outs[1].trace
			switch {
			case a == nil || b == nil:
				why := "it did not answer under the tracer"
				for _, o := range outs {
					if o.trace == nil && o.detail != "" {
						why += ": " + o.detail
						break
					}
				}
				w.NoDivergence = "the traced call gave no trace in one of the runs: " + why
			default:
				d, why := firstDivergence(a, b, rel)
				w.DivergedAt, w.NoDivergence = d, why
				if d != nil {
					d.Source = sourceLine(p, d, rel)
				}
			}
		}
	}
}

// firstDivergence compares two traces of one call event by event and
// names the first place they differ inside the scanned tree (rel): in
// what a line set (data), what a frame returned, or where the runs went
// on (control), with the last library divergence that led to it (the
// value a library call handed the scanned line). Where the runs part in
// a library first and never in the tree, or take other lines there, the
// library's line is given, Under the scanned line it was reached from.
// why says why there is none.
func firstDivergence(a, b *callTrace, rel map[string]string) (*report.Divergence, string) {
	n := min(len(a.Events), len(b.Events))
	var lib *report.Divergence
	libAt := -1
	for i := 0; i < n; i++ {
		x, y := &a.Events[i], &b.Events[i]
		var d *report.Divergence
		control := false
		switch {
		case !x.at(y):
			if i == 0 {
				return nil, "the two traces start apart"
			}
			prev := &a.Events[i-1]
			d = &report.Divergence{File: prev.File, Line: prev.Line, Function: prev.Function, Kind: "control",
				Values: []string{fmt.Sprintf("line %d", x.Line), fmt.Sprintf("line %d", y.Line)}}
			control = true
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
					if c := callerOf(a.Events, i); c != nil {
						d.File, d.Line, d.Function = c.File, c.Line, c.Function
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
		lib, libAt = d, i
		lib.File = libraryPath(lib.File)
		if control {
			break
		}
	}
	if lib != nil {
		lib.Under = scannedCaller(a.Events, libAt, rel)
		return lib, ""
	}
	if a.Cut || b.Cut {
		return nil, fmt.Sprintf("the traces agree for the %d events their bound kept", n)
	}
	return nil, "under the tracer the two runs took the same lines and held the same values: it moves only untraced"
}

// callerOf is the event of the line that called event i's frame.
func callerOf(events []traceEvent, i int) *traceEvent {
	for j := i - 1; j >= 0; j-- {
		if events[j].Depth < events[i].Depth {
			return &events[j]
		}
	}
	return nil
}

// scannedCaller is the scanned tree's line event i, in a library, was
// reached from: the last event before it, less deep, in the tree.
func scannedCaller(events []traceEvent, i int, rel map[string]string) *report.Divergence {
	depth := events[i].Depth
	for j := i - 1; j >= 0; j-- {
		if e := &events[j]; e.Depth < depth {
			if r, ok := rel[e.File]; ok {
				return &report.Divergence{File: r, Line: e.Line, Function: e.Function}
			}
			depth = e.Depth
		}
	}
	return nil
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

// sourceLine is the divergence's line of source, trimmed, when it is in
// the finding's own file.
func sourceLine(p *probe, d *report.Divergence, rel map[string]string) string {
	if d.File != p.File.Rel {
		return ""
	}
	f, err := os.Open(p.File.Path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if n == d.Line {
			line := strings.TrimSpace(sc.Text())
			if len(line) > 100 {
				line = line[:100] + "…"
			}
			return line
		}
	}
	return ""
}
