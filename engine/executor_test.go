package engine

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestOutermost(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{nil, nil},
		{[]string{"/a"}, []string{"/a"}},
		{[]string{"/a/b/c", "/a/b"}, []string{"/a/b"}},
		// "/a/b-c" sorts between "/a/b" and "/a/b/c": the last must still go.
		{[]string{"/a/b/c", "/a/b-c", "/a/b"}, []string{"/a/b", "/a/b-c"}},
		{[]string{"/x", "/x", "/y/z"}, []string{"/x", "/y/z"}},
	} {
		if got := outermost(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("outermost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSlowestFunctions: a phase's slowest functions are its answered
// calls' time summed per function, most first, five at most; the next
// phase counts from nothing.
func TestSlowestFunctions(t *testing.T) {
	x := &executor{}
	for i, d := range []time.Duration{3, 9, 1, 4, 2, 7, 5} {
		p := &probe{ID: fmt.Sprintf("m.py::f%d", i)}
		x.timeCall(p, d*time.Second)
		if i == 2 {
			x.timeCall(p, 10*time.Second) // f2: 11 s over two calls
		}
	}
	got := x.slowest()
	var ids []string
	for _, f := range got {
		ids = append(ids, fmt.Sprintf("%s %s %d", f.ID, f.Time, f.Calls))
	}
	want := []string{"m.py::f2 11s 2", "m.py::f1 9s 1", "m.py::f5 7s 1", "m.py::f6 5s 1", "m.py::f3 4s 1"}
	if !slices.Equal(ids, want) {
		t.Errorf("slowest %q, want %q", ids, want)
	}
	if rest := x.slowest(); len(rest) != 0 {
		t.Errorf("the next phase starts with %v", rest)
	}
}
