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

// TestAdmission: on a runtime that starts interpreters ahead, a job runs
// only while it holds one of the scan's places; it gives its place back
// when it ends, and one that ends while it waits never takes one.
func TestAdmission(t *testing.T) {
	slots := make(chan struct{}, 1)
	var waits int
	newAdm := func(admitted *int) *admission {
		return &admission{slots: slots, done: make(chan struct{}), waiting: func() { waits++ }, admitted: func() { *admitted++ }}
	}
	var n1, n2, n3 int
	first, second, third := newAdm(&n1), newAdm(&n2), newAdm(&n3)
	if err := first.admit(t.Context()); err != nil || n1 != 1 || waits != 1 {
		t.Fatalf("first admit = %v, admitted %d times after %d waits; want nil, once, after one (its start's limit lifted)", err, n1, waits)
	}
	waited := make(chan error)
	go func() { waited <- second.admit(t.Context()) }()
	select {
	case err := <-waited:
		t.Fatalf("second admitted (%v) while the only place was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	first.end()
	if err := <-waited; err != nil || n2 != 1 {
		t.Fatalf("second admit after the first ended = %v, admitted %d; want nil, once", err, n2)
	}
	// third waits, then ends before a place frees: it never takes one.
	go func() { waited <- third.admit(t.Context()) }()
	third.end()
	if err := <-waited; err == nil || n3 != 0 {
		t.Fatalf("an ended job's admit = %v, admitted %d; want an error, never", err, n3)
	}
	second.end()
	second.end() // safe twice
	if len(slots) != 0 {
		t.Fatalf("%d places still held after every job ended", len(slots))
	}
	if err := third.admit(t.Context()); err == nil || len(slots) != 0 {
		t.Fatalf("admit after end = %v with %d places held; want an error and none", err, len(slots))
	}
}
