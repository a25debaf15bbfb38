package engine

import (
	"encoding/json"
	"time"
)

// The engine-worker protocol: the worker (engine/worker, whose package
// docstring has the same table) writes one JSON object per line on the
// record channel, each tagged with the run's nonce.
//
//	kind    mode      fields                         meaning
//	ladder  discover  rungs                          every ladder's rung displays, by key
//	module  discover  rel status error functions …   one parsed module; code its bytecode
//	                  code                           (a hash-checked pyc, base64) when asked
//	posture posture   cap_* seccomp uid …            what a probe sees of its sandbox
//	is      probe     m                              importing plan module m starts
//	id      probe     m us                           module m imported, in us microseconds
//	if      probe     m err us                       module m's import raised err
//	r       probe     i v o x th b v2 rb sx rv us    call i's answer: v canonical, o with sets
//	                                                 sorted, x why it has no canonical form,
//	                                                 th threads left running, b the breaker that
//	                                                 fired and v2 its second answer, rb 1 when
//	                                                 the call entered the function's frame, 0
//	                                                 when not (absent: cannot tell), sx the
//	                                                 trace a sandbox may have left on what it
//	                                                 raised (erofs, net, enoent:PATH); a method
//	                                                 whose receiver's constructor raised answers
//	                                                 v "E:<Type> (constructor)"; us the
//	                                                 microseconds it took, breakers included;
//	                                                 rv a digest of the receiver when another
//	                                                 callee built it; tr, for a call the plan
//	                                                 asked to trace, each traced call's line
//	                                                 events (tracing.py): one, or a repeat's two
//	nc      probe     i why                          call i's function is not callable
//	ob      probe     i us below                     call i is not made: its function has spent
//	                                                 us microseconds in calls this run, its
//	                                                 budget, and is now called only on rungs
//	                                                 below below (the calls it had made then)
//	gone    probe     m i why t to us                module m's process died (t: was ended for
//	                                                 writing what it may not; to: ran past its
//	                                                 limit, or was blocked using no CPU past the
//	                                                 idle limit, us after how long) in call i, in
//	                                                 its import, or (no i) between calls: the
//	                                                 rest of the module's calls are not made
//	fl      probe     m f                            the files of the modules module m's process
//	                                                 had loaded when its stretch ended: the
//	                                                 verdict cache's key
//	done    all       -                              the worker finished the plan
//
// A call's start is not a record: the worker's parent reads it from memory
// it shares with the module's process, so it names the call a process dies
// or hangs in; results come in batches, each in turn.
type recordKind string

const (
	kindLadder       recordKind = "ladder"
	kindModule       recordKind = "module"
	kindPosture      recordKind = "posture"
	kindImportStart  recordKind = "is"
	kindImported     recordKind = "id"
	kindImportFailed recordKind = "if"
	kindResult       recordKind = "r"
	kindNotCallable  recordKind = "nc"
	kindOverBudget   recordKind = "ob"
	kindGone         recordKind = "gone"
	kindLoaded       recordKind = "fl"
	kindDone         recordKind = "done"
)

// envelope is what every mode's request on fd 4 starts with: the nonce
// its records carry, and the network check every mode makes first where
// the runtime asks for it (the exit status a worker that can reach a
// network ends with: sandbox.NetworkExit; 0, no check). Each mode's
// request embeds it, so the request is one typed value.
type envelope struct {
	Nonce        string `json:"nonce"`
	CheckNetwork int    `json:"check_network,omitempty"`
}

func (e *envelope) head() *envelope { return e }

// request is a mode's request: it embeds the envelope.
type request interface{ head() *envelope }

// record is one line of the probe mode's channel.
type record struct {
	Nonce     string       `json:"n"`
	Kind      recordKind   `json:"k"`
	Call      *int         `json:"i"`
	Module    *int         `json:"m"`
	Value     string       `json:"v"`
	OrderFree string       `json:"o"`
	Excluded  string       `json:"x"`
	Threads   int          `json:"th"`
	Err       string       `json:"err"`
	Why       string       `json:"why"`
	Breaker   string       `json:"b"`
	Value2    string       `json:"v2"`
	Reached   *int         `json:"rb"`
	Sandbox   string       `json:"sx"`
	Receiver  string       `json:"rv"`
	Traces    []*callTrace `json:"tr"`
	Tampered  bool         `json:"t"`
	TimedOut  bool         `json:"to"`
	Micros    int64        `json:"us"`
	Below     int          `json:"below"`
	Files     []string     `json:"f"`

	took time.Duration // since the record before it (charge)
}

// shardSink is what the record reader's verdicts on records do: a fake in
// the reader's tests, the scan's results in runShard.
type shardSink interface {
	answered(call int, rec record)       // a result for the call in progress
	importFailed(module int, err string) // a plan module's import raised
	notCallable(call int, why string)    // the call's function is not callable
	// overBudget: the call is not made: its function spent its budget in
	// this run's earlier calls, and is called only on rungs below below.
	overBudget(call int, spent time.Duration, below int)
	// lost: the call's process died ("crash"), ran past the limit
	// ("timeout") or lied ("tampered"); inCall when the call had started.
	lost(call int, kind string, detail string, inCall bool)
	// loaded: the files module's process had loaded when its stretch
	// ended (the verdict cache's key).
	loaded(module int, files []string)
	arm(d time.Duration) // the watchdog's limit for what runs now
	kill()               // a forger was caught: end the interpreter
}

// recordReader reads one attempt of a shard as a strict state machine
// over what the worker can say next: an import of the next call's module,
// then the answer to exactly the next planned call, or word that a
// module's process is gone. Scanned code never holds the channel (the
// worker's parent does); should anything else write to it, a record from
// the past (the real worker reporting a call the channel already
// "finished") gives the forger away, and everything recorded since that
// call is to be dropped.
type recordReader struct {
	plan          *workerPlan
	skip          map[int]bool // plan functions not to call
	sink          shardSink
	callTimeout   time.Duration
	importTimeout time.Duration

	module     int // the plan module being imported, or -1
	stretch    int // the plan module whose process runs now (from its import on), or -1
	last       int // the last call answered (or found not callable)
	done       bool
	failedMods map[int]bool
	recorded   []int // calls answered in this attempt
	forged     int   // the call during which forged records began, or -1

	// spent is where the interpreter's time went, charged as records
	// arrive (at: when the interpreter started; seen: whether a record
	// has arrived).
	spent Spent
	at    time.Time
	seen  bool
	now   func() time.Time
}

func newRecordReader(plan *workerPlan, skip map[int]bool, sink shardSink, callTimeout, importTimeout time.Duration) *recordReader {
	return &recordReader{plan: plan, skip: skip, sink: sink, callTimeout: callTimeout, importTimeout: importTimeout,
		module: -1, stretch: -1, last: plan.Start - 1, forged: -1, failedMods: map[int]bool{}, at: time.Now(), now: time.Now}
}

func (r *recordReader) moduleOf(call int) int { return r.plan.Functions[r.plan.Calls[call][0]].Module }

// next is the call the worker must start next.
func (r *recordReader) next() int {
	for i := r.last + 1; i < len(r.plan.Calls); i++ {
		if !r.skip[r.plan.Calls[i][0]] && !r.failedMods[r.moduleOf(i)] {
			return i
		}
	}
	return len(r.plan.Calls)
}

func (r *recordReader) idle() bool { return r.module < 0 }

func is(p *int, v int) bool { return p != nil && *p == v }

// handle takes one line of the channel.
func (r *recordReader) handle(line []byte) {
	var rec record
	if json.Unmarshal(line, &rec) != nil || rec.Nonce != r.plan.Nonce {
		r.anomaly(record{})
		return
	}
	if r.forged >= 0 {
		return
	}
	r.charge(&rec)
	ok := false
	switch rec.Kind {
	case kindResult:
		ok = r.result(rec)
	case kindImportStart:
		ok = r.importStart(rec)
	case kindImported, kindImportFailed:
		ok = r.imported(rec)
	case kindNotCallable:
		ok = r.notCallable(rec)
	case kindOverBudget:
		ok = r.overBudget(rec)
	case kindGone:
		ok = r.gone(rec)
	case kindLoaded:
		ok = r.loaded(rec)
	case kindDone:
		ok = r.finish()
	}
	if !ok {
		r.anomaly(rec)
	}
}

// charge adds what a record says of time: the first record ends the
// interpreter's start; an import's end and a call's answer say what they
// took, as the worker measured them (its records come in batches, so
// when they arrive says little); a gone that ran past a limit took what
// it says, or the limit.
func (r *recordReader) charge(rec *record) {
	if !r.seen {
		r.seen = true
		r.spent.Start += r.now().Sub(r.at)
	}
	took := time.Duration(max(rec.Micros, 0)) * time.Microsecond
	switch rec.Kind {
	case kindResult:
		rec.took = took
		r.spent.Calls += took
	case kindImported, kindImportFailed:
		r.spent.Imports += took
	case kindGone:
		if !rec.TimedOut {
			break
		}
		if took > 0 {
			r.spent.Hangs += took
			break
		}
		limit := r.plan.CallTimeout
		if !r.idle() {
			limit = r.plan.ImportTimeout
		}
		r.spent.Hangs += time.Duration(limit * float64(time.Second))
	}
}

// ended is where the interpreter's time went, once it has ended: what
// the records did not say (forks, the worker's relay and checks, a hang
// the watchdog ended, the exit) is Other.
func (r *recordReader) ended() Spent {
	s := r.spent
	total := r.now().Sub(r.at)
	if !r.seen {
		s.Start = total
	}
	s.Other = max(0, total-s.Start-s.Imports-s.Calls-s.Hangs)
	return s
}

// inTurn is whether a record is about the next planned call, with no
// import open: a call's start is no record, so its answer is its turn.
func (r *recordReader) inTurn(rec record) bool {
	return r.idle() && is(rec.Call, r.next())
}

func (r *recordReader) result(rec record) bool {
	if !r.inTurn(rec) {
		return false
	}
	r.sink.answered(*rec.Call, rec)
	r.recorded = append(r.recorded, *rec.Call)
	r.endCall(*rec.Call)
	return true
}

// endCall closes a call; the watchdog stays armed until the next record,
// so nothing runs unwatched.
func (r *recordReader) endCall(call int) {
	r.last = call
	r.sink.arm(r.callTimeout)
}

func (r *recordReader) importStart(rec record) bool {
	n := r.next()
	if !r.idle() || n >= len(r.plan.Calls) || !is(rec.Module, r.moduleOf(n)) {
		return false
	}
	r.module, r.stretch = *rec.Module, *rec.Module
	r.sink.arm(r.importTimeout)
	return true
}

func (r *recordReader) imported(rec record) bool {
	if r.module < 0 || !is(rec.Module, r.module) {
		return false
	}
	if rec.Kind == kindImportFailed {
		r.failedMods[r.module] = true
		r.sink.importFailed(r.module, rec.Err)
	}
	r.module = -1
	r.sink.arm(r.callTimeout)
	return true
}

// loaded takes the files a module's process had loaded, said between
// calls of a module of the plan.
func (r *recordReader) loaded(rec record) bool {
	if !r.idle() || rec.Module == nil || *rec.Module < 0 || *rec.Module >= len(r.plan.Modules) {
		return false
	}
	r.sink.loaded(*rec.Module, rec.Files)
	return true
}

func (r *recordReader) notCallable(rec record) bool {
	if !r.inTurn(rec) {
		return false
	}
	r.sink.notCallable(*rec.Call, rec.Why)
	r.skip[r.plan.Calls[*rec.Call][0]] = true
	r.endCall(*rec.Call)
	return true
}

// overBudget takes the worker's word that the next call is not made, its
// function's budget spent; only a plan with a budget has one.
func (r *recordReader) overBudget(rec record) bool {
	if !r.inTurn(rec) || r.plan.FunctionBudget <= 0 {
		return false
	}
	r.sink.overBudget(*rec.Call, time.Duration(max(rec.Micros, 0))*time.Microsecond, rec.Below)
	r.endCall(*rec.Call)
	return true
}

// gone is the worker's word that a module's child died, or was ended for
// writing what it may not, in the step in progress: the call is charged,
// or the import, or (between calls) the module's next call; the worker
// goes on after the call, or with the next module.
func (r *recordReader) gone(rec record) bool {
	kind, detail := "crash", "killed its interpreter ("+rec.Why+")"
	switch {
	case rec.Tampered:
		kind, detail = "tampered", rec.Why+"; its module's process was ended"
	case rec.TimedOut:
		kind, detail = "timeout", rec.Why
	}
	switch {
	case rec.Call != nil:
		// A call it died in: at or after the next one the engine has no
		// answer for (answers queued in the process died with it), and
		// of module m.
		i := *rec.Call
		if !r.idle() || rec.Module == nil || i < r.next() || i >= len(r.plan.Calls) || r.moduleOf(i) != *rec.Module || r.skip[r.plan.Calls[i][0]] {
			return false
		}
		r.sink.lost(i, kind, detail, true)
		r.skip[r.plan.Calls[i][0]] = true
	case r.module >= 0:
		if !is(rec.Module, r.module) {
			return false
		}
		if rec.TimedOut {
			detail = rec.Why
		} else {
			detail = "import " + detail
		}
		r.sink.importFailed(r.module, detail)
		r.failedMods[r.module] = true
		r.module = -1
	default:
		if rec.Module == nil {
			return false
		}
		m := *rec.Module
		if n := r.next(); n < len(r.plan.Calls) && r.moduleOf(n) == m {
			r.sink.lost(n, kind, "its module's process ended before this call ("+detail+")", false)
		}
		for fi, f := range r.plan.Functions {
			if f.Module == m {
				r.skip[fi] = true
			}
		}
	}
	r.stretch = -1
	r.sink.arm(r.callTimeout)
	return true
}

// between is the call to charge when the worker died while no step was
// on record but a module's process was alive: the call the worker last
// marked as starting, when it is one of that module's calls not yet
// answered (the module may have killed the worker's parent from it); else
// that module's next call, when it has one; -1 otherwise.
func (r *recordReader) between(mark int64) int {
	if r.stretch < 0 || !r.idle() {
		return -1
	}
	n := r.next()
	if mark >= int64(n) && mark < int64(len(r.plan.Calls)) {
		if i := int(mark); r.moduleOf(i) == r.stretch && !r.skip[r.plan.Calls[i][0]] {
			return i
		}
	}
	if n < len(r.plan.Calls) && r.moduleOf(n) == r.stretch {
		return n
	}
	return -1
}

func (r *recordReader) finish() bool {
	if !r.idle() || r.next() != len(r.plan.Calls) {
		return false
	}
	r.done = true
	r.sink.arm(5 * time.Second) // it only has to exit
	return true
}

// anomaly is a record out of turn: a forger caught by the real worker's
// record from the past ends the worker; anything else is dropped (only the
// worker's parent writes here, and it passes on records in turn).
func (r *recordReader) anomaly(rec record) {
	if rec.Call != nil && *rec.Call >= r.plan.Start && *rec.Call <= r.last && r.forged < 0 {
		r.forged = *rec.Call
		r.sink.kill()
	}
}
