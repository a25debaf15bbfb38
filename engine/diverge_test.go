package engine

import (
	"testing"
)

// Trace events as tracing.py writes them, for the comparison's tests.
func line(file string, n int, fn string, depth, from int, changes map[string]string) traceEvent {
	return traceEvent{Kind: "l", File: file, Line: n, Function: fn, Depth: depth, Changes: changes, From: from}
}

func ret(file string, n int, fn string, depth int, value string) traceEvent {
	return traceEvent{Kind: "r", File: file, Line: n, Function: fn, Depth: depth, Value: value}
}

const (
	tree = "/scan/0/lazy.py"
	lib  = "/usr/lib/python3.11/random.py"
)

// drawLoop is a library call that draws until a draw fits: how often the
// loop runs is the draws' own business, as random.sample's is.
func drawLoop(loops int, result string) []traceEvent {
	ev := []traceEvent{line(lib, 470, "sample", 2, 0, map[string]string{"n": "V:3"})}
	for k := 0; k < loops; k++ {
		ev = append(ev, line(lib, 471, "sample", 2, 470, nil), line(lib, 472, "sample", 2, 471, nil))
	}
	return append(ev, line(lib, 474, "sample", 2, 472, nil), ret(lib, 474, "sample", 2, result))
}

func trace(parts ...[]traceEvent) *callTrace {
	t := &callTrace{}
	for _, p := range parts {
		t.Events = append(t.Events, p...)
	}
	return t
}

func TestFirstDivergence(t *testing.T) {
	rel := map[string]string{tree: "lazy.py"}
	enter := []traceEvent{line(tree, 14, "f", 1, 0, map[string]string{"items": "V:[1, 2, 3]"})}
	for _, c := range []struct {
		name             string
		a, b             *callTrace
		file             string
		line             int
		kind             string
		library, under   int // the library's and Under's lines, 0 for none
		values0, values1 string
	}{
		{
			// The loop ran once in one run and three times in the other,
			// and the tree handed back what it got as an iterator (no
			// value): the library's return is the line, whatever the
			// loop did, under the tree's line that called it.
			name: "a library loop parts, the tree holds no value",
			a:    trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(1, "V:[2, 1, 3]"), []traceEvent{ret(tree, 15, "f", 1, "<list_iterator>")}),
			b:    trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(3, "V:[3, 1, 2]"), []traceEvent{ret(tree, 15, "f", 1, "<list_iterator>")}),
			file: "python3.11/random.py", line: 474, kind: "return", under: 15,
			values0: "V:[2, 1, 3]", values1: "V:[3, 1, 2]",
		},
		{
			name: "a library loop parts, the tree keeps the value",
			a: trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(1, "V:[2, 1, 3]"),
				[]traceEvent{line(tree, 16, "f", 1, 15, map[string]string{"xs": "V:[2, 1, 3]"}), ret(tree, 16, "f", 1, "V:[2, 1, 3]")}),
			b: trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(2, "V:[3, 1, 2]"),
				[]traceEvent{line(tree, 16, "f", 1, 15, map[string]string{"xs": "V:[3, 1, 2]"}), ret(tree, 16, "f", 1, "V:[3, 1, 2]")}),
			file: "lazy.py", line: 15, kind: "data", library: 474,
			values0: "V:[2, 1, 3]", values1: "V:[3, 1, 2]",
		},
		{
			// What parted inside the library gave back the same: not
			// what fed the tree's own divergence after it.
			name: "a library parts and returns the same",
			a: trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(1, "V:0"),
				[]traceEvent{line(tree, 16, "f", 1, 15, nil), ret(tree, 16, "f", 1, "V:1")}),
			b: trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(4, "V:0"),
				[]traceEvent{line(tree, 16, "f", 1, 15, nil), ret(tree, 16, "f", 1, "V:2")}),
			file: "lazy.py", line: 16, kind: "return",
			values0: "V:1", values1: "V:2",
		},
		{
			// A library returned two values and the tree's next lines
			// differ: the tree's line that took them is where control
			// parted, not the library's return.
			name: "the tree branches on what a library returned",
			a: trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(1, "V:1"),
				[]traceEvent{line(tree, 16, "f", 1, 15, nil), ret(tree, 16, "f", 1, "V:'one'")}),
			b: trace(enter, []traceEvent{line(tree, 15, "f", 1, 14, nil)}, drawLoop(1, "V:2"),
				[]traceEvent{line(tree, 18, "f", 1, 15, nil), ret(tree, 18, "f", 1, "V:'two'")}),
			file: "lazy.py", line: 15, kind: "control", library: 474,
			values0: "line 16", values1: "line 18",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, why := firstDivergence(c.a, c.b, rel)
			if d == nil {
				t.Fatalf("no divergence: %s", why)
			}
			if d.File != c.file || d.Line != c.line || d.Kind != c.kind {
				t.Errorf("diverged at %s:%d (%s), want %s:%d (%s)", d.File, d.Line, d.Kind, c.file, c.line, c.kind)
			}
			if len(d.Values) != 2 || d.Values[0] != c.values0 || d.Values[1] != c.values1 {
				t.Errorf("values %q, want %q and %q", d.Values, c.values0, c.values1)
			}
			switch {
			case c.library == 0 && d.Library != nil:
				t.Errorf("library line %+v, want none", d.Library)
			case c.library != 0 && (d.Library == nil || d.Library.Line != c.library):
				t.Errorf("library line %+v, want line %d", d.Library, c.library)
			}
			if d.Outside != (c.file != "lazy.py") {
				t.Errorf("outside the tree: %v, in %s", d.Outside, d.File)
			}
			switch {
			case c.under == 0 && d.Under != nil:
				t.Errorf("under %+v, want none", d.Under)
			case c.under != 0 && (d.Under == nil || d.Under.Line != c.under || d.Under.File != "lazy.py"):
				t.Errorf("under %+v, want lazy.py:%d", d.Under, c.under)
			}
		})
	}
}
