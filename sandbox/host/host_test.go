package host_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
kept, port, pid, leaked = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
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
`
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	pid := strconv.Itoa(sleeper.Process.Pid)
	run := func(rt *host.Runtime, linkTmp bool) (string, *sandbox.Exit) {
		scratch := t.TempDir()
		sess, err := rt.Begin(context.Background(), sandbox.Scan{ID: "guard", Scratch: scratch, Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.End(context.Background())
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var stderr bytes.Buffer
		tmp := filepath.Join(scratch, "tmp")
		if linkTmp { // as a probe could have left it for the next
			if err := os.Symlink(outside, tmp); err != nil {
				t.Fatal(err)
			}
		}
		job := &sandbox.Job{ID: "guard", Argv: []string{py, "-I", "-c", code, kept, port, pid, strconv.Itoa(leaked)},
			Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=" + tmp}, Dir: sandbox.ScratchVar + "/cwd", Records: w,
			Stdout: io.Discard, Stderr: &stderr, Scratch: filepath.Join(scratch, "job"), Writable: []string{tmp},
			Cond: sandbox.Conditions{Home: sandbox.ScratchVar + "/home", Umask: 0o022}}
		exit, err := sess.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		got, _ := io.ReadAll(r)
		if stderr.Len() > 0 {
			t.Logf("stderr: %s", stderr.String())
		}
		return string(got), exit
	}

	got, _ := run(host.New(), false)
	for _, want := range []string{
		"write-outside refused PermissionError", "child-write-outside refused", "chmod refused PermissionError",
		"truncate refused PermissionError", "inherited refused OSError",
		"utime refused PermissionError", "connect refused PermissionError", "signal refused PermissionError",
		"write-tmp done", "write-home done", "write-cwd done", "write-devnull done",
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

	// A writable folder that is a link (to outside) runs nothing.
	if got, exit := run(host.New(), true); got != "" || exit.Code == 0 {
		t.Errorf("a linked TMPDIR: the probe ran (exit %+v):\n%s", exit, got)
	}

	// Unconfined, the same probe does it all: the checks above can fail.
	got, _ = run(host.NewWith(host.Options{Unconfined: true}), false)
	for _, want := range []string{"write-outside done", "chmod done", "connect done"} {
		if !strings.Contains(got, want) {
			t.Errorf("unconfined: want %q in\n%s", want, got)
		}
	}
}
