package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// The worker's code_name names a module's bytecode file the same way
// (engine/worker/tests/test_bytecode.py, Bytecode.test_code_name_is_the_engines).
func TestCodeNameIsTheWorkers(t *testing.T) {
	if got, want := codeName("/scan/0/pkg/mod.py"), "dc7ad833b0d5bf24e2f914d7b236914a.pyc"; got != want {
		t.Fatalf("codeName = %s, want %s", got, want)
	}
}

// A module's code lands in the code folder under its name, and the folder
// is bound into later jobs once, read-only at codeTarget (where it is, on
// the host).
func TestKeptCodeIsBoundOnce(t *testing.T) {
	s := &executor{scratch: t.TempDir()}
	s.bindCode(true)
	if len(s.binds) != 0 || s.codeDir != "" {
		t.Fatalf("bound with no code kept: %v", s.binds)
	}
	for _, p := range []string{"/scan/0/pkg/mod.py", "/scan/0/pkg/other.py"} {
		if err := s.keepCode(p, []byte("code of "+p)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(filepath.Join(s.scratch, "code", "dc7ad833b0d5bf24e2f914d7b236914a.pyc"))
	if err != nil || string(got) != "code of /scan/0/pkg/mod.py" {
		t.Fatalf("kept code: %q, %v", got, err)
	}
	s.bindCode(true)
	s.bindCode(true)
	if len(s.binds) != 1 || s.binds[0].Target != codeTarget || s.binds[0].Source != filepath.Join(s.scratch, "code") || s.codeDir != codeTarget {
		t.Fatalf("binds %v, codeDir %q", s.binds, s.codeDir)
	}
	host := &executor{scratch: s.scratch, codeKept: true}
	host.bindCode(false)
	if dir := filepath.Join(s.scratch, "code"); len(host.binds) != 1 || host.binds[0].Target != dir || host.codeDir != dir {
		t.Fatalf("on the host: binds %v, codeDir %q", host.binds, host.codeDir)
	}
}
