// Package scansuite is the scan-level suites every sandbox runtime must
// pass, beside sandbox/conformance's contract: the hostile fixtures
// (fixtures/hostile) scanned through the runtime and what must hold on the
// host afterwards (Run), the sandbox as a probe sees it from inside
// (Posture), and the integrity techniques of fixtures/integrity
// (Integrity). They run the engine, so they live above it; a backend's
// test calls them with its runtime, and the assertions are the same for
// each. It is for tests only.
package scansuite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/report"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Env is what the suite needs besides the runtime.
type Env struct {
	Runtime sandbox.Runtime
	Python  string
	// HostileDir is fixtures/hostile, relative to the calling test.
	HostileDir string
	// Leftovers lists what of this runtime's resources exist now, named
	// after their scan: containers, cgroups, state directories.
	Leftovers func() []string
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run scans the hostile suite through env.Runtime and checks, from the
// host: nothing written outside the sandbox, the listener received
// nothing, the planted secret and token appear in no output, nothing is
// left behind, the scan finished, and every control function was reported.
func Run(t *testing.T, env Env) {
	t.Helper()
	mark := "ndx" + randHex(5) // 13 bytes: fits a process name
	dir := t.TempDir()
	if err := exec.Command("cp", "-r", env.HostileDir+"/.", dir).Run(); err != nil {
		t.Fatal(err)
	}
	// The probe user reads the tree as "others", as it reads any tree.
	if err := exec.Command("chmod", "-R", "a+rX", dir).Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connections atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			c.Close()
		}
	}()

	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	secret := "secret-" + randHex(12)
	secretPath := filepath.Join(home, ".nondet-sandbox-secret-"+mark)
	if err := os.WriteFile(secretPath, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(secretPath)
	hidden := "hidden-" + randHex(12)
	if err := os.WriteFile(filepath.Join(dir, ".hidden-secret"), []byte(hidden), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "token-" + randHex(12)
	t.Setenv("NONDET_SANDBOX_TEST_TOKEN", token)

	config := fmt.Sprintf("PORT = %d\nSECRET_PATH = %q\nTOKEN_NAME = %q\nSCAN_DIR = %q\nMARK = %q\n",
		ln.Addr().(*net.TCPAddr).Port, secretPath, "NONDET_SANDBOX_TEST_TOKEN", dir, mark)
	if err := os.WriteFile(filepath.Join(dir, "hostile_config.py"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	tg, err := engine.ParseTarget(dir)
	if err != nil {
		t.Fatal(err)
	}
	var notes bytes.Buffer
	opts := engine.Options{
		Runtime: env.Runtime, Python: env.Python, Runs: 3, Jobs: 2, Seed: 5,
		CallTimeout: 3 * time.Second, Notes: &notes, CacheDir: filepath.Join(os.TempDir(), "nds-test-cache"),
		Limits: sandbox.Limits{MemoryBytes: 512 << 20, Pids: 128, TmpfsBytes: 16 << 20},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := engine.Scan(ctx, opts, []engine.Target{tg})
	if err != nil {
		t.Fatalf("the scan did not finish: %v", err)
	}
	var text, js bytes.Buffer
	if err := report.WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	outputs := text.String() + js.String() + notes.String()

	t.Run("every module and every control reported", func(t *testing.T) {
		for _, m := range rep.Modules {
			if strings.HasPrefix(m.Path, "hostile_") && m.Path != "hostile_config.py" && m.Path != "hostile_config_example.py" && m.Status != "ok" {
				t.Errorf("module %s: %s %s", m.Path, m.Status, m.Error)
			}
		}
		for _, name := range []string{"hostile_fs", "hostile_net", "hostile_secrets", "hostile_procs", "hostile_output"} {
			f := rep.Function(name + ".py::control")
			if f == nil {
				t.Errorf("%s.py::control missing", name)
				continue
			}
			if f.Verdict != engine.VerdictDeterministic || f.Rungs.Answered != f.Rungs.Total {
				t.Errorf("%s.py::control: %s %+v %s", name, f.Verdict, f.Rungs, f.Reason)
			}
		}
	})
	t.Run("nothing written outside the sandbox", func(t *testing.T) {
		after := snapshot(t, dir)
		if before != after {
			t.Errorf("the scanned tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		var places []string
		places = append(places, "/", "/usr", "/tmp", home, "/root")
		homes, _ := filepath.Glob("/home/*")
		places = append(places, homes...)
		for _, p := range places {
			matches, _ := filepath.Glob(filepath.Join(p, mark+"*"))
			for _, m := range matches {
				t.Errorf("the sandbox let a probe write %s", m)
				os.RemoveAll(m)
			}
		}
	})
	t.Run("the listener received nothing", func(t *testing.T) {
		if n := connections.Load(); n != 0 {
			t.Errorf("the loopback listener on the host accepted %d connections", n)
		}
	})
	t.Run("no secret in any output", func(t *testing.T) {
		for name, s := range map[string]string{"secret file": secret, "token": token, "home": home + "/", "hidden file in the tree": hidden} {
			if strings.Contains(outputs, s) {
				t.Errorf("the %s appears in the output", name)
			}
		}
	})
	t.Run("nothing left behind", func(t *testing.T) {
		if procs := processesWith(mark); len(procs) > 0 {
			t.Errorf("processes left behind: %v", procs)
		}
		// Another package's tests may be scanning at the same time: a
		// resource counts as left behind when its scan is dead and the
		// resource still exists after that was seen (a scan removes what
		// it made before it lets go of its lock).
		var left []string
		dead := func(path, name string) bool {
			id := scanlock.ScanID(name)
			if id == "" {
				id = scanlock.ScanID(filepath.Base(path))
			}
			if id == "" || scanlock.Alive(id) {
				return id == "" && name != ""
			}
			if !strings.HasPrefix(path, "/") {
				return true // not a file: the runtime listed it as still there
			}
			_, err := os.Stat(path)
			return err == nil
		}
		if env.Leftovers != nil {
			for _, l := range env.Leftovers() {
				if dead(l, scanlock.Prefix+filepath.Base(l)) {
					left = append(left, l)
				}
			}
		}
		// The calling thread's view: /proc/self is the main thread's, which
		// libcontainer may have left in a container's mount namespace.
		mounts, _ := os.ReadFile("/proc/thread-self/mountinfo")
		for _, line := range strings.Split(string(mounts), "\n") {
			for _, field := range strings.Fields(line) {
				for _, part := range strings.Split(field, "/") {
					if id := scanlock.ScanID(part); id != "" && !scanlock.Alive(id) {
						left = append(left, "mount: "+line)
					}
				}
			}
		}
		tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), scanlock.Prefix+"*"))
		for _, d := range tmp {
			if scanlock.ScanID(filepath.Base(d)) != "" && dead(d, filepath.Base(d)) {
				left = append(left, d)
			}
		}
		if len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	t.Run("misbehaviour was contained and named", func(t *testing.T) {
		for id, kinds := range map[string][]string{
			"hostile_procs.py::sleep_hour": {"timeout"},
			"hostile_procs.py::spin":       {"timeout"},
			"hostile_procs.py::exit_now":   {"crash"},
			"hostile_procs.py::segfault":   {"crash"},
		} {
			f := rep.Function(id)
			if f == nil {
				t.Errorf("%s missing", id)
				continue
			}
			found := false
			for _, e := range f.Contained {
				for _, k := range kinds {
					found = found || e.Kind == k
				}
			}
			if !found {
				t.Errorf("%s: want a contained %v, got %s %+v", id, kinds, f.Verdict, f.Contained)
			}
		}
	})
	t.Run("killing the parent or the group does not reach the engine", func(t *testing.T) {
		// The scan finished, so the engine survived; each attempt is
		// reported with whatever the sandbox let it do.
		for _, id := range []string{"hostile_procs.py::kill_parent", "hostile_procs.py::kill_group"} {
			if f := rep.Function(id); f == nil || f.Verdict == engine.VerdictNotProbed {
				t.Errorf("%s: not probed: %+v", id, f)
			}
		}
	})
	if t.Failed() {
		t.Logf("report:\n%s\nnotes:\n%s", text.String(), notes.String())
	}
}

// snapshot lists a tree's files with sizes and modification times.
func snapshot(t *testing.T, dir string) string {
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %d %d\n", strings.TrimPrefix(p, dir), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	return b.String()
}

// processesWith lists live processes whose name or command line holds mark.
func processesWith(mark string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(comm), mark) || bytes.Contains(cmd, []byte(mark)) {
			out = append(out, e.Name()+" "+strings.TrimSpace(string(comm)))
		}
	}
	return out
}

// Posture runs `doctor` on a runtime and asserts each item of the
// sandbox's posture as a probe sees it from inside.
// Expect is what a runtime's posture must show beyond what every
// container runtime shows.
type Expect struct {
	// UIDMap starts the probe's uid map; empty when the runtime maps no
	// user namespace (Docker by default).
	UIDMap string
	// RootInside: the probe runs as the user namespace's root with no
	// capabilities (rootless: the one id mapped), so the uid is not varied.
	RootInside bool
	// CPUQuota: the runtime limits the CPU share (cgroups).
	CPUQuota bool
	// Rlimits the runtime sets in place of cgroup limits.
	Rlimits map[string]int64
	// Unvaried are the conditions the runtime cannot vary, and says so
	// (a pod cannot choose its CPUs).
	Unvaried []sandbox.Condition
}

func Posture(t *testing.T, rt sandbox.Runtime, python string, want Expect) {
	t.Helper()
	d, err := engine.Doctor(context.Background(), engine.Options{
		Runtime: rt, Python: python, Jobs: 1, Seed: 1,
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64, CPUs: 0.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := d.Posture
	// Half a core asked for: a busy thread gets about half of each second
	// (a little more at the edges of the scheduler's periods), never all.
	if want.CPUQuota && (p.CPUShare <= 0 || p.CPUShare > 0.8) {
		t.Errorf("a busy thread got %.2f CPU seconds per second under a 0.5-core quota", p.CPUShare)
	}
	zero := "0000000000000000"
	if p.CapEffective != zero || p.CapBounding != zero || p.CapPermitted != zero {
		t.Errorf("capabilities: eff %s bnd %s prm %s", p.CapEffective, p.CapBounding, p.CapPermitted)
	}
	// The same seccomp profile on every runtime: Docker's own built-in one
	// (20.10) lets io_uring_setup through.
	if p.IOUringErrno != 1 {
		t.Errorf("io_uring_setup answered errno %d, want 1 (EPERM, refused by the profile)", p.IOUringErrno)
	}
	if p.Seccomp != "2" {
		t.Errorf("seccomp mode %q, want 2 (filter)", p.Seccomp)
	}
	if p.NoNewPrivs != "1" {
		t.Errorf("no_new_privs %q", p.NoNewPrivs)
	}
	if !slices.Equal(p.Interfaces, []string{"lo"}) {
		t.Errorf("network interfaces %v, want only lo", p.Interfaces)
	}
	for _, w := range p.Writable {
		if w != "/tmp" && w != "/home/probe" {
			t.Errorf("writable mount %s", w)
		}
	}
	for _, ro := range []string{"/", "/nondet"} {
		if !slices.Contains(p.Readonly, ro) {
			t.Errorf("%s is not read-only: %v", ro, p.Readonly)
		}
	}
	if want.UIDMap != "" && (p.UIDMap == "0 0 4294967295" || !strings.HasPrefix(p.UIDMap, want.UIDMap)) {
		t.Errorf("uid map %q, want it to start %q", p.UIDMap, want.UIDMap)
	}
	uid := sandbox.ProbeUIDs[0]
	if want.RootInside {
		uid = 0
	}
	if p.UID != uid || p.Pid == 1 || p.Hostname != "probe-a" {
		t.Errorf("uid %d pid %d hostname %q", p.UID, p.Pid, p.Hostname)
	}
	if p.Rlimits["RLIMIT_NOFILE"] != 1024 || d.Limits.MemoryBytes != 256<<20 || d.Limits.Pids != 64 {
		t.Errorf("limits: %+v %+v", p.Rlimits, d.Limits)
	}
	for name, v := range want.Rlimits {
		if p.Rlimits[name] != v {
			t.Errorf("%s is %d, want %d", name, p.Rlimits[name], v)
		}
	}
	allowed := map[string]bool{"HOME": true, "LANG": true, "LC_ALL": true, "LOCPATH": true, "PATH": true, "PWD": true,
		"PYTHONDONTWRITEBYTECODE": true, "PYTHONHASHSEED": true, "PYTHONSAFEPATH": true, "TZ": true, "LD_PRELOAD": true, "FAKETIME": true, "FAKE_UTIME": true,
		"HOSTNAME": true} // Docker sets HOSTNAME itself
	for _, e := range p.Env {
		if !allowed[e] {
			t.Errorf("environment variable %s is not on the allow-list", e)
		}
	}
	for _, c := range d.Conditions {
		if !c.Applied && c.Condition != "clock" && c.Condition != "locale" && !(want.RootInside && c.Condition == sandbox.User) && !slices.Contains(want.Unvaried, c.Condition) {
			t.Errorf("condition %s skipped: %s", c.Condition, c.Reason)
		}
	}
}
