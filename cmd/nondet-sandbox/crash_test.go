package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/kubernetes"
)

// TestMain lets the test binary be the command itself (for end-to-end
// tests that kill it) and a container's init (for the embedded runtime).
func TestMain(m *testing.M) {
	reexec()
	// The tests scan the same trees again and again: each judges afresh
	// unless it turns the verdict cache on itself (cache.txtar, cache_test).
	if _, set := os.LookupEnv(noCacheVar); !set {
		os.Setenv(noCacheVar, "1")
	}
	if os.Getenv("NONDET_SANDBOX_BE_MAIN") == "1" {
		os.Exit(run())
	}
	testscript.Main(m, map[string]func(){"nondet-sandbox": func() { os.Exit(run()) }})
}

func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NONDET_SANDBOX_BE_MAIN=1")
	return cmd
}

// TestKill9LeavesNothingAfterTheNextRun: a scan killed with SIGKILL cannot
// clean up; the next scan finds what it left (containers, cgroups, state
// and temporary directories), removes it and says so. On every container
// runtime.
func TestKill9LeavesNothingAfterTheNextRun(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	for _, rt := range []string{"embedded", "docker", "kubernetes"} {
		t.Run(rt, func(t *testing.T) { kill9(t, rt) })
	}
}

func kill9(t *testing.T, rt string) {
	python := testenv.Python(t)
	switch rt {
	case "embedded":
		if _, err := embedded.New(embedded.DefaultOptions()); err != nil {
			testenv.Skip(t, "embedded runtime unavailable: "+err.Error())
		}
	case "docker":
		python = "python3"
		if _, err := docker.New(context.Background(), docker.DefaultImage); err != nil {
			testenv.Skip(t, "docker runtime unavailable: "+err.Error())
		}
	case "kubernetes":
		python = "python3"
		cluster = kubeRuntime(t)
	}
	extra := []string{}
	if rt == "kubernetes" {
		extra = []string{"--kubeconfig", testenv.Kubeconfig(t)}
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	src := "import time\n\ndef sleeps():\n    time.sleep(3600)\n"
	if err := os.WriteFile(filepath.Join(dir, "sleepy.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another package's scan may be running meanwhile: only what appears
	// after the victim starts is the victim's.
	before := map[string]bool{}
	for _, name := range probeContainers(rt) {
		before[name] = true
	}
	victim := command(append([]string{"run", "--runtime", rt, "--python", python, "--call-timeout", "1h", "-q", dir}, extra...)...)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	var scanID string
	deadline := time.Now().Add(60 * time.Second)
	for scanID == "" && time.Now().Before(deadline) {
		for _, name := range probeContainers(rt) {
			if strings.Contains(name, "-s0-") && !before[name] {
				scanID = scanlock.ScanID(filepath.Base(name))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if scanID == "" {
		victim.Process.Kill()
		victim.Wait()
		t.Fatal("the scan never started a probe container")
	}
	time.Sleep(500 * time.Millisecond) // let the probe reach its sleep
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()

	left := leftoversOf(rt, scanID)
	if len(left) == 0 {
		t.Fatal("kill -9 left nothing behind: the test would prove nothing")
	}
	t.Logf("left behind by scan %s: %v", scanID, left)
	left = leftoversOf(rt, scanID) // what is still there as the next scan starts

	var stderr bytes.Buffer
	next := command(append([]string{"run", "--runtime", rt, "--python", python, "-q", "../../fixtures/known.py::dedup_sorted"}, extra...)...)
	next.Stderr = &stderr
	if err := next.Run(); err != nil {
		t.Fatalf("the next scan failed: %v\n%s", err, stderr.String())
	}
	// Every leftover still there when the next scan started must be named
	// by it (another package's scan running at the same time may have
	// swept some first).
	said := stderr.String()
	if !strings.Contains(said, "removed what interrupted scans left behind") {
		t.Errorf("the next scan did not say what it removed:\n%s", said)
	}
	for _, l := range left {
		name := filepath.Base(l)
		switch {
		case strings.HasPrefix(l, "/sys/fs/cgroup/"):
			name = "cgroup /nondet-sandbox/" + scanID
		case strings.HasPrefix(l, os.TempDir()):
			name = "temporary directory " + l
		case strings.HasPrefix(l, "pod ") || strings.HasPrefix(l, "lease "):
			name = l
		case strings.HasPrefix(name, scanlock.Prefix):
			name = "container " + name
		default:
			continue
		}
		if !strings.Contains(said, name) && !sweptByOthers(said) {
			t.Errorf("the next scan did not name %q:\n%s", name, said)
		}
	}
	if rest := leftoversOf(rt, scanID); len(rest) > 0 {
		t.Errorf("still left after the next scan: %v", rest)
	}
}

// sweptByOthers is true when the next scan removed nothing at all: with
// packages tested in parallel, another scan may have swept everything first.
func sweptByOthers(said string) bool {
	return !strings.Contains(said, "removed what interrupted scans left behind")
}

// cluster is the kubernetes runtime the kill -9 test lists pods with.
var cluster *kubernetes.Runtime

func kubeRuntime(t *testing.T) *kubernetes.Runtime {
	t.Helper()
	rt, err := kubernetes.New(context.Background(), kubernetes.Options{Kubeconfig: testenv.Kubeconfig(t)})
	if err != nil {
		testenv.Skip(t, "kubernetes runtime unavailable: "+err.Error())
	}
	return rt
}

// probeContainers lists the names of the runtime's live probe containers.
func probeContainers(rt string) []string {
	if rt == "kubernetes" {
		var out []string
		list, _ := cluster.Resources(context.Background(), "")
		for _, r := range list {
			if name, ok := strings.CutPrefix(r, "pod "); ok {
				out = append(out, name)
			}
		}
		return out
	}
	if rt == "docker" {
		out, _ := exec.Command("docker", "ps", "-a", "--filter", "label="+docker.ScanLabel, "--format", "{{.Names}}").Output()
		return strings.Fields(string(out))
	}
	m, _ := filepath.Glob(filepath.Join(embedded.DefaultOptions().StateRoot, "*", scanlock.Prefix+"*"))
	return m
}

// leftoversOf lists what of scan id exists: containers, state, cgroups,
// temporary directories.
func leftoversOf(rt, id string) []string {
	var out []string
	if rt == "kubernetes" {
		out, _ = cluster.Resources(context.Background(), id)
	}
	add := func(pattern string) {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	for _, name := range probeContainers(rt) {
		if rt != "kubernetes" && strings.Contains(name, scanlock.Prefix+id) {
			out = append(out, name)
		}
	}
	add(filepath.Join(embedded.DefaultOptions().StateRoot, id))
	add("/sys/fs/cgroup/*/nondet-sandbox/" + id)
	add("/sys/fs/cgroup/nondet-sandbox/" + id)
	add(filepath.Join(os.TempDir(), scanlock.Prefix+id+"-*"))
	return out
}
