package engine

import "testing"

// The worker's code_name names a module's bytecode file the same way
// (engine/test_worker.py, Bytecode.test_code_name_is_the_engines).
func TestCodeNameIsTheWorkers(t *testing.T) {
	if got, want := codeName("/scan/0/pkg/mod.py"), "dc7ad833b0d5bf24e2f914d7b236914a.pyc"; got != want {
		t.Fatalf("codeName = %s, want %s", got, want)
	}
}
