package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	_ "github.com/opencontainers/cgroups/devices" // device rules for the fs cgroup manager
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // the C half of the init re-exec
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Init is the container side of libcontainer's re-exec: a binary that
// uses this runtime calls it first thing in main (and a test binary in
// init), and it never returns when the process is a container's init.
func Init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}

// Options configure the runtime.
type Options struct {
	// StateRoot holds libcontainer's state, one directory per scan.
	StateRoot string
	// UserNS maps the container's users to unprivileged host uids.
	UserNS bool
	// Seccomp applies the Docker-like profile. A binary built without the
	// seccomp tag refuses to run rather than run without it.
	Seccomp bool
}

// DefaultOptions are the policy's defaults.
func DefaultOptions() Options {
	return Options{StateRoot: "/run/nondet-sandbox/embedded", UserNS: true, Seccomp: true}
}

// cgroupParent is the top of every scan's cgroup, in every hierarchy.
const cgroupParent = "/nondet-sandbox"

// Runtime is the embedded backend.
type Runtime struct {
	opts Options

	mu       sync.Mutex
	scan     sandbox.Scan
	rootfs   string
	stateDir string
	made     map[string]bool // mountpoints already in the skeleton
	parent   interface{ Delete() error }
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns the embedded runtime, or an error that says why it cannot
// run here.
func New(opts Options) (*Runtime, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the embedded runtime needs root on this machine (user namespaces and cgroup delegation for other users are not supported yet); run as root, or use --runtime docker or --runtime host")
	}
	if opts.Seccomp && !seccompBuilt {
		return nil, errors.New("this binary was built without seccomp support; build it with `make build` (go build -tags seccomp, needs libseccomp-dev), or pass --seccomp=false")
	}
	if cgroups.Mode() == cgroups.Unavailable {
		return nil, errors.New("no cgroup filesystem is mounted at /sys/fs/cgroup; the embedded runtime needs cgroups")
	}
	return &Runtime{opts: opts}, nil
}

func (*Runtime) Name() string   { return "embedded" }
func (*Runtime) Isolated() bool { return true }

func (r *Runtime) Applies() []sandbox.Support {
	ok := func(c string) sandbox.Support { return sandbox.Support{Condition: c, Applied: true} }
	return []sandbox.Support{ok("hostname"), ok("user"), ok("umask"), ok("cwd"), ok("home"), ok("cpus"), ok("clock"), ok("pid")}
}

// Begin makes the scan's root skeleton, state directory and parent cgroup
// with the scan-wide memory and pids ceiling.
func (r *Runtime) Begin(ctx context.Context, scan sandbox.Scan) (func(context.Context) error, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scan = scan
	r.made = map[string]bool{}
	// The container's mapped root must be able to reach the skeleton.
	if err := os.Chmod(scan.Scratch, 0o711); err != nil {
		return nil, err
	}
	r.rootfs = filepath.Join(scan.Scratch, "rootfs")
	if err := sandbox.PrepareRootfs(r.rootfs, nil); err != nil {
		return nil, fmt.Errorf("root skeleton: %w", err)
	}
	r.stateDir = filepath.Join(r.opts.StateRoot, scan.ID)
	if err := os.MkdirAll(r.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	parent, err := newParentCgroup(scan)
	if err != nil {
		os.RemoveAll(r.stateDir)
		return nil, err
	}
	r.parent = parent
	return func(context.Context) error {
		var errs []error
		if err := parent.Delete(); err != nil {
			errs = append(errs, fmt.Errorf("parent cgroup: %w", err))
		}
		if err := os.RemoveAll(r.stateDir); err != nil {
			errs = append(errs, err)
		}
		// libcontainer removes each job's cgroup but not the scan's level
		// it made in the hierarchies the parent does not limit.
		sweepCgroups(func(id string) bool { return id != scan.ID })
		return errors.Join(errs...)
	}, nil
}

// newParentCgroup makes /nondet-sandbox/<scan> with the scan-wide ceiling,
// on a v1, hybrid or v2 host.
func newParentCgroup(scan sandbox.Scan) (interface{ Delete() error }, error) {
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

// ensureMountpoints adds a job's mountpoints to the shared skeleton.
func (r *Runtime) ensureMountpoints(job *sandbox.Job) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var todo []string
	for _, m := range sandbox.Mountpoints(job) {
		if !r.made[m] {
			todo = append(todo, m)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := sandbox.PrepareRootfs(r.rootfs, todo); err != nil {
		return err
	}
	for _, m := range todo {
		r.made[m] = true
	}
	return nil
}

func (r *Runtime) policy(job *sandbox.Job) *sandbox.Policy {
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return &sandbox.Policy{
		Rootfs: r.rootfs, UserNS: r.opts.UserNS, HostIDBase: 100000, Seccomp: r.opts.Seccomp,
		CgroupsPath: cgroupParent + "/" + r.scan.ID + "/" + job.ID,
		MemorySwap:  err == nil || cgroups.Mode() == cgroups.Unified,
	}
}

// Run creates one container, runs the job in it, and destroys it.
func (r *Runtime) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	if err := r.ensureMountpoints(job); err != nil {
		return nil, fmt.Errorf("root skeleton: %w", err)
	}
	spec, err := r.policy(job).Spec(job)
	if err != nil {
		return nil, err
	}
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{CgroupName: job.ID, NoNewKeyring: true, Spec: spec})
	if err != nil {
		return nil, fmt.Errorf("container config: %w", err)
	}
	ctr, err := libcontainer.Create(r.stateDir, job.ID, cfg)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	defer ctr.Destroy()

	proc, err := process(spec.Process)
	if err != nil {
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	proc.Stdin, proc.Stdout, proc.Stderr = devnull, job.Stdout, job.Stderr
	proc.ExtraFiles = []*os.File{job.Records}
	if err := ctr.Run(proc); err != nil {
		return nil, fmt.Errorf("start container: %w", err)
	}
	var cgroupPaths map[string]string
	if st, err := ctr.State(); err == nil {
		cgroupPaths = make(map[string]string, len(st.CgroupPaths))
		for k, v := range st.CgroupPaths { // Destroy changes the state's map
			cgroupPaths[k] = v
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// Killing init kills the whole PID namespace.
			if err := ctr.Signal(unix.SIGKILL); err != nil {
				_ = proc.Signal(unix.SIGKILL)
			}
		case <-done:
		}
	}()
	ps, werr := proc.Wait()
	close(done)
	exit := &sandbox.Exit{}
	if ps == nil {
		return nil, fmt.Errorf("wait: %w", werr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			exit.Signal = sandbox.SignalName(int(ws.Signal()))
		case job.Cond.PidFloor > 0:
			exit.Code, exit.Signal = sandbox.DecodeShimStatus(ws.ExitStatus())
		default:
			exit.Code = ws.ExitStatus()
		}
	}
	if st, err := ctr.Stats(); err == nil && st.CgroupStats != nil {
		exit.PeakMemory = int64(st.CgroupStats.MemoryStats.Usage.MaxUsage)
	}
	exit.OOMKilled = oomKilled(cgroupPaths)
	return exit, nil
}

// oomKilled reads the OOM-kill count: memory.failcnt stays 0 on some
// kernels under an OOM kill, memory.oom_control's oom_kill does not.
func oomKilled(paths map[string]string) bool {
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

// process mirrors runc's own translation of a spec's process.
func process(p *specs.Process) (*libcontainer.Process, error) {
	lp := &libcontainer.Process{
		Args: p.Args, Env: p.Env, UID: int(p.User.UID), GID: int(p.User.GID), Cwd: p.Cwd,
		NoNewPrivileges: &p.NoNewPrivileges, Init: true,
	}
	if c := p.Capabilities; c != nil {
		lp.Capabilities = &configs.Capabilities{Bounding: c.Bounding, Effective: c.Effective,
			Inheritable: c.Inheritable, Permitted: c.Permitted, Ambient: c.Ambient}
	}
	for _, rl := range p.Rlimits {
		t, ok := rlimits[rl.Type]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q", rl.Type)
		}
		lp.Rlimits = append(lp.Rlimits, configs.Rlimit{Type: t, Hard: rl.Hard, Soft: rl.Soft})
	}
	return lp, nil
}

var rlimits = map[string]int{"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_CORE": unix.RLIMIT_CORE}

// Sweep destroys the containers, cgroups and state directories of scans
// that no longer run.
func (r *Runtime) Sweep(ctx context.Context, alive func(string) bool) ([]string, error) {
	var removed []string
	scans, _ := os.ReadDir(r.opts.StateRoot)
	for _, s := range scans {
		if !s.IsDir() || alive(s.Name()) {
			continue
		}
		dir := filepath.Join(r.opts.StateRoot, s.Name())
		ctrs, _ := os.ReadDir(dir)
		for _, c := range ctrs {
			if ctr, err := libcontainer.Load(dir, c.Name()); err == nil {
				_ = ctr.Signal(unix.SIGKILL)
				waitStopped(ctr)
				_ = ctr.Destroy()
			}
			removed = append(removed, "container "+c.Name())
		}
		if err := os.RemoveAll(dir); err == nil {
			removed = append(removed, "state directory "+dir)
		}
	}
	removed = append(removed, sweepCgroups(alive)...)
	return removed, nil
}

func waitStopped(ctr *libcontainer.Container) {
	for range 50 {
		st, err := ctr.Status()
		if err != nil || st == libcontainer.Stopped {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sweepCgroups kills whatever still runs in a dead scan's cgroups and
// removes them, deepest first, in every mounted hierarchy.
func sweepCgroups(alive func(string) bool) []string {
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

// ScanOf returns the scan id in a job id, for sweeping.
func ScanOf(jobID string) string { return scanlock.ScanID(jobID) }
