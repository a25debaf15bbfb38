package embedded_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
)

func init() { embedded.Init() }

func newRuntime(t *testing.T) *embedded.Runtime {
	t.Helper()
	testenv.NeedRoot(t)
	rt, err := embedded.New(embedded.DefaultOptions())
	if err != nil {
		testenv.Skip(t, "embedded runtime unavailable: "+err.Error())
	}
	return rt
}

// leftovers lists the embedded runtime's resources that exist now.
func leftovers() []string {
	var out []string
	states, _ := filepath.Glob(filepath.Join(embedded.DefaultOptions().StateRoot, "*"))
	out = append(out, states...)
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/nondet-sandbox/*")
	for _, c := range cgs {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			out = append(out, c)
		}
	}
	v2, _ := filepath.Glob("/sys/fs/cgroup/nondet-sandbox/*")
	for _, c := range v2 {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			out = append(out, c)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Env{
		Runtime: newRuntime(t), Python: testenv.Python(t), HostileDir: "../../fixtures/hostile", Leftovers: leftovers,
	})
}
