package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	_ "github.com/opencontainers/cgroups/devices" // device rules for the fs cgroup manager
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // the C half of the init re-exec
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/cgroupscan"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/containerscan"
)

// The main goroutine keeps the main thread in every binary that links this
// runtime: libcontainer parks each thread it moves into a container's mount
// namespace, and were the main thread one of them, /proc/self (read by the
// cgroup libraries) would describe the container instead of the host.
func init() { runtime.LockOSThread() }

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
	// Rootless runs as a user without root: libcontainer's rootless mode,
	// a user namespace mapping only the caller's own uid, no cgroups
	// (rlimits instead). The rootless runtime is this (sandbox/rootless).
	Rootless bool
}

// DefaultOptions are the policy's defaults.
func DefaultOptions() Options {
	return Options{StateRoot: "/run/nondet-sandbox/embedded", UserNS: true, Seccomp: true}
}

// Runtime is the embedded backend.
type Runtime struct {
	opts Options
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns the embedded runtime, or an error that says why it cannot
// run here.
func New(opts Options) (*Runtime, error) {
	if opts.Rootless {
		return newRootless(opts)
	}
	if os.Geteuid() != 0 {
		return nil, sandbox.Unavailable(sandbox.ErrNeedsRoot, "the embedded runtime needs root; as another user use --runtime rootless (the same containers on unprivileged user namespaces), or --runtime docker")
	}
	if opts.Seccomp && !seccompBuilt {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, "this binary was built without seccomp support; build it with `make build` (go build -tags seccomp, needs libseccomp-dev), or pass --seccomp=false")
	}
	if cgroups.Mode() == cgroups.Unavailable {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, "no cgroup filesystem is mounted at /sys/fs/cgroup; the embedded runtime needs cgroups")
	}
	return &Runtime{opts: opts}, nil
}

func (r *Runtime) Name() string {
	if r.opts.Rootless {
		return "rootless"
	}
	return "embedded"
}
func (*Runtime) Isolated() bool { return true }

// Capabilities: the rootless mode, which has no cgroups, holds processes
// to their limits with rlimits and measures no peak memory.
func (r *Runtime) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{LimitsByRlimit: r.opts.Rootless, PeakMemory: !r.opts.Rootless}
}

func (r *Runtime) Applies() []sandbox.Support {
	out := sandbox.AppliesAll(sandbox.Hostname, sandbox.User, sandbox.Umask, sandbox.Cwd, sandbox.Home, sandbox.CPUs, sandbox.Clock, sandbox.Pid)
	if r.opts.Rootless {
		for i := range out {
			if out[i].Condition == sandbox.User {
				out[i] = sandbox.Support{Condition: sandbox.User, Reason: "a user without root has one uid to map into the user namespace; the probe runs as its root, with no capabilities"}
			}
		}
	}
	return out
}

// Begin makes the scan's root skeleton, state directory and parent cgroup
// with the scan-wide memory and pids ceiling.
func (r *Runtime) Begin(ctx context.Context, scan sandbox.Scan) (sandbox.Session, error) {
	cs, end, err := containerscan.Open(scan, r.opts.StateRoot, r.opts.Rootless)
	if err != nil {
		return nil, err
	}
	return &session{opts: r.opts, cs: cs, Ending: sandbox.EndOnce(end)}, nil
}

// session is one scan's containers.
type session struct {
	opts Options
	cs   *containerscan.Scan
	sandbox.Ending
}

// Run creates one container, runs the job in it, and destroys it.
func (s *session) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	cs := s.cs
	if err := cs.Ensure(job); err != nil {
		return nil, err
	}
	spec, err := cs.Policy(job, s.opts.UserNS, s.opts.Seccomp).Spec(job)
	if err != nil {
		return nil, err
	}
	cfg, err := containerConfig(job.ID, spec, s.opts.Rootless)
	if err != nil {
		return nil, fmt.Errorf("container config: %w", err)
	}
	ctr, err := libcontainer.Create(cs.StateDir, job.ID, cfg)
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
	proc.ExtraFiles = job.Files()
	if err := ctr.Start(proc); err != nil {
		return nil, fmt.Errorf("start container: %w", err)
	}
	if s.opts.Rootless && job.Cond.CPUs != "" {
		// No cgroup holds a rootless container's CPUs: its init, waiting
		// to exec the job, is pinned, and the job inherits the affinity.
		// (runc's execCPUAffinity is for processes exec'd into a running
		// container, never its init.)
		if err := pin(proc, job.Cond.CPUs); err != nil {
			_ = ctr.Signal(unix.SIGKILL)
			return nil, fmt.Errorf("cpu set %s: %w", job.Cond.CPUs, err)
		}
	}
	if err := ctr.Exec(); err != nil {
		_ = ctr.Signal(unix.SIGKILL)
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
	exit.OOMKilled = cgroupscan.OOMKilled(cgroupPaths)
	return exit, nil
}

// specconvMu serialises specconv: it writes the user namespace's root
// uid into device entries shared between every config it makes.
var specconvMu sync.Mutex

// containerConfig converts a spec, giving the config devices of its own so
// that concurrent containers never share them.
func containerConfig(id string, spec *specs.Spec, rootless bool) (*configs.Config, error) {
	specconvMu.Lock()
	defer specconvMu.Unlock()
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{CgroupName: id, Spec: spec,
		RootlessEUID: rootless, RootlessCgroups: rootless})
	if err != nil {
		return nil, err
	}
	for i, d := range cfg.Devices {
		own := *d
		cfg.Devices[i] = &own
	}
	return cfg, nil
}

// pin sets the CPU affinity of every thread of proc: whichever of them
// execs the job, the job starts on cpus, and so does what it starts.
func pin(proc *libcontainer.Process, cpus string) error {
	set, err := configs.ToCPUSet(cpus)
	if err != nil {
		return err
	}
	pid, err := proc.Pid()
	if err != nil {
		return err
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
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
	if p.ExecCPUAffinity != nil {
		aff, err := configs.ConvertCPUAffinity(p.ExecCPUAffinity)
		if err != nil {
			return nil, err
		}
		lp.CPUAffinity = aff
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

var rlimits = map[string]int{"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_CORE": unix.RLIMIT_CORE,
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_NPROC": unix.RLIMIT_NPROC}

// Sweep destroys the containers, cgroups and state directories of scans
// that no longer run.
func (r *Runtime) Sweep(ctx context.Context, alive func(string) bool) ([]string, error) {
	return containerscan.Sweep(r.opts.StateRoot, alive, func(dir, id string) {
		if ctr, err := libcontainer.Load(dir, id); err == nil {
			_ = ctr.Signal(unix.SIGKILL)
			waitStopped(ctr)
			_ = ctr.Destroy()
		}
	}), nil
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
