package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// fakeSink records what the reader decided, in order.
type fakeSink struct {
	events []string
}

func (f *fakeSink) answered(call int, rec record) {
	f.events = append(f.events, fmt.Sprintf("answer %d %s", call, rec.Value))
}
func (f *fakeSink) importFailed(m int, err string) {
	f.events = append(f.events, fmt.Sprintf("import-failed %d %s", m, err))
}
func (f *fakeSink) notCallable(call int, why string) {
	f.events = append(f.events, fmt.Sprintf("not-callable %d", call))
}
func (f *fakeSink) overBudget(call int, spent time.Duration, below int) {
	f.events = append(f.events, fmt.Sprintf("over-budget %d %s below %d", call, spent, below))
}
func (f *fakeSink) lost(call int, kind, detail string, _ bool) {
	f.events = append(f.events, fmt.Sprintf("lost %d %s", call, kind))
}
func (f *fakeSink) arm(d time.Duration) { f.events = append(f.events, "arm "+d.String()) }
func (f *fakeSink) kill()               { f.events = append(f.events, "kill") }
func (f *fakeSink) loaded(module int, files []string) {
	f.events = append(f.events, fmt.Sprintf("loaded %d %d", module, len(files)))
}

// twoModules is a plan of two functions in two modules, two rungs each.
func twoModules() *workerPlan {
	return &workerPlan{envelope: envelope{Nonce: "N"}, Modules: []planModule{{Index: 0}, {Index: 1}}, Functions: []planFunction{{Module: 0}, {Module: 1}},
		Calls: [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}}}
}

func feed(r *recordReader, lines ...string) {
	for _, l := range lines {
		r.handle([]byte(l))
	}
}

func answers(events []string) []string {
	var out []string
	for _, e := range events {
		if e != "arm 1s" && e != "arm 3s" && e != "arm 5s" {
			out = append(out, e)
		}
	}
	return out
}

func TestRecordReader(t *testing.T) {
	honest := []string{
		`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
		`{"n":"N","k":"r","i":0,"v":"V:1"}`,
		`{"n":"N","k":"r","i":1,"v":"V:2"}`,
		`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`,
		`{"n":"N","k":"r","i":2,"v":"V:3"}`,
		`{"n":"N","k":"r","i":3,"v":"V:4"}`,
		`{"n":"N","k":"done"}`,
	}
	cases := []struct {
		name   string
		lines  []string
		want   []string
		done   bool
		forged int
	}{
		{"an honest worker", honest, []string{"answer 0 V:1", "answer 1 V:2", "answer 2 V:3", "answer 3 V:4"}, true, -1},
		{"done before the last call", append(slices.Clone(honest[:6]), `{"n":"N","k":"done"}`),
			[]string{"answer 0 V:1", "answer 1 V:2"}, false, -1},
		{"a result out of turn is dropped", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"r","i":1,"v":"V:9"}`, `{"n":"N","k":"r","i":0,"v":"V:1"}`},
			[]string{"answer 0 V:1"}, false, -1},
		{"a wrong nonce or garbage is dropped", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"X","k":"r","i":0}`, `garbage`, `{"n":"N","k":"r","i":0,"v":"V:1"}`},
			[]string{"answer 0 V:1"}, false, -1},
		{"a forger running ahead is caught by the real record", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"r","i":0,"v":"V:forged"}`, `{"n":"N","k":"r","i":1,"v":"V:forged"}`, `{"n":"N","k":"r","i":0,"v":"V:1"}`, `{"n":"N","k":"done"}`},
			[]string{"answer 0 V:forged", "answer 1 V:forged", "kill"}, false, 0},
		{"a failed import skips the module's calls", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"if","m":0,"err":"E"}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`, `{"n":"N","k":"nc","i":2,"why":"x"}`,
			`{"n":"N","k":"done"}`},
			[]string{"import-failed 0 E", "not-callable 2"}, true, -1},
		{"an import of the wrong module", []string{`{"n":"N","k":"is","m":1}`}, nil, false, -1},
		{"a child dying in a call: the call is charged, the rest goes on", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"gone","m":0,"i":0,"why":"killed by SIGSEGV"}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`,
			`{"n":"N","k":"r","i":2,"v":"V:3"}`, `{"n":"N","k":"r","i":3,"v":"V:4"}`,
			`{"n":"N","k":"done"}`},
			[]string{"lost 0 crash", "answer 2 V:3", "answer 3 V:4"}, true, -1},
		{"a child dying in its import", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"gone","m":0,"why":"exit status 3"}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`, `{"n":"N","k":"r","i":2,"v":"V:3"}`},
			[]string{"import-failed 0 import killed its interpreter (exit status 3)", "answer 2 V:3"}, false, -1},
		{"a child ended between calls for lying: its module's next call is charged", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"r","i":0,"v":"V:1"}`, `{"n":"N","k":"gone","m":0,"why":"wrote to its record channel","t":true}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`, `{"n":"N","k":"r","i":2,"v":"V:3"}`},
			[]string{"answer 0 V:1", "lost 1 tampered", "answer 2 V:3"}, false, -1},
		{"gone for another module during an import", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"gone","m":1,"why":"exit status 3"}`}, nil, false, -1},
		{"a call past its limit, after an answer that was queued and lost: the function is skipped", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"gone","m":0,"i":1,"why":"ran past the 1s call limit","to":true}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`, `{"n":"N","k":"r","i":2,"v":"V:3"}`, `{"n":"N","k":"r","i":3,"v":"V:4"}`,
			`{"n":"N","k":"done"}`},
			[]string{"lost 1 timeout", "answer 2 V:3", "answer 3 V:4"}, true, -1},
		{"what a module's process loaded, between calls", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"r","i":0,"v":"V:1"}`, `{"n":"N","k":"r","i":1,"v":"V:2"}`, `{"n":"N","k":"fl","m":0,"f":["/t/a.py","/t/b.py"]}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"fl","m":1,"f":["/t/c.py"]}`},
			[]string{"answer 0 V:1", "answer 1 V:2", "loaded 0 2"}, false, -1},
		{"loaded files of a module the plan has not", []string{`{"n":"N","k":"fl","m":7,"f":[]}`}, nil, false, -1},
		{"gone naming another module's call", []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"gone","m":0,"i":2,"why":"killed by SIGKILL"}`}, nil, false, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink := &fakeSink{}
			r := newRecordReader(twoModules(), map[int]bool{}, sink, time.Second, 3*time.Second)
			feed(r, c.lines...)
			if got := answers(sink.events); !slices.Equal(got, c.want) {
				t.Errorf("events %q, want %q", got, c.want)
			}
			if r.done != c.done || r.forged != c.forged {
				t.Errorf("done %v forged %d, want %v %d", r.done, r.forged, c.done, c.forged)
			}
		})
	}
}

// TestRecordReaderBudget: "ob" stands for exactly the next call, the
// function's later calls still come, and a plan with no budget has none.
func TestRecordReaderBudget(t *testing.T) {
	three := func(budget float64) *workerPlan {
		return &workerPlan{envelope: envelope{Nonce: "N"}, FunctionBudget: budget, Functions: []planFunction{{Module: 0}, {Module: 1}},
			Calls: [][2]int{{0, 2}, {0, 1}, {0, 0}, {1, 0}}}
	}
	cases := []struct {
		name   string
		budget float64
		lines  []string
		want   []string
		done   bool
	}{
		{"a reversed run: the last rung answered, the middle one not made, the first answered", 1, []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"r","i":0,"v":"V:1","us":1500000}`, `{"n":"N","k":"ob","i":1,"us":1500000,"below":1}`, `{"n":"N","k":"r","i":2,"v":"V:0"}`,
			`{"n":"N","k":"is","m":1}`, `{"n":"N","k":"id","m":1}`, `{"n":"N","k":"r","i":3,"v":"V:3"}`, `{"n":"N","k":"done"}`},
			[]string{"answer 0 V:1", "over-budget 1 1.5s below 1", "answer 2 V:0", "answer 3 V:3"}, true},
		{"out of turn", 1, []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"ob","i":1,"us":1}`, `{"n":"N","k":"r","i":0,"v":"V:1"}`},
			[]string{"answer 0 V:1"}, false},
		{"no budget in the plan", 0, []string{`{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`,
			`{"n":"N","k":"ob","i":0,"us":1}`, `{"n":"N","k":"r","i":0,"v":"V:1"}`},
			[]string{"answer 0 V:1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink := &fakeSink{}
			r := newRecordReader(three(c.budget), map[int]bool{}, sink, time.Second, 3*time.Second)
			feed(r, c.lines...)
			if got := answers(sink.events); !slices.Equal(got, c.want) {
				t.Errorf("events %q, want %q", got, c.want)
			}
			if r.done != c.done {
				t.Errorf("done %v, want %v", r.done, c.done)
			}
		})
	}
}

// TestRecordReaderArmsTheWatchdog: nothing runs unwatched, and an import
// gets the import limit.
func TestRecordReaderArmsTheWatchdog(t *testing.T) {
	sink := &fakeSink{}
	r := newRecordReader(twoModules(), map[int]bool{}, sink, time.Second, 3*time.Second)
	feed(r, `{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`, `{"n":"N","k":"r","i":0,"v":"V:1"}`)
	want := []string{"arm 3s", "arm 1s", "answer 0 V:1", "arm 1s"}
	if !slices.Equal(sink.events, want) {
		t.Errorf("events %q, want %q", sink.events, want)
	}
}

// TestRecordReaderBetweenCalls: when the worker dies while no step is on
// record, the module whose process was alive is charged: the call it last
// marked, if that is one of its unanswered calls, else its next call; once
// its calls are done, nothing is.
func TestRecordReaderBetweenCalls(t *testing.T) {
	plan := &workerPlan{envelope: envelope{Nonce: "N"}, Functions: []planFunction{{Module: 0}, {Module: 0}, {Module: 1}},
		Calls: [][2]int{{0, 0}, {1, 0}, {1, 1}, {2, 0}}}
	r := newRecordReader(plan, map[int]bool{}, &fakeSink{}, time.Second, 3*time.Second)
	feed(r, `{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`, `{"n":"N","k":"r","i":0,"v":"V:1"}`)
	for _, c := range []struct {
		mark int64
		want int
	}{
		{2, 2},  // marked, unanswered, its own: that call
		{-1, 1}, // no mark: its next call
		{0, 1},  // marked but answered already
		{3, 1},  // another module's call: not believed
		{99, 1}, // garbage
	} {
		if got := r.between(c.mark); got != c.want {
			t.Errorf("mark %d: charge %d, want %d", c.mark, got, c.want)
		}
	}
	feed(r, `{"n":"N","k":"r","i":1,"v":"V:2"}`, `{"n":"N","k":"r","i":2,"v":"V:3"}`)
	if got := r.between(2); got != -1 {
		t.Errorf("after module 0's last call: charge %d, want none", got)
	}
	fresh := newRecordReader(plan, map[int]bool{}, &fakeSink{}, time.Second, 3*time.Second)
	if got := fresh.between(0); got != -1 {
		t.Errorf("before any module: charge %d, want none", got)
	}
}

// TestRecordReaderChargesTime: the first record ends the interpreter's
// start; imports and calls take what the worker measured (us), whenever
// their records arrive; a call past the limit takes the limit; the rest
// of the interpreter's life is Other.
func TestRecordReaderChargesTime(t *testing.T) {
	clock := time.Unix(0, 0)
	sink := &tookSink{}
	plan := twoModules()
	plan.CallTimeout, plan.ImportTimeout = 1, 30
	r := newRecordReader(plan, map[int]bool{}, sink, time.Second, 3*time.Second)
	r.at = clock
	r.now = func() time.Time { return clock }
	for _, s := range []struct {
		d    time.Duration
		line string
	}{
		{100 * time.Millisecond, `{"n":"N","k":"is","m":0}`},
		{20 * time.Millisecond, `{"n":"N","k":"id","m":0,"us":15000}`},
		{0, `{"n":"N","k":"r","i":0,"v":"V:1","us":3000}`}, // a batch: both at once
		{9 * time.Millisecond, `{"n":"N","k":"r","i":1,"v":"V:2","us":5000}`},
		{7 * time.Millisecond, `{"n":"N","k":"is","m":1}`},
		{11 * time.Millisecond, `{"n":"N","k":"if","m":1,"err":"E:ValueError","us":-4}`}, // no negative time
		{time.Second, `{"n":"N","k":"done"}`},
	} {
		clock = clock.Add(s.d)
		r.handle([]byte(s.line))
	}
	if want := []time.Duration{3 * time.Millisecond, 5 * time.Millisecond}; !slices.Equal(sink.took, want) {
		t.Errorf("answers took %v, want %v", sink.took, want)
	}
	clock = clock.Add(53 * time.Millisecond)
	got := r.ended()
	want := Spent{Start: 100 * time.Millisecond, Imports: 15 * time.Millisecond, Calls: 8 * time.Millisecond,
		Other: 1200*time.Millisecond - 123*time.Millisecond}
	if got != want {
		t.Errorf("spent %+v, want %+v", got, want)
	}

	// A call that ran past the limit takes the limit; an interpreter that
	// never wrote was starting all along.
	r = newRecordReader(twoModules(), map[int]bool{}, &fakeSink{}, time.Second, 3*time.Second)
	r.plan.CallTimeout = 1
	feed(r, `{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`, `{"n":"N","k":"gone","i":0,"m":0,"to":true,"why":"ran past"}`)
	if got := r.ended().Hangs; got != time.Second {
		t.Errorf("a call past the 1s limit took %s", got)
	}
	// One ended as blocked (idle) took what the worker says.
	r = newRecordReader(twoModules(), map[int]bool{}, &fakeSink{}, time.Second, 3*time.Second)
	r.plan.CallTimeout = 5
	feed(r, `{"n":"N","k":"is","m":0}`, `{"n":"N","k":"id","m":0}`, `{"n":"N","k":"gone","i":0,"m":0,"to":true,"us":2100000,"why":"used no CPU"}`)
	if got := r.ended().Hangs; got != 2100*time.Millisecond {
		t.Errorf("a call blocked for 2.1s took %s", got)
	}
	r = newRecordReader(twoModules(), map[int]bool{}, &fakeSink{}, time.Second, 3*time.Second)
	start := time.Unix(0, 0)
	r.at, r.now = start, func() time.Time { return start.Add(2 * time.Second) }
	if got := r.ended(); got != (Spent{Start: 2 * time.Second}) {
		t.Errorf("silent interpreter: spent %+v", got)
	}
}

// tookSink keeps how long each answered call took.
type tookSink struct {
	fakeSink
	took []time.Duration
}

func (s *tookSink) answered(call int, rec record) { s.took = append(s.took, rec.took) }

// TestRequestEnvelope: every mode's request is one typed value whose
// envelope carries the nonce, and the network check's exit status only
// where the runtime asks for the check.
func TestRequestEnvelope(t *testing.T) {
	for _, check := range []bool{false, true} {
		req := &postureRequest{envelope: envelope{Nonce: "N"}, WriteTest: true}
		f, err := requestFile(t.TempDir(), req, check)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.NewDecoder(f).Decode(&got); err != nil {
			t.Fatal(err)
		}
		f.Close()
		code, has := got["check_network"]
		if got["nonce"] != "N" || got["write_test"] != true || has != check || (check && code != float64(sandbox.NetworkExit)) {
			t.Errorf("check %v: the request is %v", check, got)
		}
	}
}

// TestProtocolTablesAgree: the record kinds of the protocol are one list:
// the table in protocol.go's comment, the engine's constants, the table
// in the worker's package docstring and the worker's Kind constants.
func TestProtocolTablesAgree(t *testing.T) {
	row := regexp.MustCompile(`(?m)^(?://\t|  )([a-z]+) +(?:discover|probe|posture|all) `)
	kindsOf := func(path string, re *regexp.Regexp) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	goConsts := []string{}
	for _, k := range []recordKind{kindLadder, kindModule, kindPosture, kindImportStart, kindImported, kindImportFailed,
		kindResult, kindNotCallable, kindOverBudget, kindGone, kindLoaded, kindDone} {
		goConsts = append(goConsts, string(k))
	}
	slices.Sort(goConsts)
	data, err := os.ReadFile("worker/channel.py")
	if err != nil {
		t.Fatal(err)
	}
	class := string(data)[strings.Index(string(data), "class Kind:"):]
	class = class[:strings.Index(class, "\n\n\n")]
	var pyConsts []string
	for _, m := range regexp.MustCompile(`"([a-z]+)"`).FindAllStringSubmatch(class[strings.Index(class, `"""`+"\n"):], -1) {
		if m[1] != "end" { // a child's record to its parent, never the engine's
			pyConsts = append(pyConsts, m[1])
		}
	}
	slices.Sort(pyConsts)
	goTable, pyTable := kindsOf("protocol.go", row), kindsOf("worker/__init__.py", row)
	if len(goConsts) < 10 || !slices.Equal(goTable, goConsts) || !slices.Equal(pyTable, goConsts) || !slices.Equal(pyConsts, goConsts) {
		t.Errorf("the record kinds differ:\n  engine constants %v\n  protocol.go table %v\n  worker table     %v\n  worker Kind      %v", goConsts, goTable, pyTable, pyConsts)
	}
}
