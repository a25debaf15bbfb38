package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/internal/cleanup"
	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// executor is what every phase runs its jobs through: the scan's
// resources (lock, scratch, runtime session), where the trees and the
// worker appear inside a container, the pool that runs (shard, run)
// tasks, and the counters those jobs leave. It knows nothing of verdicts.
type executor struct {
	opts     Options
	id       string // names every resource of this scan, after scanlock.Prefix
	scratch  string // host directory for the worker, plans and job scratch
	python   string // the interpreter, as an absolute path
	binds    []sandbox.Bind
	codeDir  string // where probes find the modules' bytecode (keepCode), or ""
	codeKept bool   // discovery kept some module's bytecode
	loc      locales
	locpath  string // host directory of generated locales, or ""
	faketime string // libfaketime, or ""
	masks    []sandbox.Mask
	session  sandbox.Session
	// running holds a token per interpreter at work, on a runtime that
	// starts interpreters ahead of their turn; nil elsewhere.
	running   chan struct{}
	processes atomic.Int64
	jobSeq    atomic.Int64
	// tasksDone and tasksPlanned count the phase's (shard, run) pairs for
	// Progress.
	tasksDone, tasksPlanned atomic.Int64
	phaseNow                atomic.Pointer[string]
	peakMu                  sync.Mutex
	workers                 []report.Worker // measurements, when asked for
	// pastLimit holds the rungs that ran past the call limit, so later
	// main runs do not wait for them again; notWaited counts those skips.
	pastLimit pastLimit
	notWaited atomic.Int64
	// overBudget counts the runs in which a function's calls took its
	// budget (Options.FunctionBudget).
	overBudget atomic.Int64
	children   atomic.Int64 // the worker children the plans asked for
	spentMu    sync.Mutex
	spent      Spent                    // where the interpreters' time went, since the scan began
	funcTime   map[string]*FunctionTime // the phase's calls that answered, per function
}

// timeCall adds one answered call's time to its function's in the phase.
func (x *executor) timeCall(p *probe, d time.Duration) {
	x.spentMu.Lock()
	defer x.spentMu.Unlock()
	if x.funcTime == nil {
		x.funcTime = map[string]*FunctionTime{}
	}
	t := x.funcTime[p.ID]
	if t == nil {
		t = &FunctionTime{ID: p.ID}
		x.funcTime[p.ID] = t
	}
	t.Calls++
	t.Time += d
}

// slowest takes the phase's five slowest functions, and starts counting
// the next phase's.
func (x *executor) slowest() []FunctionTime {
	x.spentMu.Lock()
	defer x.spentMu.Unlock()
	var out []FunctionTime
	for _, t := range x.funcTime {
		out = append(out, *t)
	}
	x.funcTime = nil
	slices.SortFunc(out, func(a, b FunctionTime) int {
		if c := cmp.Compare(b.Time, a.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), 5)]
}

// addSpent adds one interpreter's time to the scan's.
func (x *executor) addSpent(s Spent) {
	x.spentMu.Lock()
	x.spent.Add(s)
	x.spentMu.Unlock()
}

func (x *executor) spentSoFar() Spent {
	x.spentMu.Lock()
	defer x.spentMu.Unlock()
	return x.spent
}

// openExecutor does what every use of the sandbox starts with: take the
// scan's lock, sweep what killed scans left behind, find the real
// interpreter, make the scratch directory and let the runtime prepare. The
// returned function undoes it all, even after ctx is cancelled.
func openExecutor(ctx context.Context, opts Options, files []sourceFile) (_ *executor, _ func(), err error) {
	// A runtime whose image brings its own interpreter runs --python as
	// the image knows it; every other runtime runs the host's.
	inImage := opts.Runtime.Capabilities().InImage
	python := opts.Python
	if !inImage {
		p, err := exec.LookPath(opts.Python)
		if err != nil {
			return nil, nil, &usageError{fmt.Sprintf("python interpreter %q not found; pass --python with a path to python3", opts.Python)}
		}
		if python, err = filepath.Abs(p); err != nil {
			return nil, nil, err
		}
	}
	x := &executor{opts: opts, id: newScanID()}
	var undo cleanup.Stack
	defer undo.Clean() // unless released on success
	lock, err := scanlock.Acquire(x.id)
	if err != nil {
		return nil, nil, err
	}
	undo.Push(lock.Release)
	x.sweep(ctx)
	interp := &interpreter{Executable: python}
	if !inImage {
		if interp, err = probeInterpreter(ctx, python); err != nil {
			return nil, nil, err
		}
	}
	x.python = interp.Executable
	if !opts.Runtime.Isolated() {
		x.python = python
	}
	x.scratch, err = os.MkdirTemp(x.tempDir(), scanlock.Prefix+x.id+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("scratch directory: %w", err)
	}
	undo.Push(func() { os.RemoveAll(x.scratch) })
	if err := os.MkdirAll(filepath.Join(x.scratch, "shared"), 0o755); err != nil {
		return nil, nil, err
	}
	if err := WriteWorker(filepath.Join(x.scratch, "shared", workerPackage)); err != nil {
		return nil, nil, err
	}
	x.session, err = opts.Runtime.Begin(ctx, sandbox.Scan{ID: x.id, Scratch: x.scratch, Jobs: opts.Jobs, Limits: opts.Limits})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrRuntime, opts.Runtime.Name(), err)
	}
	undo.Push(func() {
		cleanup.Do(ctx, 30*time.Second, func(cctx context.Context) {
			if err := x.session.End(cctx); err != nil && opts.Notes != nil {
				fmt.Fprintf(opts.Notes, "nondet-sandbox: cleaning up the %s runtime: %v\n", opts.Runtime.Name(), err)
			}
		})
	})
	if opts.Runtime.Capabilities().StartsAhead {
		x.running = make(chan struct{}, opts.Jobs)
	}
	x.loc = ensureLocales(ctx, opts.CacheDir)
	x.locpath = x.loc.dir
	x.layout(files, interp, opts.Runtime.Isolated())
	if !inImage {
		worker := filepath.Join(x.scratch, "shared", workerPackage)
		compileWorker(ctx, x.python, worker, x.inside(worker), x.env())
	}
	x.faketime = sandbox.Faketime(inImage)
	return x, undo.Release(), nil
}

func newScanID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// layout decides where the scanned trees appear inside a container: each
// outermost import root is bound read-only under /scan. On the host
// runtime every path is itself.
func (x *executor) layout(files []sourceFile, interp *interpreter, isolated bool) {
	x.binds = []sandbox.Bind{{Source: filepath.Join(x.scratch, "shared"), Target: "/nondet"}}
	if x.locpath != "" {
		x.binds = append(x.binds, sandbox.Bind{Source: x.locpath, Target: "/nondet-locale"})
	}
	if !isolated {
		for i := range x.binds {
			x.binds[i].Target = x.binds[i].Source
		}
	}
	roots := map[string]bool{}
	for _, f := range files {
		roots[f.Root] = true
	}
	var list []string
	for r := range roots {
		list = append(list, r)
	}
	outer := outermost(list)
	home, _ := os.UserHomeDir()
	var trees []sandbox.Bind
	for i, r := range outer {
		target := r
		if isolated {
			target = fmt.Sprintf("%s/%d", scanMount, i)
			x.masks = append(x.masks, hiddenEntries(r, target)...)
			if x.opts.Notes != nil && (r == home || r == "/root" || filepath.Dir(r) == "/home") {
				fmt.Fprintf(x.opts.Notes, "nondet-sandbox: note: the import root %s is a home directory; it is mounted read-only, its hidden entries masked\n", r)
			}
		}
		trees = append(trees, sandbox.Bind{Source: r, Target: target})
	}
	x.binds = append(x.binds, trees...)
	if !isolated {
		// What the host's guard lets a probe read besides the system's
		// own: the interpreter where it lives and the worker's bytecode.
		for _, d := range interp.mounts(sandbox.SystemDirs) {
			x.binds = append(x.binds, sandbox.Bind{Source: d, Target: d})
		}
		f := x.hostFolders()
		x.binds = append(x.binds, sandbox.Bind{Source: f.workerPycache, Target: f.workerPycache})
	}
	if isolated {
		// The interpreter appears where it lives, so its own idea of its
		// prefix holds; the system directories are the policy's.
		for _, d := range interp.mounts(sandbox.SystemDirs) {
			x.binds = append(x.binds, sandbox.Bind{Source: d, Target: d})
		}
		x.binds = append(x.binds, linkBinds(trees, x.binds, sandbox.SystemDirs, reservedTop)...)
	}
}

// scanMount is where the scanned trees appear in a container: /scan/N.
const scanMount = "/scan"

// reservedTop is whether a top-level name of a container's root is the
// system's or the worker's (/nondet, and what the scan binds beside it
// later). Under /scan a link may arrive beside the trees, never in one.
func reservedTop(name string) bool {
	return slices.Contains(sandbox.RootNames, name) || strings.HasPrefix(name, "nondet")
}

// sweep removes what scans killed before they could clean up left behind,
// and says so.
func (x *executor) sweep(ctx context.Context) {
	removed, err := x.opts.Runtime.Sweep(ctx, scanlock.Alive)
	dirs, _ := filepath.Glob(filepath.Join(x.tempDir(), scanlock.Prefix+"*"))
	for _, d := range dirs {
		id := scanlock.ScanID(filepath.Base(d))
		if id == "" || id == x.id || scanlock.Alive(id) || !ownedByMe(d) {
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, "temporary directory "+d)
		}
	}
	for _, id := range scanlock.Dead() {
		scanlock.Forget(id)
	}
	if x.opts.Notes == nil {
		return
	}
	if err != nil {
		fmt.Fprintf(x.opts.Notes, "nondet-sandbox: sweeping leftovers of interrupted scans: %v\n", err)
	}
	if len(removed) > 0 {
		fmt.Fprintf(x.opts.Notes, "nondet-sandbox: removed what interrupted scans left behind: %s\n", strings.Join(removed, "; "))
	}
}

// ownedByMe: a scan removes only its own user's directories.
func ownedByMe(path string) bool {
	st, err := os.Lstat(path)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

// tempDir is where the scan's scratch directory goes. A container's user
// must be able to reach the root skeleton inside it, so for the container
// runtimes a temporary directory below a private one ($TMPDIR under a home
// directory, a test's own) gives way to /tmp.
func (x *executor) tempDir() string {
	dir := x.opts.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	if x.opts.Runtime.Isolated() && !reachable(dir) {
		return "/tmp"
	}
	return dir
}

// reachable says whether every directory from / to dir lets others pass.
func reachable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// hiddenEntries are the masks for the hidden entries at the top of a bound
// tree: where secrets live in a home directory, and nothing a scan needs
// (discovery skips hidden directories).
func hiddenEntries(source, target string) []sandbox.Mask {
	entries, _ := os.ReadDir(source)
	var out []sandbox.Mask
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			continue
		}
		// Never through a link: a mask follows its target, and a hidden
		// `.evil -> /usr` would mount over the container's /usr. A link
		// resolves inside the container, where only the binds exist.
		info, err := os.Lstat(filepath.Join(source, e.Name()))
		if err != nil || !(info.IsDir() || info.Mode().IsRegular()) {
			continue
		}
		out = append(out, sandbox.Mask{Target: target + "/" + e.Name(), Dir: info.IsDir()})
	}
	return out
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// outermost sorts dirs and keeps only those no other one contains.
func outermost(dirs []string) []string {
	sorted := append([]string(nil), dirs...)
	sort.Strings(sorted)
	var out []string
next:
	for _, d := range sorted {
		// Not only the last kept: "/a/b-c" sorts between "/a/b" and "/a/b/c".
		for _, o := range out {
			if within(d, o) {
				continue next
			}
		}
		out = append(out, d)
	}
	return out
}

// phase starts a phase of the scan: its progress counts from zero, and
// the returned function says what it cost.
func (x *executor) phase(name string) (end func()) {
	x.tasksDone.Store(0)
	x.tasksPlanned.Store(0)
	x.phaseNow.Store(&name)
	start, procs, waits, children, spent := time.Now(), x.processes.Load(), x.notWaited.Load(), x.children.Load(), x.spentSoFar()
	budgets := x.overBudget.Load()
	x.slowest() // what an earlier phase left
	if x.opts.Progress != nil {
		x.opts.Progress(Progress{Phase: name})
	}
	return func() {
		if x.opts.PhaseDone != nil {
			now := x.spentSoFar()
			d := Spent{Start: now.Start - spent.Start, Imports: now.Imports - spent.Imports, Calls: now.Calls - spent.Calls,
				Hangs: now.Hangs - spent.Hangs, Other: now.Other - spent.Other}
			x.opts.PhaseDone(PhaseCost{Phase: name, Wall: time.Since(start), Interpreters: int(x.processes.Load() - procs),
				NotWaited: int(x.notWaited.Load() - waits), OverBudget: int(x.overBudget.Load() - budgets), Children: int(x.children.Load() - children), Spent: d, Slowest: x.slowest()})
		}
	}
}

func (x *executor) phaseName() string {
	if p := x.phaseNow.Load(); p != nil {
		return *p
	}
	return "probing"
}

// outside maps a path inside the sandbox back to the host, for the
// scanned trees only: "" for anything else, or a path that climbs out.
func (x *executor) outside(path string) string {
	path = filepath.Clean(path)
	for _, b := range x.binds {
		if strings.HasPrefix(b.Target, scanMount+"/") && within(path, b.Target) {
			return b.Source + strings.TrimPrefix(path, b.Target)
		}
	}
	return ""
}

// hostPath is the host path of what a probe's sandbox shows at path:
// through any bind, or the same path (the host runtime's, or a file the
// sandbox does not bind, which the host may not have).
func (x *executor) hostPath(path string) string {
	for _, b := range x.binds {
		if within(path, b.Target) {
			return b.Source + strings.TrimPrefix(path, b.Target)
		}
	}
	return path
}

// inside is where a host path appears in a probe's sandbox.
func (x *executor) inside(host string) string {
	for _, b := range x.binds {
		if within(host, b.Source) {
			return b.Target + strings.TrimPrefix(host, b.Source)
		}
	}
	return host
}
