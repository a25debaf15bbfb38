package engine

import (
	"reflect"
	"testing"
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
