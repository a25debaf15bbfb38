package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

func testJob() *Job {
	return &Job{
		ID:     "nondet-sandbox-0123abcd-s0-r1-7",
		Argv:   []string{"/usr/bin/python3", "-B", "/nondet/worker.py", "probe", "/nondet/plans/p.json"},
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=/home/probe1", "PYTHONHASHSEED=7"},
		Dir:    "/tmp/work-1",
		Binds:  []Bind{{Source: "/srv/code", Target: "/scan/0"}, {Source: "/var/tmp/x/shared", Target: "/nondet"}},
		Cond:   Conditions{Hostname: "probe-b", UID: 1001, GID: 1001, Umask: 0o077, Home: "/home/probe1", CPUs: "0", PidFloor: 8},
		Limits: Limits{MemoryBytes: 1 << 30, Pids: 99, CPUs: 1.5, TmpfsBytes: 32 << 20},
	}
}

func mount(t *testing.T, s *specs.Spec, dst string) specs.Mount {
	t.Helper()
	for _, m := range s.Mounts {
		if m.Destination == dst {
			return m
		}
	}
	t.Fatalf("no mount at %s", dst)
	return specs.Mount{}
}

func TestPolicySpec(t *testing.T) {
	p := &Policy{Rootfs: "/var/tmp/x/rootfs", UserNS: true, HostIDBase: 100000, Seccomp: true,
		CgroupsPath: "/nondet-sandbox/0123abcd/j", MemorySwap: true}
	s, err := p.Spec(testJob())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("read-only root of read-only binds", func(t *testing.T) {
		if !s.Root.Readonly || s.Root.Path != p.Rootfs {
			t.Errorf("root: %+v", s.Root)
		}
		for _, m := range s.Mounts {
			if m.Type == "bind" && !slices.Contains(m.Options, "ro") {
				t.Errorf("bind %s is writable", m.Destination)
			}
			if m.Type == "bind" && (m.Source == "/home" || m.Source == "/root" || strings.HasPrefix(m.Source, "/home/")) {
				t.Errorf("a home directory is mounted: %s", m.Source)
			}
		}
		if m := mount(t, s, "/scan/0"); m.Source != "/srv/code" {
			t.Errorf("scanned tree: %+v", m)
		}
		mount(t, s, "/usr")
	})
	t.Run("size-capped tmpfs for /tmp and HOME", func(t *testing.T) {
		for _, dst := range []string{"/tmp", "/home/probe1"} {
			m := mount(t, s, dst)
			if m.Type != "tmpfs" || !slices.Contains(m.Options, "size=33554432") {
				t.Errorf("%s: %+v", dst, m)
			}
		}
		if m := mount(t, s, "/home/probe1"); !slices.Contains(m.Options, "uid=1001") {
			t.Errorf("HOME not owned by the run's user: %+v", m)
		}
	})
	t.Run("namespaces, user mapping, hostname", func(t *testing.T) {
		var types []specs.LinuxNamespaceType
		for _, n := range s.Linux.Namespaces {
			if n.Path != "" {
				t.Errorf("namespace %s joins %s instead of being new", n.Type, n.Path)
			}
			types = append(types, n.Type)
		}
		for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace,
			specs.MountNamespace, specs.NetworkNamespace, specs.UserNamespace} {
			if !slices.Contains(types, want) {
				t.Errorf("no new %s namespace", want)
			}
		}
		if len(s.Linux.UIDMappings) != 1 || s.Linux.UIDMappings[0].HostID != 100000 {
			t.Errorf("uid map: %+v", s.Linux.UIDMappings)
		}
		if s.Hostname != "probe-b" || s.Process.User.UID != 1001 || *s.Process.User.Umask != 0o077 {
			t.Errorf("conditions not applied: %s %+v", s.Hostname, s.Process.User)
		}
	})
	t.Run("no capabilities, no_new_privs, seccomp, masked paths", func(t *testing.T) {
		c := s.Process.Capabilities
		if len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
			t.Errorf("capabilities: %+v", c)
		}
		if !s.Process.NoNewPrivileges {
			t.Error("no_new_privs not set")
		}
		if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno || len(s.Linux.Seccomp.Syscalls) == 0 {
			t.Errorf("seccomp: %+v", s.Linux.Seccomp)
		}
		for _, m := range []string{"/proc/kcore", "/proc/keys", "/sys/firmware"} {
			if !slices.Contains(s.Linux.MaskedPaths, m) {
				t.Errorf("%s not masked", m)
			}
		}
		if !slices.Contains(s.Linux.ReadonlyPaths, "/proc/sys") {
			t.Error("/proc/sys writable")
		}
	})
	t.Run("limits", func(t *testing.T) {
		r := s.Linux.Resources
		if *r.Memory.Limit != 1<<30 || *r.Memory.Swap != 1<<30 || *r.Pids.Limit != 99 {
			t.Errorf("memory/pids: %+v %+v", r.Memory, r.Pids)
		}
		if r.CPU.Cpus != "0" || *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 {
			t.Errorf("cpu: %+v", r.CPU)
		}
		if s.Linux.CgroupsPath != p.CgroupsPath {
			t.Errorf("cgroup: %s", s.Linux.CgroupsPath)
		}
	})
	t.Run("environment is the job's allow-list only", func(t *testing.T) {
		if !slices.Equal(s.Process.Env, testJob().Env) {
			t.Errorf("env: %v", s.Process.Env)
		}
		if s.Process.Terminal {
			t.Error("a TTY")
		}
	})
	t.Run("the interpreter is not pid 1 and its pid moves", func(t *testing.T) {
		if s.Process.Args[0] != "/bin/sh" || s.Process.Args[4] != "8" || s.Process.Args[5] != "/usr/bin/python3" {
			t.Errorf("args: %v", s.Process.Args)
		}
	})
}

func TestDecodeShimStatus(t *testing.T) {
	if c, sig := DecodeShimStatus(137); c != 0 || sig != "SIGKILL" {
		t.Errorf("137: %d %s", c, sig)
	}
	if c, sig := DecodeShimStatus(3); c != 3 || sig != "" {
		t.Errorf("3: %d %s", c, sig)
	}
}

func TestPrepareRootfs(t *testing.T) {
	dir := t.TempDir()
	if err := PrepareRootfs(dir, []string{"scan/0", "home/probe1", "opt/py/3.11"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"proc", "dev", "tmp", "scan/0", "home/probe1", "opt/py/3.11"} {
		if st, err := os.Stat(filepath.Join(dir, d)); err != nil || !st.IsDir() {
			t.Errorf("mountpoint %s: %v", d, err)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(dir, "etc", "passwd"))
	if err != nil || !strings.Contains(string(passwd), "probe61001:x:61001:61001") {
		t.Errorf("passwd: %s %v", passwd, err)
	}
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if target, err := os.Readlink(filepath.Join(dir, "bin")); err != nil || target == "" {
			t.Errorf("merged-/usr symlink /bin: %v", err)
		}
	}
}
