package oci_test

import (
	"context"
	"errors"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/oci"
)

func newRuntime(t *testing.T) *oci.Runtime {
	t.Helper()
	testenv.NeedRoot(t)
	rt, err := oci.New(context.Background(), oci.DefaultOptions())
	if err != nil {
		testenv.Skip(t, "runc unavailable: "+err.Error())
	}
	return rt
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Env{
		Runtime: newRuntime(t), Python: testenv.Python(t), HostileDir: "../../fixtures/hostile",
		Leftovers: func() []string { return conformance.Leftovers(oci.DefaultOptions().StateRoot) },
	})
}

func TestDoctorPosture(t *testing.T) {
	conformance.Posture(t, newRuntime(t), testenv.Python(t), conformance.Expect{UIDMap: "0 100000 ", CPUQuota: true})
}

func TestMissingBinarySaysWhatToDo(t *testing.T) {
	opts := oci.DefaultOptions()
	opts.Binary = "/nonexistent/runsc"
	_, err := oci.New(context.Background(), opts)
	if err == nil || !errors.Is(err, sandbox.ErrNotInstalled) || err.Error() != `OCI runtime "/nonexistent/runsc" not found; give its path with --oci-runtime (Debian: apt-get install runc)` {
		t.Fatalf("got %v", err)
	}
}

// TestContract checks each promise of the runtime interface.
func TestContract(t *testing.T) {
	conformance.Contract(t, newRuntime(t), func() []string { return conformance.Leftovers(oci.DefaultOptions().StateRoot) })
}

// TestRuntimeWithoutPreserveFdsIsRefusedEarly: a runtime whose run does not
// take --preserve-fds (gVisor's runsc) is refused by New in one line, not
// inside the first probe.
func TestRuntimeWithoutPreserveFdsIsRefusedEarly(t *testing.T) {
	testenv.NeedRoot(t)
	fake := filepath.Join(t.TempDir(), "fake-runsc")
	script := "#!/bin/sh\ncase \"$1\" in --version) echo fake 1.0;; run) echo 'usage: run [--bundle dir] id';; esac\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := oci.DefaultOptions()
	opts.Binary = fake
	_, err := oci.New(context.Background(), opts)
	if err == nil || !errors.Is(err, sandbox.ErrNotInstalled) || !strings.Contains(err.Error(), "--preserve-fds") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line refusal naming --preserve-fds, got %v", err)
	}
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, technique by technique.
func TestIntegrity(t *testing.T) {
	conformance.Integrity(t, newRuntime(t), testenv.Python(t), "../../fixtures/integrity")
}
