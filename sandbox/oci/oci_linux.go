package oci

import (
	"context"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/internal/cleanup"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/cgroupscan"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/containerscan"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/internal/fifochan"
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
	help   string   // the runtime's own lists of flags: --help, run --help, and runsc's flags
	global []string // flags before the subcommand that this runtime takes
	keep   []string // ["--keep"] when the runtime's run takes it
	runsc  bool     // gVisor's: the job's cgroup is made for it (see Run)
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks that the binary exists, answers, and (gVisor's runsc, which
// cannot start on every host) can start a sandbox here: a scan that cannot
// run is refused here, in one line, not inside its first probe.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	bin, err := exec.LookPath(opts.Binary)
	if err != nil {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("OCI runtime %q not found; give its path with --oci-runtime (Debian: apt-get install runc)", opts.Binary))
	}
	if os.Geteuid() != 0 {
		return nil, sandbox.Unavailable(sandbox.ErrNeedsRoot, "the oci runtime needs root on this machine; run as root, or use --runtime docker or --runtime host")
	}
	version, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("OCI runtime %s does not answer --version: %v: %s", bin, err, firstLine(version)))
	}
	rt := &Runtime{opts: opts, binary: bin}
	// Only flags the runtime's own help lists are passed. The record
	// channel reaches the probe through FIFOs in a read-only bind (as on
	// Docker), which every runtime takes; gVisor's runsc opens a host FIFO
	// only with --host-fifo=open. With --keep the container, and so its
	// cgroup, outlives its process until the delete after it: its peak
	// memory and OOM kills can still be read.
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"flags"}} {
		out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		rt.help += string(out) + "\n"
	}
	for _, f := range []string{"log", "log-format"} {
		if !rt.takes(f) {
			return nil, sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("OCI runtime %s does not list --%s in its help; use runc, crun or runsc, or --runtime embedded", bin, f))
		}
	}
	if rt.takes("host-fifo") {
		rt.global = append(rt.global, "--host-fifo=open")
	}
	if rt.takes("keep") {
		rt.keep = []string{"--keep"}
	}
	if strings.HasPrefix(string(version), "runsc") {
		if err := canStartRunsc(ctx, bin); err != nil {
			return nil, err
		}
		rt.runsc = true
	}
	return rt, nil
}

// takes says whether the runtime's help lists the flag.
func (r *Runtime) takes(flag string) bool {
	return regexp.MustCompile(`(^|\s)--?` + regexp.QuoteMeta(flag) + `(\s|=|,|$)`).MatchString(r.help)
}

// canStartRunsc asks runsc to start a sandbox that runs /bin/true, as
// `runsc do` does, and says in one line why it cannot: on some hosts (a
// virtual machine without what gVisor's platform needs) none starts.
func canStartRunsc(ctx context.Context, bin string) error {
	dir, err := os.MkdirTemp("", "nondet-sandbox-runsc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logs := filepath.Join(dir, "logs") + "/"
	out, err := exec.CommandContext(ctx, bin, "--root", filepath.Join(dir, "state"), "--network=none", "--debug", "--debug-log="+logs,
		"do", "/bin/true").CombinedOutput()
	if err == nil {
		return nil
	}
	why := firstLine(out)
	// The sandbox's own logs say what failed first, more plainly than do.
	if files, _ := filepath.Glob(logs + "*"); len(files) > 0 {
		re := regexp.MustCompile(`FATAL ERROR: (.*)`)
		for _, f := range files {
			if strings.HasSuffix(f, ".do.txt") {
				continue
			}
			data, _ := os.ReadFile(f)
			if m := re.FindSubmatch(data); m != nil {
				why = string(m[1])
				break
			}
		}
	}
	hint := "use --runtime embedded"
	if strings.Contains(why, "/proc/self/exe") {
		// Seen with a runsc built by a plain go install: cgo makes it a
		// dynamic binary, which cannot run again inside its own sandbox.
		hint = "a runsc built with cgo does this: build it static (CGO_ENABLED=0 go install gvisor.dev/gvisor/runsc@...), or use --runtime embedded"
	}
	return sandbox.Unavailable(sandbox.ErrNotInstalled, fmt.Sprintf("runsc cannot start a sandbox on this host (runsc do /bin/true: %s); %s", why, hint))
}

func (r *Runtime) Name() string { return "oci" }
func (*Runtime) Isolated() bool { return true }

// Applies: the spec sets each (sandbox.Policy), as embedded's does.
func (*Runtime) Applies() []sandbox.Support {
	return sandbox.AppliesAll(sandbox.Hostname, sandbox.User, sandbox.Umask, sandbox.Cwd, sandbox.Home, sandbox.CPUs, sandbox.Clock, sandbox.Pid)
}

// Capabilities: the job's cgroup gives its peak memory.
func (*Runtime) Capabilities() sandbox.Capabilities { return sandbox.Capabilities{PeakMemory: true} }

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

// Run writes the job's bundle and runs it with `<runtime> run`.
func (s *session) Run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, error) {
	r, cs := s, s.cs
	// The channel, the input and the marks are FIFOs in a folder bound
	// read-only into the container, opened as fds 3, 4 and 5 by the
	// container's first shell: no runtime flag passes descriptors.
	ch, err := fifochan.Make(filepath.Join(job.Scratch, "chan"))
	if err != nil {
		return nil, err
	}
	defer ch.Finish()
	bound := *job
	bound.Binds = append(append([]sandbox.Bind(nil), job.Binds...), sandbox.Bind{Source: ch.Dir, Target: fifochan.Inside})
	if err := cs.Ensure(&bound); err != nil {
		return nil, err
	}
	spec, err := cs.Policy(&bound, r.opts.UserNS, r.opts.Seccomp).Spec(&bound)
	if err != nil {
		return nil, err
	}
	spec.Process.Args = append(append([]string{"/bin/sh", "-c", fifochan.Open, "sh"}, ch.Args()...), spec.Process.Args...)
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
	args := append([]string{"--root", cs.StateDir, "--log", logPath, "--log-format", "json"}, s.global...)
	args = append(append(append(args, "run", "--bundle", bundle), s.keep...), job.ID)
	if r.runsc {
		// runsc removes the cgroups it makes when the container ends, so
		// its memory kills could not be read; one made here, with the
		// job's limits, it joins and leaves.
		cg, err := cgroupscan.NewJob(cs.ID, job.ID, spec.Linux.Resources)
		if err != nil {
			return nil, err
		}
		defer cleanup.Do(ctx, 10*time.Second, func(context.Context) { _ = cg.Delete() })
	}
	cmd := exec.Command(r.binary, args...)
	cmd.Stdout = job.Stdout
	cmd.Stderr = job.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s run: %w", r.binary, err)
	}
	ch.Serve(ctx, job)
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
	ch.Finish()
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
