package rootless_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/rootless"
)

func init() { embedded.Init() }

// fixturesVar names the copy of fixtures/ the re-executed test reads: the
// tree it runs from may be under a home directory nobody else can enter.
const fixturesVar = "NONDET_SANDBOX_ROOTLESS_FIXTURES"

// unprivileged is the user the suite runs as when the test starts as root.
const unprivileged = 65534

// TestRootless runs the runtime contract, the hostile suite, the integrity
// suite and the posture check on the rootless runtime as a user without
// root: directly when the test already runs as one, otherwise by running
// this test binary again as uid 65534 (nobody).
func TestRootless(t *testing.T) {
	testenv.Integration(t)
	if os.Geteuid() == 0 {
		asUnprivileged(t)
		return
	}
	fixtures := os.Getenv(fixturesVar)
	if fixtures == "" {
		fixtures = "../../fixtures"
	}
	rt, err := rootless.New(rootless.DefaultOptions())
	if err != nil {
		testenv.Skip(t, "rootless runtime unavailable: "+err.Error())
	}
	leftovers := func() []string { return conformance.Leftovers(rootless.DefaultOptions().StateRoot) }
	python := testenv.Python(t)
	t.Run("contract", func(t *testing.T) { conformance.Contract(t, rt, leftovers) })
	t.Run("posture", func(t *testing.T) {
		scansuite.Posture(t, rt, python, scansuite.Expect{
			UIDMap: "0 " + strconv.Itoa(os.Getuid()) + " 1", RootInside: true,
			Rlimits: map[string]int64{"RLIMIT_AS": 256 << 20, "RLIMIT_NPROC": 64},
		})
	})
	t.Run("hostile", func(t *testing.T) {
		scansuite.Run(t, scansuite.Env{Runtime: rt, Python: python, HostileDir: filepath.Join(fixtures, "hostile"), Leftovers: leftovers})
	})
	t.Run("integrity", func(t *testing.T) { scansuite.Integrity(t, rt, python, filepath.Join(fixtures, "integrity")) })
}

// asUnprivileged runs TestRootless again as uid 65534 from copies of the
// test binary and the fixtures it can read, with a home and a temporary
// directory of its own.
func asUnprivileged(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "rootless.test")
	if out, err := exec.Command("cp", exe, bin).CombinedOutput(); err != nil {
		t.Fatalf("copy the test binary: %v %s", err, out)
	}
	fixtures := filepath.Join(dir, "fixtures")
	if err := os.MkdirAll(fixtures, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"hostile", "integrity"} {
		if out, err := exec.Command("cp", "-r", filepath.Join("../../fixtures", f), fixtures).CombinedOutput(); err != nil {
			t.Fatalf("copy fixtures: %v %s", err, out)
		}
	}
	if out, err := exec.Command("chmod", "-R", "a+rX", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, unprivileged, unprivileged); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run", "^TestRootless$", "-test.v", "-test.count", "1", "-test.timeout", "30m")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp, fixturesVar + "=" + fixtures,
		testenv.NoSkipVar + "=" + os.Getenv(testenv.NoSkipVar), "NONDET_SANDBOX_PYTHON=" + testenv.Python(t)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivileged, Gid: unprivileged, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid %d:\n%s", unprivileged, out)
	if err != nil {
		t.Fatalf("the rootless suite failed as uid %d: %v", unprivileged, err)
	}
	if !strings.Contains(string(out), "--- PASS: TestRootless/integrity") {
		t.Fatalf("the rootless suite did not run as uid %d", unprivileged)
	}
}
