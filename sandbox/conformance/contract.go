package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Contract checks each promise of the sandbox.Runtime and sandbox.Session
// interfaces on one runtime, one subtest per promise, with plain shell
// jobs (no Python, no engine): the exit status and the signal come back,
// the record channel delivers, the environment is exactly the job's,
// cancelling the context kills the whole process tree before Run returns,
// Sweep removes what a dead scan left, End is safe twice, and (in
// containers) a job past its memory limit is killed and named so, with its
// peak memory. leftovers,
// when not nil, lists the runtime's resources that exist now.
func Contract(t *testing.T, rt sandbox.Runtime, leftovers func() []string) {
	t.Helper()
	js := begin(t, rt)
	scan, scratch, newJob, runJob := js.scan, js.scan.Scratch, js.job, js.run
	run := func(ctx context.Context, script string, env ...string) (*sandbox.Exit, string, error) {
		return runJob(ctx, newJob(script, env...))
	}

	t.Run("exit status", func(t *testing.T) {
		exit, _, err := run(context.Background(), "exit 7")
		if err != nil || exit == nil || exit.Code != 7 || exit.Signal != "" {
			t.Fatalf("exit %+v, %v; want status 7", exit, err)
		}
	})
	t.Run("signal", func(t *testing.T) {
		exit, _, err := run(context.Background(), "kill -SEGV $$")
		if err != nil || exit == nil || exit.Signal != "SIGSEGV" {
			t.Fatalf("exit %+v, %v; want SIGSEGV", exit, err)
		}
	})
	t.Run("record channel", func(t *testing.T) {
		_, recs, err := run(context.Background(), "echo one >&3; echo two >&3")
		if err != nil || recs != "one\ntwo\n" {
			t.Fatalf("records %q, %v", recs, err)
		}
	})
	t.Run("input as fd 4", func(t *testing.T) {
		f, err := os.CreateTemp(scratch, "input-")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		os.Remove(f.Name())
		want := strings.Repeat("input-line\n", 20000) // more than a pipe holds
		if _, err := f.WriteString(want); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		js.input = f
		defer func() { js.input = nil }()
		_, recs, err := run(context.Background(), "cat <&4 >&3")
		if err != nil || recs != want {
			t.Fatalf("read %d bytes of %d from fd 4, %v", len(recs), len(want), err)
		}
	})
	t.Run("marks as fd 5", func(t *testing.T) {
		if rt.Capabilities().Markless {
			t.Log("this runtime carries no marks, by design (sandbox.Capabilities.Markless)")
			return
		}
		in, err := os.CreateTemp(scratch, "input-")
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		os.Remove(in.Name())
		marks, err := sandbox.NewMarks(scratch)
		if err != nil {
			t.Fatal(err)
		}
		defer marks.Close()
		if got := sandbox.LastMark(marks); got != -1 {
			t.Fatalf("a new mark file says %d, want -1", got)
		}
		js.input, js.marks = in, marks
		defer func() { js.input, js.marks = nil, nil }()
		// A stream gets two marks and must keep the last; the mark file,
		// passed as it is, one at its start.
		_, _, err = run(context.Background(), `if [ -p /proc/self/fd/5 ]; then printf '\007\0\0\0\0\0\0\0' >&5; fi; printf '\052\0\0\0\0\0\0\0' >&5`)
		if got := sandbox.LastMark(marks); err != nil || got != 42 {
			t.Fatalf("last mark %d, %v; want 42", got, err)
		}
	})
	t.Run("environment is the job's", func(t *testing.T) {
		_, recs, err := run(context.Background(), "env >&3", "NONDET_CONTRACT=1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		sc := bufio.NewScanner(strings.NewReader(recs))
		for sc.Scan() {
			name, _, _ := strings.Cut(sc.Text(), "=")
			switch name {
			case "PWD", "SHLVL", "_", "HOSTNAME": // the shell's own, and Docker's
				continue
			}
			got = append(got, name)
		}
		slices.Sort(got)
		if want := []string{"HOME", "NONDET_CONTRACT", "PATH"}; !slices.Equal(got, want) {
			t.Fatalf("environment %v, want exactly %v", got, want)
		}
	})
	t.Run("cancel kills the tree", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { time.Sleep(time.Second); cancel() }()
		start := time.Now()
		exit, _, err := run(ctx, "sleep 300 & sleep 300 & echo started >&3; wait")
		if time.Since(start) > time.Minute {
			t.Fatalf("Run returned %s after the cancel", time.Since(start))
		}
		if err == nil && exit != nil && exit.Code == 0 && exit.Signal == "" {
			t.Fatalf("a cancelled job exited cleanly: %+v", exit)
		}
	})
	// The host runtime limits memory through the worker's rlimit, not per
	// job: the promise is a container runtime's.
	memory := func(t *testing.T) {
		// 400 MB in a shell variable against a 256 MB limit.
		exit, recs, err := run(context.Background(), `x=$(head -c 400000000 /dev/zero | tr '\0' a); echo ${#x} >&3`)
		if rt.Capabilities().LimitsByRlimit {
			// The allocation fails: the shell cannot hold the string.
			if err != nil || exit == nil || strings.Contains(recs, "400000000") {
				t.Fatalf("exit %+v, %v, records %q; want the allocation refused", exit, err, recs)
			}
			return
		}
		if err != nil || exit == nil || !exit.OOMKilled {
			t.Fatalf("exit %+v, %v; want killed for its memory", exit, err)
		}
		if rt.Capabilities().PeakMemory && exit.PeakMemory < 100<<20 {
			t.Errorf("peak memory %d bytes after filling the limit", exit.PeakMemory)
		}
	}
	if rt.Isolated() {
		t.Run("memory limit kills and is named", memory)
	}
	t.Run("conditions it applies", func(t *testing.T) { conditions(t, js) })
	t.Run("End is safe twice", func(t *testing.T) {
		other, err := rt.Begin(context.Background(), sandbox.Scan{ID: randHex(4), Scratch: scratch, Jobs: 1, Limits: scan.Limits})
		if err != nil {
			t.Fatal(err)
		}
		if err := other.End(context.Background()); err != nil {
			t.Fatalf("End: %v", err)
		}
		if err := other.End(context.Background()); err != nil {
			t.Fatalf("a second End: %v", err)
		}
	})
	t.Run("Sweep removes a dead scan's", func(t *testing.T) {
		dead := randHex(4)
		if _, err := rt.Begin(context.Background(), sandbox.Scan{ID: dead, Scratch: scratch, Jobs: 1, Limits: scan.Limits}); err != nil {
			t.Fatal(err)
		}
		// Never ended: as a scan killed with SIGKILL leaves it.
		if _, err := rt.Sweep(context.Background(), func(id string) bool { return id != dead }); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if leftovers == nil {
			return
		}
		for _, l := range leftovers() {
			if strings.Contains(l, dead) {
				t.Errorf("left after Sweep: %s", l)
			}
		}
	})
}

// jobs is one session of the runtime under test, and its shell jobs.
type jobs struct {
	t    *testing.T
	rt   sandbox.Runtime
	scan sandbox.Scan
	sess sandbox.Session
	seq  int
	// input and marks are the next job's input and marks, if any.
	input, marks *os.File
}

// begin starts a session of rt for a test, ended when the test ends.
func begin(t *testing.T, rt sandbox.Runtime) *jobs {
	t.Helper()
	// The scan's scratch must be reachable by a container's users: a test's
	// own temporary directory is not.
	scratch, err := os.MkdirTemp("/tmp", "nds-contract-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	if err := os.Chmod(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	js := &jobs{t: t, rt: rt, scan: sandbox.Scan{ID: randHex(4), Scratch: scratch, Jobs: 2, Limits: sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64}}}
	js.sess, err = rt.Begin(context.Background(), js.scan)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	t.Cleanup(func() { _ = js.sess.End(context.Background()) })
	return js
}

// job is a shell job running script, with env beside PATH and HOME.
func (js *jobs) job(script string, env ...string) *sandbox.Job {
	t, rt, scan := js.t, js.rt, js.scan
	js.seq++
	jobScratch, err := os.MkdirTemp(scan.Scratch, "job-")
	if err != nil {
		t.Fatal(err)
	}
	job := &sandbox.Job{
		ID:   scanlock.Prefix + scan.ID + "-contract-" + randHex(2),
		Argv: []string{"/bin/sh", "-c", script},
		Env:  append([]string{"PATH=/usr/bin:/bin", "HOME=/home/probe"}, env...),
		Dir:  "/tmp", Input: js.input, Marks: js.marks, Stdout: io.Discard, Stderr: io.Discard, Scratch: jobScratch,
		// A pid floor puts the runtime's shim at pid 1 and the job below
		// it, as the engine's jobs are (pid 1 ignores signals it sent).
		Cond: sandbox.Conditions{Hostname: "contract", UID: sandbox.ProbeUIDs[0], GID: sandbox.ProbeUIDs[0], Umask: 0o022,
			Home: "/home/probe", PidFloor: 5},
		Limits: scan.Limits,
	}
	if rt.Isolated() {
		if !rt.Capabilities().InImage {
			for _, d := range sandbox.SystemDirs {
				job.Binds = append(job.Binds, sandbox.Bind{Source: d, Target: d})
			}
		}
	} else {
		job.Dir, job.Env[1] = sandbox.ScratchVar+"/cwd", "HOME="+sandbox.ScratchVar+"/home"
	}
	return job
}

// run runs job and returns what it wrote to its record channel.
func (js *jobs) run(ctx context.Context, job *sandbox.Job) (*sandbox.Exit, string, error) {
	t := js.t
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	job.Records = w
	var records bytes.Buffer
	read := make(chan struct{})
	go func() { defer close(read); _, _ = io.Copy(&records, r) }()
	exit, err := js.sess.Run(ctx, job)
	w.Close()
	// Every process of the job is gone once Run returns: none holds the
	// write end, so the channel ends at once.
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Errorf("the record channel is still open 10s after Run returned: a process of the job outlived it")
		r.Close()
		<-read
	}
	return exit, records.String(), err
}

// conditions checks, for each condition the runtime says it applies,
// that a job sees the value of a run that is not the base (every
// condition moved away from it), read from inside by the condition's own
// check (sandbox.Varied.Seen): a runtime that claims a condition it does
// not apply fails here.
func conditions(t *testing.T, js *jobs) {
	claimed := 0
	for _, c := range claims(js.rt) {
		claimed++
		t.Run(string(c), func(t *testing.T) {
			if why := js.misapplied(c); why != "" {
				t.Error(why)
			}
		})
	}
	if claimed == 0 && js.rt.Isolated() {
		t.Errorf("a container runtime applies no condition")
	}
}

// Misapplied runs, on a session of rt, the check of every condition rt
// says it applies, and says each it does not apply as it says.
func Misapplied(t *testing.T, rt sandbox.Runtime) []string {
	js := begin(t, rt)
	var out []string
	for _, c := range claims(rt) {
		if why := js.misapplied(c); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// claims are the runtime-applied conditions rt says it applies.
func claims(rt sandbox.Runtime) []sandbox.Condition {
	var out []sandbox.Condition
	for _, sup := range sandbox.Supported(rt) {
		if v, ok := sandbox.VariedCondition(sup.Condition); sup.Applied && ok && v.By == sandbox.ByRuntime {
			out = append(out, sup.Condition)
		}
	}
	return out
}

// misapplied runs c's check in a job of run 1 (planned as the engine
// plans it) and says what is wrong, or "".
func (js *jobs) misapplied(c sandbox.Condition) string {
	v, _ := sandbox.VariedCondition(c)
	if v.Seen == nil {
		return fmt.Sprintf("%s is applied by runtimes but has no check from inside (Varied.Seen)", c)
	}
	var rc sandbox.RunConditions
	p := sandbox.Planning{Run: 1, Draw: func() uint32 { return 1 }, Locales: []string{"C.UTF-8"}, NumCPU: runtime.NumCPU()}
	for _, w := range sandbox.Varieds {
		w.Plan(&rc, p)
	}
	if !js.rt.Isolated() {
		// The host runtime's folders are under the scan's scratch, as the
		// engine plans them.
		rc.Cwd, rc.Home = sandbox.ScratchVar+rc.Cwd, sandbox.ScratchVar+rc.Home
	}
	faketime := sandbox.Faketime(js.rt.Capabilities().InImage)
	if c == sandbox.Clock && faketime == "" {
		js.t.Logf("clock: libfaketime is not installed, so the engine shifts no clock here: not checked")
		return ""
	}
	job := js.job("{ " + v.Seen.Script + "; } >&3")
	job.Env = job.Env[:1] // HOME is the run's, where the run sets it
	for _, w := range sandbox.Varieds {
		if w.By == sandbox.ByRuntime {
			w.Apply(rc, job, sandbox.Applying{Faketime: faketime})
		}
	}
	exit, out, err := js.run(context.Background(), job)
	out = strings.TrimSpace(out)
	switch {
	case err != nil || exit == nil || exit.Code != 0:
		return fmt.Sprintf("%s: %q: exit %+v, %v", c, v.Seen.Script, exit, err)
	case !v.Seen.Want(rc, out):
		return fmt.Sprintf("%s: the runtime says it applies it, and a job of a run with %s saw %q", c, v.Show(rc), out)
	}
	return ""
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
