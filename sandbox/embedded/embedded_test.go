package embedded_test

import (
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
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

func leftovers() []string {
	return conformance.Leftovers(embedded.DefaultOptions().StateRoot)
}

func TestConformance(t *testing.T) {
	scansuite.Run(t, scansuite.Env{
		Runtime: newRuntime(t), Python: testenv.Python(t), HostileDir: "../../fixtures/hostile", Leftovers: leftovers,
	})
}

// TestDoctorPosture asserts each item of the sandbox's posture as a probe
// sees it from inside.
func TestDoctorPosture(t *testing.T) {
	scansuite.Posture(t, newRuntime(t), testenv.Python(t), scansuite.Expect{UIDMap: "0 100000 ", CPUQuota: true})
}

// TestContract checks each promise of the runtime interface.
func TestContract(t *testing.T) {
	conformance.Contract(t, newRuntime(t), leftovers)
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, technique by technique.
func TestIntegrity(t *testing.T) {
	scansuite.Integrity(t, newRuntime(t), testenv.Python(t), "../../fixtures/integrity")
}
