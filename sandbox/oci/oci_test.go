package oci_test

import (
	"context"
	"errors"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
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
	scansuite.Run(t, scansuite.Env{
		Runtime: newRuntime(t), Python: testenv.Python(t), HostileDir: "../../fixtures/hostile",
		Leftovers: func() []string { return conformance.Leftovers(oci.DefaultOptions().StateRoot) },
	})
}

func TestDoctorPosture(t *testing.T) {
	scansuite.Posture(t, newRuntime(t), testenv.Python(t), scansuite.Expect{UIDMap: "0 100000 ", CPUQuota: true})
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

// TestRuntimeWithoutLogFlagsIsRefusedEarly: a runtime whose help does not
// list a flag the backend needs is refused by New in one line, not inside
// the first probe.
func TestRuntimeWithoutLogFlagsIsRefusedEarly(t *testing.T) {
	testenv.NeedRoot(t)
	fake := filepath.Join(t.TempDir(), "fake-runtime")
	script := "#!/bin/sh\ncase \"$1\" in --version) echo fake 1.0;; run) echo 'usage: run [--bundle dir] id';; esac\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := oci.DefaultOptions()
	opts.Binary = fake
	_, err := oci.New(context.Background(), opts)
	if err == nil || !errors.Is(err, sandbox.ErrNotInstalled) || !strings.Contains(err.Error(), "does not list --log") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line refusal naming --log, got %v", err)
	}
}

// TestOnlyFlagsTheRuntimeLists runs the contract suite through a wrapper
// that logs every command line given to runc, and checks each flag
// against runc's own help: the record channel needs none (no
// --preserve-fds), so any OCI runtime takes it.
func TestOnlyFlagsTheRuntimeLists(t *testing.T) {
	testenv.NeedRoot(t)
	runc, err := exec.LookPath("runc")
	if err != nil {
		testenv.Skip(t, "runc is not installed")
	}
	dir := t.TempDir()
	logFile := filepath.Join(dir, "argv")
	wrapper := filepath.Join(dir, "runc")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + logFile + "\nexec " + runc + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := oci.DefaultOptions()
	opts.Binary = wrapper
	rt, err := oci.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Contract(t, rt, func() []string { return conformance.Leftovers(opts.StateRoot) })
	var help strings.Builder
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"kill", "--help"}, {"delete", "--help"}} {
		out, _ := exec.Command(runc, args...).CombinedOutput()
		help.Write(out)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, " run ") {
			runs++
		}
		for _, word := range strings.Fields(line) {
			if !strings.HasPrefix(word, "-") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
			if !regexp.MustCompile(`(^|\s)--?` + regexp.QuoteMeta(name) + `\b`).MatchString(help.String()) {
				t.Errorf("runc was given %s, which its help does not list: %s", word, line)
			}
		}
		if strings.Contains(line, "preserve-fds") {
			t.Errorf("the record channel still needs --preserve-fds: %s", line)
		}
	}
	if runs == 0 {
		t.Fatal("the wrapper saw no run")
	}
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, technique by technique.
func TestIntegrity(t *testing.T) {
	scansuite.Integrity(t, newRuntime(t), testenv.Python(t), "../../fixtures/integrity")
}

// runsc is gVisor's runtime for the tests: $NONDET_SANDBOX_RUNSC, else
// runsc on PATH (scripts/runsc builds it), else "".
func runsc() string {
	if p := os.Getenv("NONDET_SANDBOX_RUNSC"); p != "" {
		return p
	}
	p, _ := exec.LookPath("runsc")
	return p
}

// TestRunsc runs the contract suite, the hostile fixtures and the
// integrity suite on gVisor's runsc where it can start a sandbox. Where it cannot (on this kind of
// virtual machine none starts), New must say so in one line with runsc's
// own error, and the test says plainly that the host cannot run it: the
// one skip the no-skip rule allows.
func TestRunsc(t *testing.T) {
	testenv.NeedRoot(t)
	bin := runsc()
	if bin == "" {
		testenv.Skip(t, "runsc is not installed (scripts/runsc builds it)")
	}
	opts := oci.DefaultOptions()
	opts.Binary = bin
	rt, err := oci.New(context.Background(), opts)
	if err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "runsc cannot start a sandbox on this host (runsc do /bin/true: ") || strings.Contains(msg, "\n") {
			t.Fatalf("want one line saying why runsc cannot start, got %q", msg)
		}
		testenv.HostCannot(t, msg)
	}
	leftovers := func() []string { return conformance.Leftovers(opts.StateRoot) }
	conformance.Contract(t, rt, leftovers)
	scansuite.Run(t, scansuite.Env{Runtime: rt, Python: testenv.Python(t), HostileDir: "../../fixtures/hostile", Leftovers: leftovers})
	t.Run("integrity", func(t *testing.T) {
		scansuite.Integrity(t, rt, testenv.Python(t), "../../fixtures/integrity")
	})
}
