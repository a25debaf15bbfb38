package host_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nondet-sandbox/nondet-sandbox/engine/scansuite"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/conformance"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
)

// The probes' confining shim is this test binary, re-executed.
func init() { host.Init() }

// TestContract checks each promise of the runtime interface on plain
// processes.
func TestContract(t *testing.T) {
	conformance.Contract(t, host.New(), nil)
}

// claiming is the host runtime saying it applies what it does not: the
// hostname, which needs a UTS namespace, and the user.
type claiming struct{ *host.Runtime }

func (c claiming) Applies() []sandbox.Support {
	out := c.Runtime.Applies()
	for i, sup := range out {
		if sup.Condition == sandbox.Hostname || sup.Condition == sandbox.User {
			out[i] = sandbox.Support{Condition: sup.Condition, Applied: true}
		}
	}
	return out
}

// TestContractCatchesAConditionClaimedNotApplied: the contract's check of
// the conditions fails a runtime that claims one it does not apply,
// naming it, and passes the runtime that says so.
func TestContractCatchesAConditionClaimedNotApplied(t *testing.T) {
	if got := conformance.Misapplied(t, host.New()); len(got) != 0 {
		t.Fatalf("the host runtime as it is: %q", got)
	}
	got := conformance.Misapplied(t, claiming{host.New()})
	if len(got) != 2 || !strings.HasPrefix(got[0], "hostname:") || !strings.HasPrefix(got[1], "user:") {
		t.Errorf("a runtime that claims the hostname and the user: %q, want both named", got)
	}
}

// TestIntegrity: a hostile module beside an honest one changes none of the
// honest module's verdicts, technique by technique (the static gate refuses
// some of them on this runtime before they run).
func TestIntegrity(t *testing.T) {
	testenv.Integration(t)
	scansuite.Integrity(t, host.New(), testenv.Python(t), "../../fixtures/integrity")
}

// TestGuard: a probe's process, and all it starts, writes only in its own
// folders, changes no file's mode or times, opens no socket and signals
// nothing of the machine; the same probe run unconfined (--unsafe) does
// all of it, so each check can fail.
func TestGuard(t *testing.T) {
	if g := host.ProbeGuard(); g.Landlock < 6 || !g.Seccomp {
		testenv.Skip(t, "the guard is not whole here: "+g.Describe())
	}
	py := testenv.Python(t)
	outside := t.TempDir()
	kept := filepath.Join(outside, "kept.txt")
	if err := os.WriteFile(kept, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(kept, old, old); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	// Open for writing without close-on-exec, as a caller's shell may
	// leave a descriptor: the probe must not inherit it.
	leaked, err := syscall.Open(kept, syscall.O_WRONLY|syscall.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leaked)

	// Each attempt writes its name and what came of it on fd 3.
	code := `
import os, socket, subprocess, sys
out = os.fdopen(3, "w", buffering=1)
def attempt(name, f):
    try:
        f()
        out.write(name + " done\n")
    except Exception as e:
        out.write(name + " refused " + type(e).__name__ + "\n")
kept, port, pid, leaked, shmid, engine = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
def write(path):
    with open(path, "w") as fh:
        fh.write("x")
attempt("write-outside", lambda: write(os.path.join(os.path.dirname(kept), "planted.txt")))
attempt("child-write-outside", lambda: subprocess.run(["/bin/sh", "-c", "echo x > \"$0\"", kept], check=True))
attempt("chmod", lambda: os.chmod(kept, 0o600))
attempt("truncate", lambda: os.truncate(kept, 0))
attempt("inherited", lambda: os.write(leaked, b"x"))
attempt("utime", lambda: os.utime(kept))
attempt("connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=5))
attempt("signal", lambda: os.kill(pid, 15))
attempt("write-tmp", lambda: write(os.path.join(os.environ["TMPDIR"], "t")))
attempt("write-home", lambda: write(os.path.join(os.environ["HOME"], "h")))
attempt("write-cwd", lambda: write("c"))
attempt("write-devnull", lambda: write(os.devnull))
# Devices, other processes' scheduling and limits, the machine's IPC.
import ctypes, resource, stat
libc = ctypes.CDLL(None, use_errno=True)
def check(r):
    if r == -1 or r is None or r == ctypes.c_void_p(-1).value:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
attempt("mknod", lambda: os.mknod("dev-null-again", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
attempt("nice-other", lambda: os.setpriority(os.PRIO_PROCESS, pid, 7))
attempt("nice-user", lambda: os.setpriority(os.PRIO_USER, 0, 7))
attempt("affinity-other", lambda: os.sched_setaffinity(pid, {0}))
attempt("scheduler-other", lambda: os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0)))
attempt("prlimit-other", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64)))
attempt("ioprio-other", lambda: check(libc.syscall(251, 1, pid, (3 << 13) | 7)))  # x86_64 ioprio_set: idle class
attempt("nice-own", lambda: os.setpriority(os.PRIO_PROCESS, 0, 19))
attempt("limit-own", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
libc.shmat.restype = ctypes.c_void_p
attempt("shmat-other", lambda: check(libc.shmat(shmid, None, 0)))
def msg():
    q = libc.msgget(0, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    check(q)
    libc.msgctl(q, 0, None)  # IPC_RMID
attempt("msgget", msg)
def mq():
    q = libc.mq_open(b"/nds-guard-" + str(os.getpid()).encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    check(q)
    libc.mq_unlink(b"/nds-guard-" + str(os.getpid()).encode())
attempt("mq_open", mq)
# Reads: only the system's files, what every user may read of /etc, and
# the probe's own folders.
def read(path):
    with open(path, "rb") as fh:
        fh.read(1)
attempt("read-outside", lambda: read(kept))
attempt("read-shadow", lambda: read("/etc/shadow"))
attempt("read-engine-environ", lambda: read("/proc/%d/environ" % engine))
attempt("list-procs", lambda: out.write("procs " + " ".join(sorted(p for p in os.listdir("/proc") if p.isdigit())) + "\n"))
attempt("read-passwd", lambda: read("/etc/passwd"))
`
	// A segment of the test's, as another process of the machine holds one.
	shmid, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmCtl(shmid, unix.IPC_RMID, nil)
	niceBefore, _ := unix.Getpriority(unix.PRIO_PROCESS, sleeper.Process.Pid)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	pid := strconv.Itoa(sleeper.Process.Pid)
	run := func(rt *host.Runtime, linkTmp bool) (string, *sandbox.Exit) {
		scratch := t.TempDir()
		sess, err := rt.Begin(context.Background(), sandbox.Scan{ID: "guard", Scratch: scratch, Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.End(context.Background())
		tmp := filepath.Join(scratch, "tmp")
		if linkTmp { // as a probe could have left it for the next
			if err := os.Symlink(outside, tmp); err != nil {
				t.Fatal(err)
			}
		}
		job := &sandbox.Job{ID: "guard", Argv: []string{py, "-I", "-c", code, kept, port, pid, strconv.Itoa(leaked), strconv.Itoa(shmid), strconv.Itoa(os.Getpid())},
			Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=" + tmp}, Dir: sandbox.ScratchVar + "/cwd",
			Scratch: filepath.Join(scratch, "job"), Writable: []string{tmp},
			Cond: sandbox.Conditions{Home: sandbox.ScratchVar + "/home", Umask: 0o022}}
		got, exit, stderr := runJob(t, sess, job)
		if stderr != "" {
			t.Logf("stderr: %s", stderr)
		}
		return got, exit
	}

	got, _ := run(host.New(), false)
	for _, want := range []string{
		"write-outside refused PermissionError", "child-write-outside refused", "chmod refused PermissionError",
		"truncate refused PermissionError", "inherited refused OSError",
		"utime refused PermissionError", "connect refused PermissionError", "signal refused",
		"write-tmp done", "write-home done", "write-cwd done", "write-devnull done",
		"mknod refused PermissionError", "nice-other refused PermissionError", "nice-user refused PermissionError",
		"affinity-other refused PermissionError", "scheduler-other refused PermissionError",
		"prlimit-other refused PermissionError", "ioprio-other refused PermissionError", "nice-own done", "limit-own done",
		"shmat-other refused PermissionError", "msgget refused PermissionError", "mq_open refused PermissionError",
		"read-outside refused PermissionError", "read-shadow refused PermissionError", "read-engine-environ refused",
		"read-passwd done",
	} {
		if !strings.Contains(got, want+"\n") && !strings.Contains(got, want+" ") {
			t.Errorf("confined: want %q in\n%s", want, got)
		}
	}
	st, err := os.Stat(kept)
	if err != nil || st.Mode().Perm() != 0o644 || !st.ModTime().Equal(old) {
		t.Errorf("confined: %s changed: %v %v", kept, st.Mode(), st.ModTime())
	}
	if data, _ := os.ReadFile(kept); string(data) != "kept" {
		t.Errorf("confined: %s now holds %q", kept, data)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Errorf("confined: a file was planted outside the probe's folders")
	}
	if sleeper.ProcessState != nil || syscall.Kill(sleeper.Process.Pid, 0) != nil {
		t.Errorf("confined: the probe signalled a process of the machine")
	}
	// Its /proc shows its own processes, none of the machine's.
	for _, line := range strings.Split(got, "\n") {
		if procs, ok := strings.CutPrefix(line, "procs "); ok {
			if ps := strings.Fields(procs); slices.Contains(ps, pid) || slices.Contains(ps, strconv.Itoa(os.Getpid())) {
				t.Errorf("confined: the probe's /proc lists the machine's processes: %v", ps)
			}
		}
	}
	if nice, _ := unix.Getpriority(unix.PRIO_PROCESS, sleeper.Process.Pid); nice != niceBefore {
		t.Errorf("confined: the probe moved a process of the machine's priority from %d to %d", niceBefore, nice)
	}
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(sleeper.Process.Pid, &cpus); err == nil && runtime.NumCPU() > 1 && cpus.Count() == 1 {
		t.Errorf("confined: the probe pinned a process of the machine to one CPU")
	}

	// A writable folder that is a link (to outside) runs nothing.
	if got, exit := run(host.New(), true); got != "" || exit.Code == 0 {
		t.Errorf("a linked TMPDIR: the probe ran (exit %+v):\n%s", exit, got)
	}

	// Unconfined, the same probe does it all: the checks above can fail.
	got, _ = run(host.NewWith(host.Options{Unconfined: true}), false)
	unconfined := []string{"write-outside done", "chmod done", "connect done", "nice-other done", "prlimit-other done", "shmat-other done", "msgget done",
		"read-outside done", "read-engine-environ done"}
	if os.Geteuid() == 0 {
		unconfined = append(unconfined, "mknod done")
	}
	for _, want := range unconfined {
		if !strings.Contains(got, want) {
			t.Errorf("unconfined: want %q in\n%s", want, got)
		}
	}
}

// TestOwnFolders: two jobs under the same conditions see the same paths
// for their working directory, HOME and TMPDIR, but not each other's
// files there (a module of another import root cannot move this one's
// answers through them), and a job's own folders are gone after it.
func TestOwnFolders(t *testing.T) {
	testenv.Integration(t)
	py := testenv.Python(t)
	scratch := t.TempDir()
	sess, err := host.New().Begin(context.Background(), sandbox.Scan{ID: "own", Scratch: scratch, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.End(context.Background())
	tmp := filepath.Join(scratch, "tmp")
	code := `
import os, sys
out = os.fdopen(3, "w", buffering=1)
places = [os.getcwd(), os.environ["HOME"], os.environ["TMPDIR"]]
out.write(repr([(p, sorted(os.listdir(p))) for p in places]) + "\n")
for p in places:
    open(os.path.join(p, "left-by-" + sys.argv[1]), "w").close()
`
	run := func(name string) string {
		job := &sandbox.Job{ID: name, Argv: []string{py, "-I", "-c", code, name},
			Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=" + tmp}, Dir: sandbox.ScratchVar + "/cwd/probe1",
			Scratch: filepath.Join(scratch, "jobs", name), Writable: []string{tmp}, Private: []string{tmp},
			Cond: sandbox.Conditions{Home: sandbox.ScratchVar + "/home/probe1", Umask: 0o022}}
		got, exit, stderr := runJob(t, sess, job)
		if exit.Code != 0 || stderr != "" {
			t.Fatalf("%s: exit %+v: %s", name, exit, stderr)
		}
		if _, err := os.Stat(filepath.Join(job.Scratch, "own")); err == nil {
			t.Errorf("%s: its own folders are still there after it", name)
		}
		return got
	}
	first, second := run("first"), run("second")
	if first != second {
		t.Errorf("the second job under the same conditions saw\n%s\nwhere the first saw\n%s", second, first)
	}
	if !strings.Contains(first, "/cwd/probe1', [])") {
		t.Errorf("the working directory is not the condition's path, or not empty: %s", first)
	}
}

// runJob runs job in sess with its records on a pipe, and returns what
// it wrote there, how it ended and its standard error.
func runJob(t *testing.T, sess sandbox.Session, job *sandbox.Job) (string, *sandbox.Exit, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stderr bytes.Buffer
	job.Records, job.Stdout, job.Stderr = w, io.Discard, &stderr
	exit, err := sess.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, _ := io.ReadAll(r)
	return string(got), exit, stderr.String()
}
