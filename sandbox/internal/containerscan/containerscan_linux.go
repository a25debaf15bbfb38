// Package containerscan is what the embedded and oci runtimes share for
// one scan: the read-only root's skeleton (mountpoints added as jobs need
// them), the runtime's state directory, and the parent cgroup with the
// scan-wide ceiling; and undoing all of it.
package containerscan

import (
	"context"
	"errors"
	"fmt"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/cgroupscan"
)

// Scan is one scan's shared container resources.
type Scan struct {
	sandbox.Scan
	Rootfs   string
	StateDir string
	// Rootless scans have no cgroups: their jobs get the rootless policy.
	Rootless bool

	mu   sync.Mutex
	made map[string]bool
}

// Open makes the skeleton under the scan's scratch directory, the state
// directory under stateRoot and, unless rootless, the parent cgroup. end
// releases them (and whatever cgroup levels the runtime made under the
// parent), and runs even after ctx is cancelled.
func Open(scan sandbox.Scan, stateRoot string, rootless bool) (*Scan, func(context.Context) error, error) {
	s := &Scan{Scan: scan, Rootless: rootless, made: map[string]bool{}}
	// The container's (mapped) root must be able to reach the skeleton.
	if err := os.Chmod(scan.Scratch, 0o711); err != nil {
		return nil, nil, err
	}
	s.Rootfs = filepath.Join(scan.Scratch, "rootfs")
	if err := sandbox.PrepareRootfs(s.Rootfs, nil); err != nil {
		return nil, nil, fmt.Errorf("root skeleton: %w", err)
	}
	s.StateDir = filepath.Join(stateRoot, scan.ID)
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("state directory: %w", err)
	}
	if rootless {
		return s, func(context.Context) error { return os.RemoveAll(s.StateDir) }, nil
	}
	parent, err := cgroupscan.NewParent(scan)
	if err != nil {
		os.RemoveAll(s.StateDir)
		return nil, nil, err
	}
	end := func(context.Context) error {
		var errs []error
		if err := parent.Delete(); err != nil {
			errs = append(errs, fmt.Errorf("parent cgroup: %w", err))
		}
		// A runtime removes each job's cgroup but not the scan's level it
		// made in the hierarchies the parent does not limit.
		cgroupscan.Sweep(func(id string) bool { return id != scan.ID })
		if err := removeState(s.StateDir); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return s, end, nil
}

// Ensure adds a job's mountpoints to the skeleton.
func (s *Scan) Ensure(job *sandbox.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var todo []string
	for _, m := range sandbox.Mountpoints(job) {
		if !s.made[m] {
			todo = append(todo, m)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := sandbox.PrepareRootfs(s.Rootfs, todo); err != nil {
		return fmt.Errorf("root skeleton: %w", err)
	}
	for _, m := range todo {
		s.made[m] = true
	}
	return nil
}

// Policy is the sandbox policy for one of this scan's jobs.
func (s *Scan) Policy(job *sandbox.Job, userNS, seccomp bool) *sandbox.Policy {
	if s.Rootless {
		return &sandbox.Policy{Rootfs: s.Rootfs, Rootless: true, Seccomp: seccomp, CPUOnlineDir: s.Scratch}
	}
	return &sandbox.Policy{
		Rootfs: s.Rootfs, UserNS: userNS, HostIDBase: 100000, Seccomp: seccomp, CPUOnlineDir: s.Scratch,
		CgroupsPath: cgroupscan.JobPath(s.ID, job.ID), MemorySwap: cgroupscan.MemorySwap(),
	}
}

// Sweep removes what dead scans left under stateRoot: each container
// through destroy (the runtime's own kill and delete), then the scan's state
// directory, then every dead scan's cgroups. It says what it removed.
func Sweep(stateRoot string, alive func(string) bool, destroy func(stateDir, container string)) []string {
	var removed []string
	scans, _ := os.ReadDir(stateRoot)
	for _, s := range scans {
		if !s.IsDir() || alive(s.Name()) {
			continue
		}
		dir := filepath.Join(stateRoot, s.Name())
		for _, id := range containerIDs(dir) {
			destroy(dir, id)
			removed = append(removed, "container "+id)
		}
		if removeState(dir) == nil {
			removed = append(removed, "state directory "+dir)
		}
	}
	return append(removed, cgroupscan.Sweep(alive)...)
}

// removeState removes a runtime's state directory, after detaching what a
// runtime left mounted in it (gVisor's runsc binds a network namespace
// there, "null-netns", and leaves it).
func removeState(dir string) error {
	mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	for i := len(mounts) - 1; i >= 0; i-- {
		_ = unix.Unmount(mounts[i].Mountpoint, unix.MNT_DETACH)
	}
	return os.RemoveAll(dir)
}

// runscState names a container's state file in runsc's state directory.
var runscState = regexp.MustCompile(`^.+_sandbox:(.+)\.state$`)

// containerIDs lists the containers a runtime's state directory holds: a
// folder each for runc and crun, a state file each for runsc (whose other
// files, a lock, a socket, a network namespace, are no container).
func containerIDs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		} else if m := runscState.FindStringSubmatch(e.Name()); m != nil {
			ids = append(ids, m[1])
		}
	}
	return ids
}
