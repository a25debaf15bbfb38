package report

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/nondet-sandbox/nondet-sandbox/gate"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// In-process breakers, as the worker names them.
const (
	BreakerRepeat    = "repeat"     // the same input twice
	BreakerDictOrder = "dict-order" // the input with every dict in reversed key order
	BreakerOrderFree = "order-free" // an argument declared order-free, reversed
)

// Verdicts. Deterministic means no run disagreed, never a guarantee.
const (
	VerdictNondeterministic = "nondeterministic"
	VerdictDeterministic    = "deterministic"
	VerdictLook             = "look"
	VerdictNotProbed        = "not-probed"
)

// Report is the whole result of a scan. Its JSON field names are stable:
// CI systems and other tools parse them. It holds no timestamps or
// temporary paths, so two scans with the same seed are byte-identical.
type Report struct {
	Tool    Tool   `json:"tool"`
	Runtime string `json:"runtime"`
	Python  string `json:"python"`
	Seed    uint64 `json:"seed"`
	// Targets are the command line's paths as given, so `replay` can find
	// the scanned files again from the same folder.
	Targets        []string `json:"targets"`
	CallerHashSeed string   `json:"caller_pythonhashseed,omitempty"`
	// Packages are the installed distributions scanned (--package,
	// --all-packages), each with its own census.
	Packages []Package `json:"packages,omitempty"`
	// Excluded are the .py files under directory targets that include
	// and exclude left out (relative to their target): a config that came
	// with the tree may have set them, so the report says what they hid.
	Excluded []string `json:"excluded,omitempty"`
	// UnusedSuppressions are the ignore comments (file:line) that
	// suppressed nothing: on no function's lines, or on functions that are
	// not findings. Said so a stale comment does not hide a future finding.
	UnusedSuppressions []string `json:"unused_suppressions,omitempty"`
	// OCIRuntime is the OCI runtime binary's name when Runtime is oci
	// (runc, crun, runsc): gVisor's kernel answers some calls differently.
	OCIRuntime string                  `json:"oci_runtime,omitempty"`
	Runs       []sandbox.RunConditions `json:"runs"`
	Skipped    []sandbox.Support       `json:"conditions_skipped"`
	Modules    []Module                `json:"modules"`
	Functions  []*Function             `json:"functions"`
	Census     Census                  `json:"census"`
	Processes  int                     `json:"processes"`
	Calls      int                     `json:"calls"`
	// Cache is set when the scan used the verdict cache.
	Cache *CacheUse `json:"cache,omitempty"`
	// Part is set on the report of one part of a split scan (--shard
	// K/N); Merge joins the parts into the report of the whole.
	Part *Part `json:"part,omitempty"`
	// Baseline is set when the findings were compared with a baseline
	// (--baseline): each is then in it or new.
	Baseline bool `json:"baseline,omitempty"`
	// Partial is set on the report of a scan that was interrupted: what
	// ran is judged, what did not run in every run is not probed, and
	// findings may lack confirmation and causes.
	Partial bool `json:"partial,omitempty"`
	// Measurements differ from scan to scan by nature, so they are only
	// written when asked for (--measure); without them two scans with one
	// seed are byte-identical.
	Measurements *Measurements `json:"measurements,omitempty"`
}

// Part says which part of a split scan a report holds: the Index-th of
// Of, counted from 1.
type Part struct {
	Index int `json:"index"`
	Of    int `json:"of"`
}

// Package is one installed distribution a scan audited: ids of its
// functions start with one of its top-level modules.
type Package struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Modules []string `json:"modules"`
	Census  Census   `json:"census"`
}

// owns says whether a function id belongs to the package.
func (p *Package) owns(id string) bool {
	file, _ := SplitID(id)
	top, _, _ := strings.Cut(file, "/")
	return slices.Contains(p.Modules, top)
}

// Measurements are what the sandbox measured of each worker.
type Measurements struct {
	Workers []Worker `json:"workers"`
}

// Worker is one interpreter process: discovery, or one attempt of one
// (shard, run).
type Worker struct {
	Job        string `json:"job"` // "discover", or "s<shard>-r<run>"
	Run        int    `json:"run"` // -1 for discovery
	PeakMemory int64  `json:"peak_memory_bytes"`
	OOMKilled  bool   `json:"oom_killed,omitempty"`
}

// Tool names the program that wrote the report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Module is one source file and whether it could be parsed and imported.
type Module struct {
	Path   string `json:"path"`
	Status string `json:"status"` // ok, unparseable, unreadable, too-large, import-failed
	// Location is the file's path from the repository root (or, outside a
	// repository, the working directory) the scan ran in: where code
	// scanning places a finding, whatever form the target took.
	Location string `json:"location,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Function is one module-level function and its verdict.
type Function struct {
	ID   string `json:"id"`
	Line int    `json:"line"`
	// Kind is set for a class's method (FILE.py::Class.name): method,
	// classmethod, staticmethod or property.
	Kind string `json:"kind,omitempty"`
	// TestCase: the method's class is a test case, and so not probed.
	TestCase bool     `json:"test_case,omitempty"`
	Verdict  string   `json:"verdict"`
	Reason   string   `json:"reason,omitempty"`
	Causes   []string `json:"causes"`
	// CauseNote says in words why the causes are what they are, when
	// that is not one named condition (unattributed).
	CauseNote string   `json:"cause_note,omitempty"`
	Witness   *Witness `json:"witness,omitempty"`
	// OrderSensitive is set when the function answered an input and the
	// same input with every dict in reversed key order differently: equal
	// but different inputs, two answers. A fact about its contract, not
	// nondeterminism: it never makes the verdict, the census' findings or
	// the exit status.
	OrderSensitive *Witness `json:"order_sensitive,omitempty"`
	// MovedBy is set when the function disagreed across runs only after
	// other functions ran in the same interpreter: called alone it gave
	// one answer. It names the function whose calls moved it.
	MovedBy *MovedBy `json:"moved_by,omitempty"`
	// Moves lists the functions whose answers this one's calls moved
	// (the other side of MovedBy).
	Moves []string   `json:"moves,omitempty"`
	Rungs RungCounts `json:"rungs"`
	// Stopped says, for a function no rung of which answered, which
	// exceptions stopped its rungs and where they were raised.
	Stopped   []Stop  `json:"stopped,omitempty"`
	Contained []Event `json:"contained,omitempty"`
	// Suppressed is set when the def line says "# nondet: ignore" (all
	// causes) or "# nondet: ignore[cause, ...]": the verdict stays; a
	// finding whose causes are all ignored leaves the exit status and the
	// text findings.
	Suppressed *Suppression `json:"suppressed,omitempty"`
	// Ignored are the causes the command line or the config ignores for
	// this function's file (--ignore, --select, --per-file-ignores): a
	// finding whose every cause is ignored, here or by a comment, leaves
	// the exit status as a suppressed one does.
	Ignored []string `json:"ignored,omitempty"`
	// InBaseline is set on a finding that the --baseline report already
	// had (same id, no new cause): reported, but not failing.
	InBaseline bool `json:"in_baseline,omitempty"`
	// Smells are suspicions from the function's own body, never a verdict.
	Smells []gate.Smell `json:"smells,omitempty"`
	// Runs is how many fresh interpreters called this function.
	Runs int `json:"runs"`
	// Cached is set when the verdict was reused from the verdict cache:
	// nothing it depends on changed since the scan that made it.
	Cached *Cached `json:"cached,omitempty"`
}

// Cached names the earlier scan a reused verdict comes from. Its witness
// and moved_by name that scan's runs: Runs lists them when they are not
// this report's (another seed).
type Cached struct {
	Seed uint64                  `json:"seed"`
	Date string                  `json:"date"` // the day, UTC, as 2006-01-02
	Runs []sandbox.RunConditions `json:"runs,omitempty"`
}

// CacheUse counts the modules whose verdicts the scan reused from the
// verdict cache, of those it had functions to probe in.
type CacheUse struct {
	Modules int `json:"modules"`
	Reused  int `json:"reused"`
}

// Suppression is an ignore comment on a function's def line.
type Suppression struct {
	Line   int      `json:"line"`
	Causes []string `json:"causes,omitempty"` // empty: every cause
}

// Covers says whether the comment ignores every one of causes.
func (s *Suppression) Covers(causes []string) bool {
	if s == nil {
		return false
	}
	if len(s.Causes) == 0 {
		return true
	}
	for _, c := range causes {
		if !slices.Contains(s.Causes, c) {
			return false
		}
	}
	return len(causes) > 0
}

// Witness is the input and two answers that disagreed.
type Witness struct {
	Rung int      `json:"rung"`
	Args []string `json:"args"`
	// Receiver is the instance a method was called on, as its
	// constructor's call: Class(args). Every call built a fresh one.
	Receiver  string   `json:"receiver,omitempty"`
	Answers   []Answer `json:"answers"`
	OrderOnly bool     `json:"order_only"`
	// Breaker is set when one process gave both answers: "repeat" (the
	// same input twice) or "dict-order" (the second answer is to the input
	// with every dict in reversed key order).
	Breaker string `json:"breaker,omitempty"`
	// DivergedAt is where the witness's two runs parted: the first line
	// at which the call, traced in each run's conditions, took another
	// line or held another value. An explanation, never the verdict.
	DivergedAt *Divergence `json:"diverged_at,omitempty"`
	// NoDivergence says why there is no DivergedAt, when it was sought.
	NoDivergence string `json:"no_divergence,omitempty"`
}

// Divergence is the first event at which two traced runs of one call
// parted.
type Divergence struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Function string `json:"function"`
	// Kind: "control" (after this line the runs went on at other lines),
	// "data" (this line gave Local two values) or "return" (the frame
	// returned two values from this line).
	Kind  string `json:"kind"`
	Local string `json:"local,omitempty"`
	// Values are the two runs' (witness order): the local's or return's
	// canonical values, or for control where each went next ("line 12").
	Values []string `json:"values"`
	Source string   `json:"source,omitempty"`
	// Library is, for a divergence in the scanned tree, the library line
	// that handed it the differing value (the last divergence outside
	// the tree before it); Under, for a divergence found only outside the
	// tree, the scanned line it was reached from.
	Library *Divergence `json:"library,omitempty"`
	Under   *Divergence `json:"under,omitempty"`
	// Outside says the line is outside the scanned tree: a library's.
	Outside bool `json:"outside,omitempty"`
	// Excerpt is the scanned source around the line, for the page that
	// shows it.
	Excerpt *Excerpt `json:"excerpt,omitempty"`
}

// Excerpt is lines of a source file from First on.
type Excerpt struct {
	First int      `json:"first"`
	Lines []string `json:"lines"`
}

// TreeLine is where in the scanned tree a witness's runs parted: the
// divergence, or for one found only in a library, the scanned line that
// called it; nil when there is none. Annotations go there.
func (w *Witness) TreeLine() *Divergence {
	switch d := w.DivergedAt; {
	case d == nil:
		return nil
	case !d.Outside:
		return d
	default:
		return d.Under
	}
}

// String is a divergence as one line: "shapes.py:22  for name in
// set(names):  name "gamma" then "alpha"".
func (d *Divergence) String() string {
	where := fmt.Sprintf("%s:%d", d.File, d.Line)
	if d.Source != "" {
		where += "  " + d.Source
	}
	what := ""
	switch d.Kind {
	case "control":
		what = "then " + d.Values[0] + " in one run, " + d.Values[1] + " in the other"
	case "return":
		what = "returned " + d.Values[0] + " then " + d.Values[1]
	default:
		what = d.Local + " " + d.Values[0] + " then " + d.Values[1]
	}
	s := where + "  " + what
	if d.Under != nil {
		s += fmt.Sprintf(" (under %s:%d)", d.Under.File, d.Under.Line)
	}
	if d.Library != nil {
		s += fmt.Sprintf(" (from %s:%d)", d.Library.File, d.Library.Line)
	}
	return s
}

// Input is the witness's input as people read it: (args), and for a
// method the instance it was called on.
func (w *Witness) Input() string {
	in := "(" + strings.Join(w.Args, ", ") + ")"
	if w.Receiver != "" {
		in += " on a fresh " + w.Receiver
	}
	return in
}

// MovedBy is what another function left behind, and what it did.
type MovedBy struct {
	// Culprit is the function whose calls, run before this one in Run,
	// moved its answer; "" when bisection could not name one.
	Culprit string `json:"culprit"`
	Run     int    `json:"run"`
	Rung    int    `json:"rung"`
	// Alone is the answer called alone (the same under both runs'
	// conditions); Moved is what it answered in Run after the others.
	Alone  string `json:"alone"`
	Moved  string `json:"moved"`
	Detail string `json:"detail,omitempty"`
	// DivergedAt is where its call alone and its call after the
	// culprit's parted (Values: alone, then moved), NoDivergence why
	// there is none, as for a witness.
	DivergedAt   *Divergence `json:"diverged_at,omitempty"`
	NoDivergence string      `json:"no_divergence,omitempty"`
}

// Answer is one run's canonical answer.
type Answer struct {
	Run   int    `json:"run"`
	Value string `json:"value"`
}

// RungCounts says how much of the ladder landed.
type RungCounts struct {
	Total    int `json:"total"`
	Answered int `json:"answered"`
	Raised   int `json:"raised"`
	Excluded int `json:"excluded"`
	TimedOut int `json:"timed_out"`
	Crashed  int `json:"crashed"`
	// The rungs never called: in every run, the function's budget was
	// spent first (Budget), an earlier call of it hung or crashed
	// (Skipped), or the run never got to it (Uncalled).
	Budget   int `json:"over_budget,omitempty"`
	Skipped  int `json:"skipped,omitempty"`
	Uncalled int `json:"uncalled,omitempty"`
	// Reached counts the rungs whose call entered the function's own
	// frame (it returned, or raised from inside its body) in some run; a
	// TypeError while binding the arguments did not. Unmeasured calls (a
	// callable with no code object) count in Unmeasured instead.
	Reached    int `json:"reached"`
	Unmeasured int `json:"unmeasured,omitempty"`
}

// Stop is an exception type that stopped rungs of a function, and where.
type Stop struct {
	Type string `json:"type"`
	// Where is "call" (binding the arguments: the body never ran),
	// "wrapper" (a wrapper around it raised before the body ran),
	// "body", "constructor" (a method's receiver never built), "sandbox"
	// (what the sandbox refuses: Sandbox names it) or "" (a callable
	// with no code object to tell by).
	Where   string `json:"where"`
	Sandbox string `json:"sandbox,omitempty"`
	Rungs   int    `json:"rungs"`
}

// Census counts each verdict and names every look.
type Census struct {
	Nondeterministic int      `json:"nondeterministic"`
	Deterministic    int      `json:"deterministic"`
	Look             int      `json:"look"`
	NotProbed        int      `json:"not_probed"`
	Looks            []string `json:"looks"`
	// OrderSensitive counts functions whose answer depends on a dict
	// argument's key order; MovedByOthers those moved only by what another
	// function left. Neither is a finding.
	OrderSensitive int `json:"order_sensitive"`
	MovedByOthers  int `json:"moved_by_others"`
	// Probed counts the functions that were called (every verdict but not
	// probed), Reached those of them whose body some rung entered: how much
	// of the code a clean report speaks for.
	Probed  int `json:"probed"`
	Reached int `json:"reached"`
	// Methods counts the methods among the functions listed (every
	// verdict), MethodsProbed and MethodsReached those among Probed and
	// Reached: a class's code is reached apart from the module's.
	Methods        int `json:"methods"`
	MethodsProbed  int `json:"methods_probed"`
	MethodsReached int `json:"methods_reached"`
	// Suppressed counts findings ignored in the source, InBaseline those
	// the baseline already had: both are among Nondeterministic.
	Suppressed int `json:"suppressed,omitempty"`
	InBaseline int `json:"in_baseline,omitempty"`
	// TestCases counts the methods of test cases, listed and not probed:
	// their runner, not a caller, sets them up.
	TestCases int `json:"test_cases,omitempty"`
}

// Event is something a call did that the engine had to contain.
type Event struct {
	Kind   string `json:"kind"` // timeout, crash, thread, tampered, budget, import-timeout, import-crash
	Run    int    `json:"run"`
	Rung   int    `json:"rung"`
	Detail string `json:"detail,omitempty"`
}

// AddFunction adds a function to the report, with no verdict yet.
func (r *Report) AddFunction(id string, line int) *Function {
	f := &Function{ID: id, Line: line, Causes: []string{}}
	r.Functions = append(r.Functions, f)
	return f
}

// Finish orders functions and counts the census, of the whole scan and
// of each package.
func (r *Report) Finish() {
	sort.SliceStable(r.Functions, func(i, j int) bool { return r.Functions[i].ID < r.Functions[j].ID })
	sort.SliceStable(r.Modules, func(i, j int) bool { return r.Modules[i].Path < r.Modules[j].Path })
	r.Census = Census{Looks: []string{}}
	for i := range r.Packages {
		r.Packages[i].Census = Census{Looks: []string{}}
	}
	for _, f := range r.Functions {
		r.Census.count(f)
		for i := range r.Packages {
			if r.Packages[i].owns(f.ID) {
				r.Packages[i].Census.count(f)
			}
		}
	}
}

func (c *Census) count(f *Function) {
	if f.OrderSensitive != nil {
		c.OrderSensitive++
	}
	if f.MovedBy != nil {
		c.MovedByOthers++
	}
	method := f.Kind != ""
	if method {
		c.Methods++
	}
	if f.TestCase && f.Verdict == VerdictNotProbed {
		c.TestCases++
	}
	if f.Verdict != VerdictNotProbed && f.Verdict != "" {
		c.Probed++
		if method {
			c.MethodsProbed++
		}
		if f.Rungs.Reached > 0 {
			c.Reached++
			if method {
				c.MethodsReached++
			}
		}
	}
	switch f.Verdict {
	case VerdictNondeterministic:
		c.Nondeterministic++
		if f.IsSuppressed() {
			c.Suppressed++
		} else if f.InBaseline {
			c.InBaseline++
		}
	case VerdictDeterministic:
		c.Deterministic++
	case VerdictLook:
		c.Look++
		c.Looks = append(c.Looks, f.ID)
	default:
		c.NotProbed++
	}
}

// Findings are the nondeterministic functions, but those ignored in the
// source.
func (r *Report) Findings() []*Function {
	var out []*Function
	for _, f := range r.Functions {
		if f.Verdict == VerdictNondeterministic && !f.IsSuppressed() {
			out = append(out, f)
		}
	}
	byPlace(out)
	return out
}

// byPlace sorts functions as linters list what they find: by file, then
// line, then id.
func byPlace(fs []*Function) {
	slices.SortStableFunc(fs, func(a, b *Function) int {
		fa, fb := a.ID, b.ID
		if i := strings.LastIndex(fa, "::"); i >= 0 {
			fa = fa[:i]
		}
		if i := strings.LastIndex(fb, "::"); i >= 0 {
			fb = fb[:i]
		}
		return cmp.Or(cmp.Compare(fa, fb), cmp.Compare(a.Line, b.Line), cmp.Compare(a.ID, b.ID))
	})
}

// Failing are the findings that fail a scan: neither ignored in the
// source nor in the baseline.
func (r *Report) Failing() []*Function {
	var out []*Function
	for _, f := range r.Findings() {
		if !f.InBaseline {
			out = append(out, f)
		}
	}
	return out
}

// IsSuppressed says whether an ignore comment, or the causes the
// configuration ignores, cover every one of this finding's causes.
func (f *Function) IsSuppressed() bool {
	if f.Verdict != VerdictNondeterministic {
		return false
	}
	if f.Suppressed != nil && len(f.Suppressed.Causes) == 0 {
		return true
	}
	if len(f.Causes) == 0 {
		return false
	}
	for _, c := range f.Causes {
		if !slices.Contains(f.Ignored, c) && !(f.Suppressed != nil && slices.Contains(f.Suppressed.Causes, c)) {
			return false
		}
	}
	return true
}

// IgnoreRule ignores causes in the files a glob matches (every file when
// Glob is empty), as the command line and the config say.
type IgnoreRule struct {
	Glob   string
	Causes []string
}

// ApplyIgnores records on every finding the causes the rules ignore for
// its file: a glob matches the file's path from the repository root (its
// module's location, else the id's file part) as doublestar does, or its
// name at any depth when the glob has no slash.
func (r *Report) ApplyIgnores(rules []IgnoreRule) {
	located := map[string]string{}
	for _, m := range r.Modules {
		located[m.Path] = m.Location
	}
	for _, f := range r.Functions {
		if f.Verdict != VerdictNondeterministic {
			continue
		}
		file, _ := SplitID(f.ID)
		if loc := located[file]; loc != "" {
			file = loc
		}
		for _, rule := range rules {
			if rule.Glob != "" && !globMatch(rule.Glob, file) {
				continue
			}
			for _, c := range rule.Causes {
				if !slices.Contains(f.Ignored, c) {
					f.Ignored = append(f.Ignored, c)
				}
			}
		}
		slices.Sort(f.Ignored)
	}
	r.Finish()
}

func globMatch(glob, file string) bool {
	if ok, _ := doublestar.Match(glob, file); ok {
		return true
	}
	if !strings.Contains(glob, "/") {
		ok, _ := doublestar.Match(glob, path.Base(file))
		return ok
	}
	return false
}

// ApplyBaseline marks the findings that base already had: the same id,
// and no cause base did not name. It returns how many it marked.
func (r *Report) ApplyBaseline(base *Report) int {
	known := map[string][]string{}
	for _, f := range base.Functions {
		if f != nil && f.Verdict == VerdictNondeterministic {
			known[f.ID] = f.Causes
		}
	}
	n := 0
	r.Baseline = true
	for _, f := range r.Functions {
		causes, ok := known[f.ID]
		if f.Verdict != VerdictNondeterministic || !ok {
			continue
		}
		f.InBaseline = true
		for _, c := range f.Causes {
			if !slices.Contains(causes, c) {
				f.InBaseline = false
			}
		}
		if f.InBaseline {
			n++
		}
	}
	r.Finish()
	return n
}

// Replayable is what replay re-runs: the witness of a finding, or the two
// answers of an order-sensitive function; nil when there is neither.
func (f *Function) Replayable() *Witness {
	if f.Witness != nil {
		return f.Witness
	}
	return f.OrderSensitive
}

// Function returns the function with this id, or nil.
func (r *Report) Function(id string) *Function {
	for _, f := range r.Functions {
		if f.ID == id || strings.HasSuffix(f.ID, "/"+id) {
			return f
		}
	}
	return nil
}

// AddMoves names a function this one's calls moved.
func (f *Function) AddMoves(id string) {
	if !slices.Contains(f.Moves, id) {
		f.Moves = append(f.Moves, id)
		slices.Sort(f.Moves)
	}
}

// SplitID splits a function id, FILE::function, into the file and the
// function's name. A file's name may hold "::" (a::b.py) and a function's
// name never does (a method, were there ones, would be Class.method), so an
// id splits at its last "::": a::b.py::f is the function f of a::b.py. An
// id without "::" is all file. Every reader of ids splits them here.
func SplitID(id string) (file, name string) {
	i := strings.LastIndex(id, "::")
	if i < 0 {
		return id, ""
	}
	return id[:i], id[i+2:]
}

// ErrMalformed says a report breaks a rule that every report a scan writes
// keeps, and that the renderers, Merge and replay rely on.
var ErrMalformed = errors.New("malformed report")

// Validate checks a report read from elsewhere (a part to merge, a
// baseline, a CI artifact) for what the renderers and replay take for
// granted: each run sits at the index its id names; every function is
// there and its id is FILE::function; a witness has two answers, from
// runs the report describes, at a rung that is not negative; a part is
// counted from 1 to its total. A finding with no witness passes: every
// renderer shows it without one. Validate does not bound a report's size:
// whoever reads the JSON does.
func (r *Report) Validate() error {
	for i, rc := range r.Runs {
		if rc.ID != i {
			return fmt.Errorf("%w: run %d has id %d (runs are listed by id, from 0)", ErrMalformed, i, rc.ID)
		}
	}
	if p := r.Part; p != nil && (p.Of < 1 || p.Index < 1 || p.Index > p.Of) {
		return fmt.Errorf("%w: it says it is part %d of %d (a part is counted from 1 to the total)", ErrMalformed, p.Index, p.Of)
	}
	return checkFunctions(r.Functions, len(r.Runs))
}

// checkFunctions checks functions against a report of runs runs.
func checkFunctions(fs []*Function, runs int) error {
	for i, f := range fs {
		if f == nil {
			return fmt.Errorf("%w: function %d is null", ErrMalformed, i+1)
		}
		if file, name := SplitID(f.ID); file == "" || name == "" {
			return fmt.Errorf("%w: function %d: id %q is not FILE::function", ErrMalformed, i+1, f.ID)
		}
		runs := runs
		if f.Cached != nil && len(f.Cached.Runs) > 0 {
			runs = len(f.Cached.Runs)
			for k, rc := range f.Cached.Runs {
				if rc.ID != k {
					return fmt.Errorf("%w: function %q: its cached run %d has id %d", ErrMalformed, f.ID, k, rc.ID)
				}
			}
		}
		if m := f.MovedBy; m != nil && (m.Run < 0 || m.Run >= runs) {
			return fmt.Errorf("%w: function %q: moved_by names run %d, and the report describes %d runs", ErrMalformed, f.ID, m.Run, runs)
		}
		for _, w := range []struct {
			what string
			w    *Witness
		}{{"witness", f.Witness}, {"order-sensitive witness", f.OrderSensitive}} {
			if w.w == nil {
				continue
			}
			if len(w.w.Answers) != 2 {
				return fmt.Errorf("%w: function %q: its %s has %d answers, not 2", ErrMalformed, f.ID, w.what, len(w.w.Answers))
			}
			if w.w.Rung < 0 {
				return fmt.Errorf("%w: function %q: its %s is at rung %d", ErrMalformed, f.ID, w.what, w.w.Rung)
			}
			for _, a := range w.w.Answers {
				if a.Run < 0 || a.Run >= runs {
					return fmt.Errorf("%w: function %q: its %s names run %d, and the report describes %d runs", ErrMalformed, f.ID, w.what, a.Run, runs)
				}
			}
		}
	}
	return nil
}
