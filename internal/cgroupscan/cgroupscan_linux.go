// Package cgroupscan gives a scan one parent cgroup (through
// containerd/cgroups, on v1, hybrid and v2 hosts) with the scan-wide memory
// and pids ceiling, names each job's cgroup under it, reads back what the
// kernel recorded, and sweeps what dead scans left in any hierarchy.
package cgroupscan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// cgroupParent is the top of every scan's cgroup, in every hierarchy.
const cgroupParent = "/nondet-sandbox"

// JobPath is a job's cgroupsPath: under its scan's parent.
func JobPath(scanID, jobID string) string { return cgroupParent + "/" + scanID + "/" + jobID }

// MemorySwap says whether memory and swap are limited together here.
func MemorySwap() bool {
	if cgroups.Mode() == cgroups.Unified {
		return true
	}
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}

// Dir is where a job's cgroup lives in one v1 controller's hierarchy, or
// in the v2 hierarchy when controller is "".
func Dir(controller, scanID, jobID string) string {
	if controller == "" || cgroups.Mode() == cgroups.Unified {
		return filepath.Join("/sys/fs/cgroup", JobPath(scanID, jobID))
	}
	return filepath.Join("/sys/fs/cgroup", controller, JobPath(scanID, jobID))
}

// NewParent makes /nondet-sandbox/<scan> with the scan-wide ceiling,
// on a v1, hybrid or v2 host.
func NewParent(scan sandbox.Scan) (interface{ Delete() error }, error) {
	jobs := int64(max(scan.Jobs, 1))
	res := &specs.LinuxResources{}
	if m := scan.Limits.MemoryBytes; m > 0 {
		limit := m * jobs
		res.Memory = &specs.LinuxMemory{Limit: &limit}
	}
	if p := scan.Limits.Pids; p > 0 {
		limit := p*jobs + 16
		res.Pids = &specs.LinuxPids{Limit: &limit}
	}
	path := cgroupParent + "/" + scan.ID
	if cgroups.Mode() == cgroups.Unified {
		m, err := cgroup2.NewManager("/sys/fs/cgroup", path, cgroup2.ToResources(res))
		if err != nil {
			return nil, fmt.Errorf("scan cgroup %s: %w", path, err)
		}
		return m, nil
	}
	cg, err := cgroup1.New(cgroup1.StaticPath(path), res, cgroup1.WithHierarchy(v1Hierarchy))
	if err != nil {
		return nil, fmt.Errorf("scan cgroup %s: %w", path, err)
	}
	return cg, nil
}

// v1Hierarchy is the controllers the scan's parent limits.
func v1Hierarchy() ([]cgroup1.Subsystem, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	var out []cgroup1.Subsystem
	for _, s := range all {
		switch s.Name() {
		case cgroup1.Memory, cgroup1.Pids:
			out = append(out, s)
		}
	}
	return out, nil
}

// OOMKilled reads the OOM-kill count: memory.failcnt stays 0 on some
// kernels under an OOM kill, memory.oom_control's oom_kill does not.
func OOMKilled(paths map[string]string) bool {
	if p, ok := paths["memory"]; ok {
		b, err := os.ReadFile(filepath.Join(p, "memory.oom_control"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
					n, _ := strconv.Atoi(strings.TrimSpace(v))
					return n > 0
				}
			}
		}
	}
	if p, ok := paths[""]; ok { // v2
		b, err := os.ReadFile(filepath.Join(p, "memory.events"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
					n, _ := strconv.Atoi(strings.TrimSpace(v))
					return n > 0
				}
			}
		}
	}
	return false
}

// Sweep kills whatever still runs in a dead scan's cgroups and
// removes them, deepest first, in every mounted hierarchy.
func Sweep(alive func(string) bool) []string {
	var removed []string
	seen := map[string]bool{}
	for _, root := range cgroupRoots() {
		base := filepath.Join(root, cgroupParent)
		scans, _ := os.ReadDir(base)
		for _, s := range scans {
			if !s.IsDir() || alive(s.Name()) {
				continue
			}
			dir := filepath.Join(base, s.Name())
			var dirs []string
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				killCgroup(dirs[i])
				if rmdirRetry(dirs[i]) == nil && !seen[s.Name()+strings.TrimPrefix(dirs[i], dir)] {
					seen[s.Name()+strings.TrimPrefix(dirs[i], dir)] = true
					removed = append(removed, "cgroup "+cgroupParent+"/"+s.Name()+strings.TrimPrefix(dirs[i], dir))
				}
			}
		}
	}
	return removed
}

func killCgroup(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func rmdirRetry(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		killCgroup(dir)
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// cgroupRoots lists the mounted cgroup hierarchies. It reads the calling
// thread's view: libcontainer parks a thread in each container's mount
// namespace, and when that thread is the main one, /proc/self shows the
// container's mounts rather than the host's.
func cgroupRoots() []string {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fs := strings.Fields(post)
		f := strings.Fields(pre)
		if len(fs) > 0 && (fs[0] == "cgroup" || fs[0] == "cgroup2") && len(f) > 4 {
			out = append(out, f[4])
		}
	}
	return out
}

// PeakMemory reads the most memory a job's cgroup ever used, or 0.
func PeakMemory(paths map[string]string) int64 {
	files := map[string]string{"memory": "memory.max_usage_in_bytes", "": "memory.peak"}
	for key, name := range files {
		dir, ok := paths[key]
		if !ok {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	return 0
}
