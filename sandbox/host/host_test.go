package host_test

import (
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
)

// TestContract checks each promise of the runtime interface on plain
// processes.
func TestContract(t *testing.T) {
	conformance.Contract(t, host.New(), nil)
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, technique by technique (the static gate refuses
// some of them on this runtime before they run).
func TestIntegrity(t *testing.T) {
	testenv.Integration(t)
	scansuite.Integrity(t, host.New(), testenv.Python(t), "../../fixtures/integrity")
}
