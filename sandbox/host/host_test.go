package host_test

import (
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
)

// TestContract checks each promise of the runtime interface on plain
// processes.
func TestContract(t *testing.T) {
	conformance.Contract(t, host.New(), nil)
}
