package docker_test

import (
	"context"
	"errors"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"os/exec"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
)

func newRuntime(t *testing.T) *docker.Runtime {
	t.Helper()
	rt, err := docker.New(context.Background(), docker.DefaultImage)
	if err != nil {
		testenv.Skip(t, "docker runtime unavailable: "+err.Error())
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// leftovers lists the probe containers that exist now, by name.
func leftovers() []string {
	out, _ := exec.Command("docker", "ps", "-a", "--filter", "label="+docker.ScanLabel, "--format", "{{.Names}}").Output()
	return strings.Fields(string(out))
}

func TestConformance(t *testing.T) {
	testenv.Integration(t)
	scansuite.Run(t, scansuite.Env{
		Runtime: newRuntime(t), Python: "python3", HostileDir: "../../fixtures/hostile", Leftovers: leftovers,
	})
}

func TestDoctorPosture(t *testing.T) {
	testenv.Integration(t)
	// The Docker engine maps no user namespace unless the daemon is
	// configured to: the probe is a non-root user with no capabilities.
	scansuite.Posture(t, newRuntime(t), "python3", scansuite.Expect{CPUQuota: true})
}

// TestMissingImageSaysHowToBuildIt: a missing image is one line that says
// how to build it.
func TestMissingImageSaysHowToBuildIt(t *testing.T) {
	testenv.Integration(t)
	newRuntime(t) // the engine must answer, or this proves nothing
	_, err := docker.New(context.Background(), "nondet-sandbox-probe:no-such-tag")
	if err == nil || !errors.Is(err, sandbox.ErrNoImage) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "build it with") {
		t.Fatalf("got %v", err)
	}
}

// TestContract checks each promise of the runtime interface.
func TestContract(t *testing.T) {
	testenv.Integration(t)
	conformance.Contract(t, newRuntime(t), leftovers)
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, technique by technique.
func TestIntegrity(t *testing.T) {
	testenv.Integration(t)
	scansuite.Integrity(t, newRuntime(t), "python3", "../../fixtures/integrity")
}
