package engine_test

import (
	"os/exec"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// TestWorkerPython runs the worker's own Python tests (engine/worker/tests),
// as the package's tests, from engine/.
func TestWorkerPython(t *testing.T) {
	cmd := exec.Command(testenv.Python(t), "-B", "-m", "unittest", "discover", "-s", "worker/tests", "-t", ".")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python tests failed: %v\n%s", err, out)
	}
}
