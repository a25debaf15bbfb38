package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Runtime is the host backend.
type Runtime struct {
	opts Options
	self string // this binary, the probes' confining shim
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
		c.Guard = ProbeGuard().Describe()
	}
	return c
}

func (*Runtime) Applies() []sandbox.Support {
	no := func(c sandbox.Condition, why string) sandbox.Support {
		return sandbox.Support{Condition: c, Reason: why}
	}
	return []sandbox.Support{
		no(sandbox.Hostname, "the host runtime has no UTS namespace"),
		no(sandbox.User, "the host runtime has no user namespace"),
		{Condition: sandbox.Umask, Applied: true}, // by the worker, from its plan
		{Condition: sandbox.Cwd, Applied: true},
		{Condition: sandbox.Home, Applied: true},
		no(sandbox.CPUs, "the host runtime does not pin CPUs"),
		no(sandbox.Clock, "the host runtime does not shift the clock"),
		no(sandbox.Pid, "the host runtime has no PID namespace"),
	}
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
// conditions share it, so the path itself is a condition like any other.
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
	if !r.rt.opts.Unconfined {
		// The shim lets the probe write only in its own folders.
		for _, d := range append([]string{job.Scratch}, job.Writable...) {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("host runtime: %w", err)
			}
		}
		writable := append([]string{home, cwd, job.Scratch}, job.Writable...)
		argv = append(append(append([]string{r.rt.self, confineArg}, writable...), "--"), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = cwd
	cmd.Stdout = job.Stdout
	cmd.Stderr = job.Stderr
	cmd.ExtraFiles = job.Files()
	// A session of its own: no controlling terminal to write to or to
	// push input into, and its group is the session's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second

	// The umask is the worker's to set (the engine puts it in the plan):
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
		} else {
			exit.Code = ee.ExitCode()
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
