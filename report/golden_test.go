package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/gate"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the renderers")

// synthetic is a report with one of each thing a renderer shows: a
// cross-run finding with causes and smells, an in-process finding, an
// unattributed one, an order-sensitive function, one moved by another's
// state and its culprit, a look, a not-probed function, a module that
// failed, a condition that was skipped, a finding ignored in the source
// and one the baseline had. No Python is needed.
func synthetic() *Report {
	run := func(id int, seed uint32, tz, order string) sandbox.RunConditions {
		return sandbox.RunConditions{ID: id, HashSeed: seed, TZ: tz, Locale: "C.UTF-8", CallOrder: order, Hostname: "probe-a",
			UID: 61000, GID: 61000, Umask: "022", Cwd: "/tmp/work", Home: "/home/probe", CPUs: "0-1", Clock: "0s", Purpose: "main"}
	}
	r := &Report{
		Tool: Tool{Name: "nondet-sandbox", Version: "test"}, Runtime: "embedded", Python: "python3", Seed: 7,
		Targets: []string{"src"},
		Runs:    []sandbox.RunConditions{run(0, 11, "UTC0", "forward"), run(1, 22, "GMT+12", "reversed")},
		Skipped: []sandbox.Support{{Condition: sandbox.Clock, Reason: "libfaketime is not installed"}},
		Modules: []Module{{Path: "pkg/a.py", Status: "ok"}, {Path: "pkg/broken.py", Status: "unparseable", Error: "SyntaxError: invalid syntax (line 3)"}},
	}
	f := r.AddFunction("pkg/a.py::resolve", 3)
	f.Verdict, f.Reason, f.Causes, f.Runs = VerdictNondeterministic, "a witness is a fact: this function gave two answers to one input", []string{"hash-seed"}, 6
	f.Witness = &Witness{Rung: 7, Args: []string{`"alpha"`}, OrderOnly: true,
		Answers: []Answer{{Run: 0, Value: `V:set["a","l"]`}, {Run: 1, Value: `V:set["l","a"]`}},
		DivergedAt: &Divergence{File: "pkg/a.py", Line: 4, Function: "resolve", Kind: "data", Local: "names",
			Values: []string{`set["a","l"]`, `set["l","a"]`}, Source: "names = set(word)",
			Excerpt: &Excerpt{First: 2, Lines: []string{"", "def resolve(word):", "    names = set(word)", "    return names"}}}}
	f.Smells = []gate.Smell{{Kind: "set-iteration", Call: "iteration over a set", Line: 4}}
	f.Rungs = RungCounts{Total: 37, Answered: 20, Raised: 17}
	f = r.AddFunction("pkg/a.py::counter", 9)
	f.Verdict, f.Causes = VerdictNondeterministic, []string{BreakerRepeat}
	f.Witness = &Witness{Rung: 0, Args: []string{}, Breaker: BreakerRepeat, Answers: []Answer{{Run: 0, Value: "V:1"}, {Run: 0, Value: "V:2"}}}
	f = r.AddFunction("pkg/a.py::both", 12)
	f.Verdict, f.Causes, f.CauseNote = VerdictNondeterministic, []string{"unattributed"}, "no single varied condition moved it alone; the other run's conditions together did"
	f.Witness = &Witness{Rung: 0, Args: []string{"0"}, Answers: []Answer{{Run: 0, Value: "V:1"}, {Run: 1, Value: "V:2"}},
		DivergedAt: &Divergence{File: "python3.11/random.py", Line: 242, Function: "_randbelow", Kind: "return", Values: []string{"1", "2"}, Outside: true,
			Under: &Divergence{File: "pkg/a.py", Line: 13, Function: "both", Source: "return random.randrange(3)"}}}
	f = r.AddFunction("pkg/a.py::keys", 15)
	f.Verdict, f.Reason = VerdictDeterministic, "no run disagreed; not a guarantee; raised on 3 of 37 rungs"
	f.OrderSensitive = &Witness{Rung: 19, Args: []string{`{"red":1,"green":2}`}, Breaker: BreakerDictOrder,
		Answers: []Answer{{Run: 0, Value: `V:"red,green"`}, {Run: 0, Value: `V:"green,red"`}}}
	f = r.AddFunction("pkg/a.py::get_mode", 18)
	f.Verdict, f.Reason = VerdictDeterministic, "called alone it gave one answer under both runs' conditions"
	f.MovedBy = &MovedBy{Culprit: "pkg/a.py::set_mode", Run: 0, Alone: `V:"fast"`, Moved: `V:"slow"`,
		DivergedAt: &Divergence{File: "pkg/a.py", Line: 19, Function: "get_mode", Kind: "control", Values: []string{"line 20", "line 22"}, Source: "if _MODE is None:"}}
	f = r.AddFunction("pkg/a.py::set_mode", 21)
	f.Verdict, f.Reason, f.Moves = VerdictDeterministic, "no run disagreed; not a guarantee; raised on 0 of 37 rungs", []string{"pkg/a.py::get_mode"}
	f = r.AddFunction("pkg/a.py::strict", 24)
	f.Verdict, f.Reason = VerdictLook, "every rung raised TypeError — the ladder reached this function's type errors and never its behaviour (37 of 37 rungs)"
	f.Contained = []Event{{Kind: "timeout", Run: 1, Rung: 3, Detail: "ran past the 10s call limit"}}
	f = r.AddFunction("pkg/a.py::many", 27)
	f.Verdict, f.Reason = VerdictNotProbed, "4 required parameters: the ladder covers 0 to 3"
	f = r.AddFunction("pkg/b.py::stamp", 5)
	f.Verdict, f.Causes, f.Suppressed = VerdictNondeterministic, []string{"clock"}, &Suppression{Line: 5, Causes: []string{"clock"}}
	f.Witness = &Witness{Rung: 0, Args: []string{}, Answers: []Answer{{Run: 0, Value: "V:1"}, {Run: 1, Value: "V:2"}}}
	r.Packages = []Package{{Name: "pkg", Version: "1.0", Modules: []string{"pkg"}}}
	for _, f := range r.Functions {
		if f.Verdict == VerdictNondeterministic || f.Verdict == VerdictDeterministic {
			f.Rungs.Reached = 5 // the look and the function not probed reached nothing
		}
	}
	r.Finish()
	// A baseline that already had the in-process finding.
	r.ApplyBaseline(&Report{Functions: []*Function{{ID: "pkg/a.py::counter", Verdict: VerdictNondeterministic, Causes: []string{BreakerRepeat}}}})
	return r
}

// TestRenderersGolden renders the synthetic report in every format and
// compares it with testdata; go test ./report -update rewrites them.
func TestRenderersGolden(t *testing.T) {
	for _, c := range []struct {
		file   string
		render func(*bytes.Buffer, *Report) error
	}{
		{"report.txt", func(b *bytes.Buffer, r *Report) error { return WriteText(b, r) }},
		{"report.color.txt", func(b *bytes.Buffer, r *Report) error { return WriteTextColor(b, r, true) }},
		{"report.all.txt", func(b *bytes.Buffer, r *Report) error { return WriteTextWith(b, r, TextOptions{Deterministic: true}) }},
		{"report.concise.txt", func(b *bytes.Buffer, r *Report) error { return WriteConcise(b, r, TextOptions{}) }},
		{"report.json", func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r) }},
		{"report.sarif", func(b *bytes.Buffer, r *Report) error { return WriteSARIF(b, r) }},
		{"report.github", func(b *bytes.Buffer, r *Report) error { return WriteGitHub(b, r, TextOptions{Looks: true}) }},
		{"report.junit.xml", func(b *bytes.Buffer, r *Report) error { return WriteJUnit(b, r) }},
		{"report.html", func(b *bytes.Buffer, r *Report) error { return WriteHTML(b, r) }},
	} {
		t.Run(c.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.render(&b, synthetic()); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.file)
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./report -update writes it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s differs from what the renderer writes now (go test ./report -update, then review the diff):\n%s", path, b.String())
			}
		})
	}
}

// TestSuppressionsAndBaseline: an ignore comment covers a finding only when
// it names every cause (or none); a baseline finding fails no more unless
// it has a cause the baseline did not name.
func TestSuppressionsAndBaseline(t *testing.T) {
	for _, c := range []struct {
		ignore, causes []string
		want           bool
	}{
		{nil, []string{"hash-seed"}, true},
		{[]string{"hash-seed"}, []string{"hash-seed"}, true},
		{[]string{"hash-seed"}, []string{"hash-seed", "locale"}, false},
		{[]string{"locale", "hash-seed"}, []string{"hash-seed", "locale"}, true},
	} {
		if got := (&Suppression{Causes: c.ignore}).Covers(c.causes); got != c.want {
			t.Errorf("ignore%v over %v: %v", c.ignore, c.causes, got)
		}
	}
	if (*Suppression)(nil).Covers([]string{"x"}) {
		t.Error("no comment covers a finding")
	}
	r := synthetic()
	var failing []string
	for _, f := range r.Failing() {
		failing = append(failing, f.ID)
	}
	if want := "pkg/a.py::resolve pkg/a.py::both"; strings.Join(failing, " ") != want { // by line
		t.Errorf("failing %v, want %s", failing, want)
	}
	if r.Census.Nondeterministic != 4 || r.Census.Suppressed != 1 || r.Census.InBaseline != 1 || len(r.Findings()) != 3 {
		t.Errorf("census %+v, findings %d", r.Census, len(r.Findings()))
	}
	// A new cause is a new finding.
	r.ApplyBaseline(&Report{Functions: []*Function{{ID: "pkg/a.py::resolve", Verdict: VerdictNondeterministic, Causes: []string{"locale"}}}})
	if f := r.Function("pkg/a.py::resolve"); f.InBaseline {
		t.Error("a finding with a cause the baseline did not name counts as known")
	}
}

// TestLinterShapedOutput: GitHub annotations are findings only unless
// looks are asked for, and a concise report with no finding says so in
// one line, as linters do.
func TestLinterShapedOutput(t *testing.T) {
	r := synthetic()
	for _, looks := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteGitHub(&b, r, TextOptions{Looks: looks}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "title=look::"); got != looks {
			t.Errorf("looks asked %v: a look annotated %v:\n%s", looks, got, b.String())
		}
	}
	clean := synthetic()
	var kept []*Function
	for _, f := range clean.Functions {
		if f.Verdict != VerdictNondeterministic {
			kept = append(kept, f)
		}
	}
	clean.Functions = kept
	clean.Finish()
	var b bytes.Buffer
	if err := WriteConcise(&b, clean, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "no findings: 3 deterministic, 1 look") || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("concise with no finding: %q", b.String())
	}
}
