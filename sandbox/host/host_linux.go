package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Runtime is the host backend.
type Runtime struct {
	opts Options
	self string // this binary, the probes' confining shim

	nsOnce sync.Once
	ns     *namespaces
}

// Options configure the runtime.
type Options struct {
	// Unconfined runs probes as they are, free to write where their user
	// may (--unsafe); otherwise each runs under the shim of Init.
	Unconfined bool
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns the host runtime, which confines its probes.
func New() *Runtime { return NewWith(Options{}) }

// NewWith returns the host runtime with o.
func NewWith(o Options) *Runtime {
	self, _ := os.Executable()
	return &Runtime{opts: o, self: self}
}

func (*Runtime) Name() string   { return "host" }
func (*Runtime) Isolated() bool { return false }

// Capabilities: the peak memory is the process tree's maximum resident
// set; the guard is the shim's, unless the probes run unconfined.
func (r *Runtime) Capabilities() sandbox.Capabilities {
	c := sandbox.Capabilities{PeakMemory: true}
	if !r.opts.Unconfined {
		g := ProbeGuard()
		g.Namespaces = r.namespaces() != nil
		c.Guard, c.OwnProcesses = g.Describe(), g.Namespaces
	}
	return c
}

func (r *Runtime) Applies() []sandbox.Support {
	no := func(c sandbox.Condition, why string) sandbox.Support {
		return sandbox.Support{Condition: c, Reason: why}
	}
	s := []sandbox.Support{
		no(sandbox.Hostname, "the host runtime has no UTS namespace"),
		no(sandbox.User, "the host runtime has no user namespace"),
		{Condition: sandbox.Umask, Applied: true}, // by the shim, or a shell when unconfined
		{Condition: sandbox.Cwd, Applied: true},
		{Condition: sandbox.Home, Applied: true},
		no(sandbox.CPUs, "the host runtime does not pin CPUs"),
		{Condition: sandbox.Clock, Applied: true}, // libfaketime, by the engine's environment
	}
	if r.opts.Unconfined || r.namespaces() == nil {
		s = append(s, no(sandbox.Pid, "the host runtime has no PID namespace here"))
	} else {
		s = append(s, sandbox.Support{Condition: sandbox.Pid, Applied: true})
	}
	return s
}

// Begin returns the scan's session, which knows where $SCRATCH is.
func (r *Runtime) Begin(_ context.Context, scan sandbox.Scan) (sandbox.Session, error) {
	if !r.opts.Unconfined && (!initCalled || r.self == "") {
		return nil, errors.New("host runtime: this binary cannot confine its probes (it does not call host.Init first thing); pass --unsafe to run them unconfined")
	}
	return &session{scratch: filepath.Join(scan.Scratch, "conditions"), rt: r}, nil
}

// session is one scan's processes.
type session struct {
	scratch string // the scan's; $SCRATCH in a job's paths
	rt      *Runtime
}

// End has nothing to release: the engine removes the scratch directory.
func (*session) End(context.Context) error { return nil }

// place turns a condition's path ($SCRATCH/home/probe1) into a directory
// under the scan's scratch directory, made if missing. Runs under the same
// conditions share its path, so the path itself is a condition like any
// other; where the kernel lets the shim bind folders (namespaces), each
// job gets its own under that path.
func (r *session) place(path, fallback string) (string, error) {
	root := r.scratch
	rest, ok := strings.CutPrefix(path, sandbox.ScratchVar)
	if !ok || root == "" {
		rest, root = "", fallback
	}
	dir := filepath.Join(root, filepath.Clean("/"+rest))
	return dir, os.MkdirAll(dir, 0o700)
}

// Sweep has nothing to sweep: every probe process dies with its engine
// (parent-death signal), and the engine sweeps its own directories.
func (*Runtime) Sweep(context.Context, func(string) bool) ([]string, error) { return nil, nil }

// Run starts the interpreter in its own session (and process group), with HOME and the
// working directory made fresh under the job's scratch directory, and
// kills the whole group when it ends or ctx is cancelled.
func (r *session) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	home, err := r.place(job.Cond.Home, filepath.Join(job.Scratch, "home"))
	if err != nil {
		return nil, fmt.Errorf("host runtime: %w", err)
	}
	cwd, err := r.place(job.Dir, filepath.Join(job.Scratch, "cwd"))
	if err != nil {
		return nil, fmt.Errorf("host runtime: %w", err)
	}
	env := make([]string, 0, len(job.Env)+1)
	for _, kv := range job.Env {
		if strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)

	argv := job.Argv
	var ns *namespaces // the confined probe's namespaces, where it has them
	if !r.rt.opts.Unconfined {
		ns = r.rt.namespaces()
	}
	// A session of its own: no controlling terminal to write to or to
	// push input into, and its group is the session's.
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	dir := cwd
	if !r.rt.opts.Unconfined {
		// The shim lets the probe write only in its own folders.
		for _, d := range append([]string{job.Scratch}, job.Writable...) {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("host runtime: %w", err)
			}
		}
		writable := append([]string{home, cwd, job.Scratch}, job.Writable...)
		shim := []string{r.rt.self, confineArg, "-umask", fmt.Sprintf("%o", job.Cond.Umask)}
		for _, b := range job.Binds {
			shim = append(shim, "-ro", b.Source)
		}
		if ns != nil {
			// Jobs under the same conditions share the folders' paths, not
			// what is in them: each job's own are bound over them in a
			// mount namespace of its own, and go when it ends.
			shim = append(shim, "-ns", ns.engineNS)
			own := filepath.Join(job.Scratch, "own")
			defer os.RemoveAll(own)
			for i, shared := range append([]string{home, cwd}, job.Private...) {
				mine := filepath.Join(own, strconv.Itoa(i))
				if err := os.MkdirAll(mine, 0o700); err != nil {
					return nil, fmt.Errorf("host runtime: %w", err)
				}
				shim = append(shim, "-bind", mine, shared)
			}
			shim = append(shim, "-dir", cwd)
			// The interpreter is not the namespace's pid 1 (which ignores
			// the signals it does not handle), and its pid is the run's.
			floor := max(job.Cond.PidFloor, 2)
			shim = append(shim, "-pid", strconv.Itoa(floor))
			argv = sandbox.PidShim(floor, argv)
			attr.Cloneflags, attr.UidMappings, attr.GidMappings, attr.AmbientCaps = ns.attr.Cloneflags, ns.attr.UidMappings, ns.attr.GidMappings, ns.attr.AmbientCaps
			dir = job.Scratch
		}
		argv = append(append(append(shim, writable...), "--"), argv...)
	} else {
		argv = append([]string{"/bin/sh", "-c", `umask "$0" && exec "$@"`, fmt.Sprintf("%o", job.Cond.Umask)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = job.Stdout
	cmd.Stderr = job.Stderr
	cmd.ExtraFiles = job.Files()
	cmd.SysProcAttr = attr
	cmd.WaitDelay = time.Second

	// The umask is set by the shim (or the shell) the job starts in:
	// changing this process's umask around Start would race with every
	// other goroutine creating files.
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("host runtime: start %s: %w", job.Argv[0], err)
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	// Whatever the probe forked into its group dies with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	exit := &sandbox.Exit{}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit.Signal = sandbox.SignalName(int(ws.Signal()))
		} else if exit.Code = ee.ExitCode(); ns != nil {
			exit.Code, exit.Signal = sandbox.DecodeShimStatus(exit.Code)
		}
	case errors.Is(err, exec.ErrWaitDelay):
	default:
		return nil, fmt.Errorf("host runtime: wait: %w", err)
	}
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			exit.PeakMemory = ru.Maxrss * 1024
		}
	}
	return exit, nil
}

// namespaces are how a probe gets mount, PID and IPC namespaces of its
// own, where the shim mounts a /proc of its own processes and binds the
// job's own folders over its conditions': as root, new namespaces;
// otherwise also a user namespace that maps only the user's own ids,
// where the kernel allows one. Nil where the shim cannot set them up
// (tried once), and the probes then share the machine's (the guard says
// so).
func (r *Runtime) namespaces() *namespaces {
	r.nsOnce.Do(func() {
		if initCalled && r.self != "" {
			r.ns = newNamespaces(r.self)
		}
	})
	return r.ns
}

func newNamespaces(self string) *namespaces {
	engineNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return nil
	}
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC}
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		// The shim, not root there, keeps across its exec only what is
		// ambient: the right to mount, in its own namespaces, until it
		// drops every capability.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	truth, err := exec.LookPath("true")
	if err != nil {
		return nil
	}
	cmd := exec.Command(self, confineArg, "-ns", engineNS, "--", truth)
	cmd.SysProcAttr = attr
	if cmd.Run() != nil {
		return nil
	}
	return &namespaces{attr: attr, engineNS: engineNS}
}

// namespaces are the clone flags and id maps of Runtime.namespaces, and
// the engine's own mount namespace, which the shim must not be in.
type namespaces struct {
	attr     *syscall.SysProcAttr
	engineNS string
}
