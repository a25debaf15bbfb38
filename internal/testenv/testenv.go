// Package testenv gates tests on what the machine has (root, a Python
// interpreter, a container runtime, a Docker engine) and turns every such
// skip into a failure when NONDET_SANDBOX_NO_SKIP=1, as CI sets it: a
// skipped sandbox test in CI is a red CI.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// NoSkipVar is the environment variable that makes a skip a failure.
const NoSkipVar = "NONDET_SANDBOX_NO_SKIP"

// Skip skips the test, or fails it when skipping is disallowed.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(NoSkipVar) == "1" {
		t.Fatalf("%s, and %s=1 forbids skipping", reason, NoSkipVar)
	}
	t.Skip(reason)
}

// Python returns the interpreter tests probe with: $NONDET_SANDBOX_PYTHON,
// else Debian's /usr/bin/python3, else python3 on PATH.
func Python(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NONDET_SANDBOX_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		Skip(t, "no python3 interpreter")
	}
	return p
}

// Integration marks a test of the full tier (make test): it scans real
// trees, end to end, or needs containers. The unit tier (make test-unit,
// go test -short) leaves it out by choice, so the no-skip rule does not
// apply to that.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: not in the unit tier (-short)")
	}
}

// NeedRoot skips unless the test runs as root; root tests are integration
// tests.
func NeedRoot(t testing.TB) {
	t.Helper()
	Integration(t)
	if os.Geteuid() != 0 {
		Skip(t, "needs root")
	}
}

// HostCannot skips a test because this host's kernel or machine cannot
// run what it tests (gVisor's runsc on a host where no sandbox starts):
// the one skip the no-skip rule allows, since the host decides, not the
// project. It says so plainly in the log, in CI too.
func HostCannot(t testing.TB, reason string) {
	t.Helper()
	t.Logf("SKIP (allowed in CI: the host cannot run this): %s", reason)
	t.Skip(reason)
}

// DefaultKubeconfig is where scripts/start-kubernetes writes the admin
// kubeconfig of its single-node cluster.
const DefaultKubeconfig = "/var/lib/nondet-sandbox-k8s/admin.kubeconfig"

// Kubeconfig returns the kubeconfig of the cluster tests run pods on:
// $NONDET_SANDBOX_KUBECONFIG, else the one scripts/start-kubernetes writes;
// it skips when there is none.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	Integration(t)
	if p := os.Getenv("NONDET_SANDBOX_KUBECONFIG"); p != "" {
		return p
	}
	if _, err := os.Stat(DefaultKubeconfig); err != nil {
		Skip(t, "no Kubernetes cluster: scripts/start-kubernetes starts one (or set NONDET_SANDBOX_KUBECONFIG)")
	}
	return DefaultKubeconfig
}
