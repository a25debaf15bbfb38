// Package cgroupscan gives a scan one parent cgroup (through
// containerd/cgroups, on v1, hybrid and v2 hosts) with the scan-wide memory
// and pids ceiling, names each job's cgroup under it, reads back what the
// kernel recorded, and sweeps what dead scans left in any hierarchy.
package cgroupscan

import (
	"errors"
	"fmt"
	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	"github.com/moby/sys/mountinfo"
	"os"
	"path/filepath"
	"slices"
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
	// cpuset too: the parent must hold the CPUs and memory nodes its jobs
	// take (runc copies them down itself; gVisor's runsc does not).
	return newCgroup("scan", cgroupParent+"/"+scan.ID, res, cgroup1.Memory, cgroup1.Pids, cgroup1.Cpuset)
}

// NewJob makes a job's cgroup under the scan's parent with the job's
// limits, for a runtime that joins a cgroup it finds without changing it
// and removes only what it made (gVisor's runsc): the job's memory
// statistics and OOM kills stay readable after it ends, until Delete.
func NewJob(scanID, jobID string, res *specs.LinuxResources) (interface{ Delete() error }, error) {
	return newCgroup("job", JobPath(scanID, jobID), res, cgroup1.Memory, cgroup1.Pids, cgroup1.Cpuset, cgroup1.Cpu)
}

// newCgroup makes the cgroup at path with res, on a v1 or hybrid host in
// the hierarchies of controllers only, on a v2 host in the unified one.
func newCgroup(what, path string, res *specs.LinuxResources, controllers ...cgroup1.Name) (interface{ Delete() error }, error) {
	if cgroups.Mode() == cgroups.Unified {
		m, err := cgroup2.NewManager("/sys/fs/cgroup", path, cgroup2.ToResources(res))
		if err != nil {
			return nil, fmt.Errorf("%s cgroup %s: %w", what, path, err)
		}
		return m, nil
	}
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		all, err := cgroup1.Default()
		if err != nil {
			return nil, err
		}
		var out []cgroup1.Subsystem
		for _, s := range all {
			if slices.Contains(controllers, s.Name()) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	cg, err := cgroup1.New(cgroup1.StaticPath(path), res, cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		return nil, fmt.Errorf("%s cgroup %s: %w", what, path, err)
	}
	return cg, nil
}

// jobStats reads a finished job's memory statistics through the cgroups
// library: the v1 memory controller's, else the unified hierarchy's. paths
// maps a controller ("" for the unified hierarchy) to the job's cgroup
// directory. OOM kills are counted by oom_kill (memory.failcnt stays 0 on
// some kernels under an OOM kill).
func jobStats(paths map[string]string) (peak int64, oomKilled bool) {
	if dir, ok := paths["memory"]; ok {
		if root, rel, ok := splitHierarchy(dir); ok {
			var m v1.Metrics
			if err := cgroup1.NewMemory(root).Stat(rel, &m); err == nil {
				if m.Memory != nil && m.Memory.Usage != nil {
					peak = int64(m.Memory.Usage.Max)
				}
				return peak, m.MemoryOomControl != nil && m.MemoryOomControl.OomKill > 0
			}
		}
	}
	if dir, ok := paths[""]; ok {
		if mountpoint, rel, ok := splitHierarchy(dir); ok {
			if mgr, err := cgroup2.Load(rel, cgroup2.WithMountpoint(mountpoint)); err == nil {
				if m, err := mgr.Stat(); err == nil {
					if m.Memory != nil {
						peak = int64(m.Memory.MaxUsage)
					}
					return peak, m.MemoryEvents != nil && m.MemoryEvents.OomKill > 0
				}
			}
		}
	}
	return 0, false
}

// splitHierarchy splits a job's cgroup directory into the directory above
// the scans' parent and the cgroup's path from there: for v1, the root of
// all hierarchies (the memory controller's directory is its child); for
// the unified hierarchy, its mount point.
func splitHierarchy(dir string) (root, rel string, ok bool) {
	i := strings.Index(dir, cgroupParent+"/")
	if i < 0 {
		return "", "", false
	}
	root, rel = dir[:i], dir[i:]
	if filepath.Base(root) == "memory" {
		root = filepath.Dir(root)
	}
	return root, rel, true
}

// OOMKilled says whether the kernel's OOM killer ended the job.
func OOMKilled(paths map[string]string) bool {
	_, oom := jobStats(paths)
	return oom
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
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	mounts, err := mountinfo.GetMountsFromReader(f, mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		out = append(out, m.Mountpoint)
	}
	return out
}

// PeakMemory reads the most memory a job's cgroup ever used, or 0.
func PeakMemory(paths map[string]string) int64 {
	peak, _ := jobStats(paths)
	return peak
}
