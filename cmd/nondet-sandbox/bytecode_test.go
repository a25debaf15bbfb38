package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestProbesLoadDiscoverysBytecode: on a container runtime every probe
// finds the code discovery compiled for a module in the code folder, named
// after the path the module is imported from, and imports through the
// worker's loader (which uses that code while it matches the source:
// engine/worker/tests/test_bytecode.py); a module whose code is not kept (a
// frozenset constant) has none there.
func TestProbesLoadDiscoverysBytecode(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pk")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each answer carries a random number, so the function is a finding
	// and the report shows its answers. The folder and the file's name are
	// written out here on purpose: they are what the worker and the engine
	// must agree on.
	src := "import hashlib, os, random\n\ndef loader():\n" +
		"    kept = os.path.exists('/nondet-code/' + hashlib.sha256(__file__.encode()).hexdigest()[:32] + '.pyc')\n" +
		"    return [kept, type(__loader__).__module__, random.random()]\n"
	files := map[string]string{
		"__init__.py": "",
		"kept.py":     src,
		"compiled.py": src + "\nSMALL = 1 in {1, 2}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := testOptions(t, "embedded", 5)
	var out, errOut bytes.Buffer
	err := runRun(context.Background(), opts, []string{dir}, &out, &errOut)
	if errors.Is(err, engine.ErrRuntime) {
		testenv.Skip(t, err.Error())
	}
	if !errors.Is(err, errFindings) {
		t.Fatalf("want findings, got %v\n%s", err, errOut.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pk/kept.py::loader": `V:[True,"__main__",`, "pk/compiled.py::loader": `V:[False,"__main__",`}
	for _, f := range rep.Functions {
		prefix, ok := want[f.ID]
		if !ok {
			continue
		}
		delete(want, f.ID)
		if f.Witness == nil {
			t.Errorf("%s: no witness (%s)", f.ID, f.Verdict)
			continue
		}
		for _, a := range f.Witness.Answers {
			if !strings.HasPrefix(a.Value, prefix) {
				t.Errorf("%s answered %s, want %s…", f.ID, a.Value, prefix)
			}
		}
	}
	for id := range want {
		t.Errorf("%s not in the report", id)
	}
}
