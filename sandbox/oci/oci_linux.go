package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/internal/cgroupscan"
	"github.com/nondet-sandbox/nondet-sandbox/internal/cleanup"
	"github.com/nondet-sandbox/nondet-sandbox/internal/containerscan"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Options configure the runtime.
type Options struct {
	// Binary is the OCI runtime: a path or a name on PATH.
	Binary    string
	StateRoot string
	UserNS    bool
	Seccomp   bool
}

// DefaultOptions are the policy's defaults, with runc.
func DefaultOptions() Options {
	return Options{Binary: "runc", StateRoot: "/run/nondet-sandbox/oci", UserNS: true, Seccomp: true}
}

// Runtime is the OCI backend.
type Runtime struct {
	opts   Options
	binary string
	keep   []string // ["--keep"] when the runtime's run takes it
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks that the binary exists and answers.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	bin, err := exec.LookPath(opts.Binary)
	if err != nil {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("OCI runtime %q not found; give its path with --oci-runtime (Debian: apt-get install runc)", opts.Binary))
	}
	if os.Geteuid() != 0 {
		return nil, sandbox.Unavailable(sandbox.ErrNeedsRoot, "the oci runtime needs root on this machine; run as root, or use --runtime docker or --runtime host")
	}
	if out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput(); err != nil {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("OCI runtime %s does not answer --version: %v: %s", bin, err, firstLine(out)))
	}
	rt := &Runtime{opts: opts, binary: bin}
	// Only flags the runtime's own `run --help` lists are passed. The
	// record channel reaches the probe through --preserve-fds: a runtime
	// without it (gVisor's runsc) is refused here, in one line, not inside
	// the first probe. With --keep the container, and so its cgroup,
	// outlives its process until the delete after it: its peak memory and
	// OOM kills can still be read.
	help, _ := exec.CommandContext(ctx, bin, "run", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--preserve-fds") {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("OCI runtime %s does not take --preserve-fds (its `run --help` does not list it), which the record channel needs; use runc or crun, or --runtime embedded", bin))
	}
	if strings.Contains(string(help), "--keep") {
		rt.keep = []string{"--keep"}
	}
	return rt, nil
}

func (r *Runtime) Name() string { return "oci" }
func (*Runtime) Isolated() bool { return true }

func (*Runtime) Applies() []sandbox.Support { return sandbox.ContainerConditions() }

// Begin makes the root skeleton, the runtime's state directory and the
// scan's parent cgroup.
func (r *Runtime) Begin(ctx context.Context, scan sandbox.Scan) (sandbox.Session, error) {
	cs, end, err := containerscan.Open(scan, r.opts.StateRoot, false)
	if err != nil {
		return nil, err
	}
	return &session{Runtime: r, cs: cs, Ending: sandbox.EndOnce(end)}, nil
}

// session is one scan's bundles and containers.
type session struct {
	*Runtime
	cs *containerscan.Scan
	sandbox.Ending
}

func (s *session) runtime(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, s.binary, append([]string{"--root", s.cs.StateDir}, args...)...)
}

// Run writes the job's bundle and runs it with `<runtime> run`, passing
// the record channel as fd 3 and the input as fd 4 (--preserve-fds).
func (s *session) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	r, cs := s, s.cs
	if err := cs.Ensure(job); err != nil {
		return nil, err
	}
	spec, err := cs.Policy(job, r.opts.UserNS, r.opts.Seccomp).Spec(job)
	if err != nil {
		return nil, err
	}
	bundle := filepath.Join(job.Scratch, "bundle")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		return nil, err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
		return nil, err
	}
	// The runtime's own messages go to a log of their own: its stderr is
	// the probe's too, and what the scanned code prints must never pass
	// for the runtime failing.
	logPath := filepath.Join(job.Scratch, "runtime.log")
	args := []string{"--root", cs.StateDir, "--log", logPath, "--log-format", "json", "run", "--bundle", bundle, "--preserve-fds", strconv.Itoa(len(job.Files()))}
	args = append(append(args, s.keep...), job.ID)
	cmd := exec.Command(r.binary, args...)
	cmd.Stdout = job.Stdout
	cmd.Stderr = job.Stderr
	cmd.ExtraFiles = job.Files()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s run: %w", r.binary, err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cleanup.Do(ctx, 10*time.Second, func(kctx context.Context) { _ = r.runtime(kctx, "kill", job.ID, "KILL").Run() })
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	paths := map[string]string{"memory": cgroupscan.Dir("memory", cs.ID, job.ID), "": cgroupscan.Dir("", cs.ID, job.ID)}
	exit := &sandbox.Exit{PeakMemory: cgroupscan.PeakMemory(paths), OOMKilled: cgroupscan.OOMKilled(paths)}
	cleanup.Do(ctx, 10*time.Second, func(dctx context.Context) { _ = r.runtime(dctx, "delete", "--force", job.ID).Run() })
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		code := ee.ExitCode()
		if code < 0 {
			exit.Signal = "SIGKILL"
			break
		}
		if msg := runtimeError(logPath); ctx.Err() == nil && msg != "" {
			return nil, fmt.Errorf("%s could not run the container: %s", r.binary, explain(msg))
		}
		exit.Code, exit.Signal = sandbox.DecodeShimStatus(code)
	default:
		return nil, fmt.Errorf("%s run: %w", r.binary, werr)
	}
	return exit, nil
}

// runtimeError is the first error the runtime logged, or "".
func runtimeError(logPath string) string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		var entry struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && (entry.Level == "error" || entry.Level == "fatal") {
			return entry.Msg
		}
	}
	return ""
}

// explain adds what to do to the errors users meet.
func explain(stderr string) string {
	line := firstLine([]byte(stderr))
	switch {
	case strings.Contains(stderr, "cgroupv2") || strings.Contains(stderr, "hybrid"):
		return line + " (this runtime refuses a hybrid cgroup hierarchy: v1 controllers with a cgroup2 mount; use --runtime embedded or runc)"
	default:
		return line
	}
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Sweep kills and deletes the containers of dead scans, then their
// cgroups and state directories.
func (r *Runtime) Sweep(ctx context.Context, alive func(string) bool) ([]string, error) {
	return containerscan.Sweep(r.opts.StateRoot, alive, func(dir, id string) {
		kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = exec.CommandContext(kctx, r.binary, "--root", dir, "kill", id, "KILL").Run()
		_ = exec.CommandContext(kctx, r.binary, "--root", dir, "delete", "--force", id).Run()
	}), nil
}
