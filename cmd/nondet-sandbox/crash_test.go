package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
)

// TestMain lets the test binary be the command itself (for end-to-end
// tests that kill it) and a container's init (for the embedded runtime).
func TestMain(m *testing.M) {
	reexec()
	if os.Getenv("NONDET_SANDBOX_BE_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NONDET_SANDBOX_BE_MAIN=1")
	return cmd
}

// TestKill9LeavesNothingAfterTheNextRun: a scan killed with SIGKILL cannot
// clean up; the next scan finds what it left (containers, cgroups, state
// and temporary directories), removes it and says so.
func TestKill9LeavesNothingAfterTheNextRun(t *testing.T) {
	testenv.NeedRoot(t)
	if _, err := embedded.New(embedded.DefaultOptions()); err != nil {
		testenv.Skip(t, "embedded runtime unavailable: "+err.Error())
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	src := "import time\n\ndef sleeps():\n    time.sleep(3600)\n"
	if err := os.WriteFile(filepath.Join(dir, "sleepy.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	victim := command("run", "--python", testenv.Python(t), "--call-timeout", "1h", "-q", dir)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	stateRoot := embedded.DefaultOptions().StateRoot
	var scanID string
	deadline := time.Now().Add(30 * time.Second)
	for scanID == "" && time.Now().Before(deadline) {
		entries, _ := filepath.Glob(filepath.Join(stateRoot, "*", scanlock.Prefix+"*-s0-*"))
		for _, e := range entries {
			scanID = filepath.Base(filepath.Dir(e))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if scanID == "" {
		victim.Process.Kill()
		t.Fatal("the scan never started a probe container")
	}
	time.Sleep(300 * time.Millisecond) // let the probe reach its sleep
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()

	left := leftoversOf(scanID)
	if len(left) == 0 {
		t.Fatal("kill -9 left nothing behind: the test would prove nothing")
	}
	t.Logf("left behind by scan %s: %v", scanID, left)

	var stderr bytes.Buffer
	next := command("run", "--python", testenv.Python(t), "-q", "../../fixtures/known.py::dedup_sorted")
	next.Stderr = &stderr
	if err := next.Run(); err != nil {
		t.Fatalf("the next scan failed: %v\n%s", err, stderr.String())
	}
	said := stderr.String()
	if !strings.Contains(said, "removed what interrupted scans left behind") || !strings.Contains(said, "container "+scanlock.Prefix+scanID) ||
		!strings.Contains(said, "cgroup /nondet-sandbox/"+scanID) || !strings.Contains(said, "temporary directory") {
		t.Errorf("the next scan did not say what it removed:\n%s", said)
	}
	if rest := leftoversOf(scanID); len(rest) > 0 {
		t.Errorf("still left after the next scan: %v", rest)
	}
}

// leftoversOf lists what of scan id exists: state, cgroups, temporary
// directories, live processes in its cgroups.
func leftoversOf(id string) []string {
	var out []string
	add := func(pattern string) {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	add(filepath.Join(embedded.DefaultOptions().StateRoot, id))
	add("/sys/fs/cgroup/*/nondet-sandbox/" + id)
	add("/sys/fs/cgroup/nondet-sandbox/" + id)
	add(filepath.Join(os.TempDir(), scanlock.Prefix+id+"-*"))
	return out
}
