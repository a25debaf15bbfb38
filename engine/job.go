package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// maxRecord is the longest record line read; longer lines are dropped
// (a worker never writes one: answers are shortened to a digest).
const maxRecord = 1 << 20

// jobOutcome is how one interpreter ended.
type jobOutcome struct {
	exit     *sandbox.Exit
	stderr   *tailBuffer
	stdout   int64
	watchdog bool  // killed by the engine's per-call or per-job limit
	mark     int64 // the last call the worker marked as starting, or -1
}

func (o *jobOutcome) describe() string {
	switch {
	case o.watchdog:
		return "killed after its time limit"
	case o.exit == nil:
		return "did not start"
	case o.exit.OOMKilled:
		return "killed for exceeding its memory limit"
	case o.exit.Signal != "":
		return "killed by " + o.exit.Signal
	default:
		return "exit status " + strconv.Itoa(o.exit.Code)
	}
}

func (o *jobOutcome) stderrTail() string {
	t := strings.TrimSpace(o.stderr.String())
	if t == "" {
		return ""
	}
	lines := strings.Split(t, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return ": " + strings.Join(lines, " | ")
}

// watchdog kills a job whose current step runs past its limit. The record
// handler arms it when a call or import starts and disarms it when it ends.
type watchdog struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel context.CancelFunc
	fired  bool
}

func (w *watchdog) arm(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		// One timer for the job, moved on: arming happens per record.
		w.timer.Reset(d)
		return
	}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		w.fired = true
		w.mu.Unlock()
		w.cancel()
	})
}

// kill ends the job now.
func (w *watchdog) kill() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

func (w *watchdog) hasFired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// admission is one job's place among the interpreters that run at once,
// on a runtime that starts them ahead (sandbox.Capabilities.StartsAhead):
// the runtime asks for it when its interpreter is started and waits for
// its input; the job gives it back when the interpreter has ended.
type admission struct {
	slots    chan struct{} // one token per interpreter running
	done     chan struct{} // closed when the job has ended
	waiting  func()        // called before it waits for a place
	admitted func()        // called once the job holds its place

	mu         sync.Mutex
	held, over bool
}

func (a *admission) admit(ctx context.Context) error {
	if a.waiting != nil {
		a.waiting()
	}
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-a.done:
		return errJobEnded
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.over {
		<-a.slots // the job ended while it waited: its place is not taken
		return errJobEnded
	}
	a.held = true
	a.admitted()
	return nil
}

// end gives the place back, and refuses it to an admit still waiting.
func (a *admission) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.over {
		return
	}
	a.over = true
	close(a.done)
	if a.held {
		<-a.slots
	}
}

var errJobEnded = errors.New("the job ended before it had room to run")

// hostFolders are the scan's folders that its probes use on the host:
// the temporary folder (TMPDIR: the same in every run, $TMPDIR in
// answers), which the host's guard lets them write, and the worker's own
// bytecode cache, which it does not: a probe that could rewrite the
// worker's bytecode would speak for every later call. Neither lies inside
// the other, or inside a run's working directory or HOME.
type hostFolders struct {
	tmp, workerPycache string
}

func (x *executor) hostFolders() hostFolders {
	return hostFolders{
		tmp:           filepath.Join(x.scratch, "tmp"),
		workerPycache: filepath.Join(x.scratch, "pycache-worker"),
	}
}

// writable are the host folders a probe writes besides its own: the
// temporary folder, of which each probe has its own under the same path
// (private).
func (x *executor) writable() []string {
	if x.opts.Runtime.Isolated() {
		return nil
	}
	return []string{x.hostFolders().tmp}
}

func (x *executor) private() []string { return x.writable() }

// env is the environment of a probe besides its run's conditions (which
// Apply adds): an allow-list built here, never the caller's.
func (x *executor) env() []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		// No script folder or working directory on sys.path (Python 3.11's
		// -P). The worker's own folder, which Python puts first when it runs
		// a folder whatever -P says, the worker's __main__ takes off itself.
		"PYTHONSAFEPATH=1",
	}
	env = append(env, "PYTHONDONTWRITEBYTECODE=1")
	if !x.opts.Runtime.Isolated() {
		// On the host no probe writes bytecode another reads: the worker
		// starts on its own cache (compiled before any probe) and, before
		// anything scanned runs, leaves it (NONDET_PYCACHE_PREFIX empty,
		// which it takes out of the environment) for the bytecode beside
		// each source, which probes cannot write. The scanned modules'
		// comes from the scan's code folder, compiled once by discovery,
		// so a planted __pycache__/*.pyc beside a source the gate read is
		// never run.
		f := x.hostFolders()
		env = append(env, "PYTHONPYCACHEPREFIX="+f.workerPycache, "NONDET_PYCACHE_PREFIX=", "TMPDIR="+f.tmp)
	}
	if x.locpath != "" {
		env = append(env, "LOCPATH="+x.inside(x.locpath))
	}
	return env
}

// runJob starts one interpreter running the worker in the given mode on
// request and feeds every record line to handle. limit arms the watchdog
// at start; the handler may re-arm it per step through wd.
func (x *executor) runJob(ctx context.Context, name string, rc sandbox.RunConditions, mode string, request request, limit time.Duration,
	handle func(line []byte), wds ...*watchdog) (*jobOutcome, error) {
	jobCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wd := &watchdog{cancel: cancel}
	if len(wds) > 0 {
		wds[0].cancel = cancel
		wd = wds[0]
	}
	arm := func() {
		if limit > 0 {
			wd.arm(limit)
		}
	}
	arm()
	defer wd.disarm()
	var adm *admission
	if x.running != nil {
		// The interpreter may start now and wait for room to run: the
		// limit holds its start, not its wait, and starts again when it
		// has room.
		adm = &admission{slots: x.running, done: make(chan struct{}), waiting: wd.disarm, admitted: arm}
	}

	seq := x.jobSeq.Add(1)
	id := fmt.Sprintf("%s-%s-%d", x.id, name, seq)
	scratch := filepath.Join(x.scratch, "jobs", strconv.FormatInt(seq, 10))
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)

	input, err := requestFile(scratch, request, x.checkNetwork())
	if err != nil {
		return nil, err
	}
	defer input.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	marks, err := sandbox.NewMarks(scratch)
	if err != nil {
		return nil, err
	}
	defer marks.Close()
	out := &jobOutcome{stderr: &tailBuffer{max: 8 << 10}, mark: -1}
	stdout := &countingDiscard{}
	job := &sandbox.Job{
		ID:       scanlock.Prefix + id,
		Argv:     append(x.interpreterArgv(), mode),
		Env:      x.env(),
		Binds:    x.binds,
		Masks:    x.masks,
		Records:  w,
		Input:    input,
		Marks:    marks,
		Stdout:   stdout,
		Stderr:   out.stderr,
		Scratch:  scratch,
		Writable: x.writable(),
		Private:  x.private(),
		Limits:   x.opts.Limits,
	}
	if adm != nil {
		job.Admit = adm.admit
	}
	rc.Apply(job, sandbox.Applying{Faketime: x.faketime})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readRecords(r, handle)
	}()
	x.processes.Add(1)
	exit, err := x.session.Run(jobCtx, job)
	if adm != nil {
		adm.end()
	}
	w.Close()
	// The interpreter is gone; whatever it (or a leftover child holding the
	// pipe) wrote is drained, but a child the runtime could not kill must
	// not hold the scan.
	select {
	case <-readDone:
	case <-time.After(2 * time.Second):
		r.Close()
		<-readDone
	}
	out.mark = sandbox.LastMark(marks)
	out.stdout = stdout.n
	out.exit = exit
	out.watchdog = wd.hasFired()
	if err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, Unavailable(fmt.Errorf("the %s runtime could not run a probe: %v", x.opts.Runtime.Name(), err))
	}
	if exit != nil && x.opts.Measure {
		x.peakMu.Lock()
		x.workers = append(x.workers, report.Worker{Job: name, Run: rc.ID, PeakMemory: exit.PeakMemory, OOMKilled: exit.OOMKilled})
		x.peakMu.Unlock()
	}
	return out, nil
}

// checkNetwork says the worker must check, before anything else, that
// nothing but loopback is reachable (sandbox.Capabilities.CheckNetwork).
func (x *executor) checkNetwork() bool { return x.opts.Runtime.Capabilities().CheckNetwork }

// requestFile holds a worker's request in a file with no name: the
// worker reads it as fd 4, and nothing the scanned code can open leads to
// it (the plan holds the run's nonce).
func requestFile(dir string, req request, checkNetwork bool) (*os.File, error) {
	if checkNetwork {
		// Every mode checks, discovery first: a scan stops there.
		req.head().CheckNetwork = sandbox.NetworkExit
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "request-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readRecords splits the channel into lines, dropping any line longer than
// maxRecord rather than failing: the scanned code can write to the channel
// too, and garbage must cost it nothing but its own record.
func readRecords(r io.Reader, handle func([]byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && !skipping {
			line = append(line, chunk...)
			if len(line) > maxRecord {
				line, skipping = line[:0], true
			}
		}
		if err == nil {
			if !skipping {
				handle(bytes.TrimRight(line, "\n"))
			}
			line, skipping = line[:0], false
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// countingDiscard swallows the scanned code's stdout, which it owns.
type countingDiscard struct {
	mu sync.Mutex
	n  int64
}

func (c *countingDiscard) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += int64(len(p))
	c.mu.Unlock()
	return len(p), nil
}

// interpreterArgv starts the worker, its package's folder (engine/worker.go):
// without the user's site directory; in a container without writing
// bytecode (the tree is read-only anyway), on the host writing it to the
// scan's own cache (PYTHONPYCACHEPREFIX). Outside an image, the worker's
// own modules load from the bytecode compileWorker wrote for the scan.
func (x *executor) interpreterArgv() []string {
	argv := []string{x.python}
	if x.opts.Runtime.Isolated() {
		argv = append(argv, "-B")
	}
	return append(argv, "-s", x.inside(filepath.Join(x.scratch, "shared", workerPackage)))
}
