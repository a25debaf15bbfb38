package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"

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

// leftovers lists the embedded runtime's resources that exist now.
func leftovers() []string {
	var out []string
	states, _ := filepath.Glob(filepath.Join(embedded.DefaultOptions().StateRoot, "*"))
	out = append(out, states...)
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/nondet-sandbox/*")
	for _, c := range cgs {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			out = append(out, c)
		}
	}
	v2, _ := filepath.Glob("/sys/fs/cgroup/nondet-sandbox/*")
	for _, c := range v2 {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			out = append(out, c)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Env{
		Runtime: newRuntime(t), Python: testenv.Python(t), HostileDir: "../../fixtures/hostile", Leftovers: leftovers,
	})
}

// TestDoctorPosture asserts each item of the sandbox's posture as a probe
// sees it from inside.
func TestDoctorPosture(t *testing.T) {
	rt := newRuntime(t)
	d, err := engine.Doctor(context.Background(), engine.Options{
		Runtime: rt, Python: testenv.Python(t), Jobs: 1, Seed: 1,
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := d.Posture
	zero := "0000000000000000"
	if p.CapEffective != zero || p.CapBounding != zero || p.CapPermitted != zero {
		t.Errorf("capabilities: eff %s bnd %s prm %s", p.CapEffective, p.CapBounding, p.CapPermitted)
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
	for _, ro := range []string{"/", "/usr", "/nondet"} {
		if !slices.Contains(p.Readonly, ro) {
			t.Errorf("%s is not read-only: %v", ro, p.Readonly)
		}
	}
	if p.UIDMap == "0 0 4294967295" || !strings.HasPrefix(p.UIDMap, "0 100000 ") {
		t.Errorf("uid map %q: no user namespace", p.UIDMap)
	}
	if p.UID != 1000 || p.Pid == 1 || p.Hostname != "probe-a" {
		t.Errorf("uid %d pid %d hostname %q", p.UID, p.Pid, p.Hostname)
	}
	if p.Rlimits["RLIMIT_NOFILE"] != 1024 || d.Limits.MemoryBytes != 256<<20 || d.Limits.Pids != 64 {
		t.Errorf("limits: %+v %+v", p.Rlimits, d.Limits)
	}
	allowed := map[string]bool{"HOME": true, "LANG": true, "LC_ALL": true, "LOCPATH": true, "PATH": true, "PWD": true,
		"PYTHONDONTWRITEBYTECODE": true, "PYTHONHASHSEED": true, "TZ": true, "LD_PRELOAD": true, "FAKETIME": true}
	for _, e := range p.Env {
		if !allowed[e] {
			t.Errorf("environment variable %s is not on the allow-list", e)
		}
	}
	for _, c := range d.Conditions {
		if !c.Applied && c.Condition != "clock" && c.Condition != "locale" {
			t.Errorf("condition %s skipped: %s", c.Condition, c.Reason)
		}
	}
}
