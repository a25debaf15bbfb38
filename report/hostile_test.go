package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Tool names a forged part could carry: each tries to start a workflow
// command of its own, on its line or on a new one.
var forgedToolNames = []string{
	"x\n::error::pwned",
	"::add-mask::secret",
	"x\r::warning::x",
	" \t\u00a0::error::indented",
	"\u00ad::error::soft-hyphen",
	"##[add-mask]secret",
	"#\u00ad#[stop-commands]token",
	"a,b:c%0A::error::x",
	"<script>alert(1)</script>\x1b[31m\x00\x07\x7f\u009b",
}

// hostile is a report as a forged CI artifact could have it: every field
// a renderer shows carries control characters, workflow commands and
// markup, and a file is named with "::". It keeps every rule Validate
// checks, so it reaches the renderers.
func hostile(toolName string) *Report {
	// ctl has no "::", so it can be in a function's name; evil can be
	// anywhere else, and in one id too (where its "::" ends the file).
	const ctl = "\x1b[31m\x00\x07\r\n\u009b2J##[add-mask]z<script>alert(1)</script>"
	const evil = ctl + "\r::warning::x\n::error::y\n##[error]z"
	r := &Report{
		Tool: Tool{Name: toolName, Version: "v" + evil}, Runtime: "rt" + evil, Python: "py" + evil, Seed: 1,
		Targets: []string{"src"},
		Runs: []sandbox.RunConditions{
			{ID: 0, TZ: "UTC" + evil, Locale: "C" + evil, CallOrder: "forward", Umask: "022", Cwd: "/w" + evil, Hostname: "h" + evil, Purpose: "main"},
			{ID: 1, TZ: "GMT+12", Locale: "C", CallOrder: "reversed" + evil, Umask: "077", Cwd: "/w", CPUs: "0" + evil, Clock: "1h" + evil, Purpose: "main"},
		},
		Modules: []Module{
			{Path: "evil/a::b.py", Status: "ok"},
			{Path: "evil/c::d.py", Status: "import-failed" + evil, Error: "RuntimeError: " + evil},
		},
		Packages: []Package{{Name: "pkg" + evil, Version: "1" + evil, Modules: []string{"evil"}}},
		Part:     &Part{Index: 1, Of: 1},
	}
	f := r.AddFunction("evil/a::b.py::f"+ctl, 3)
	f.Verdict, f.Reason, f.Causes, f.CauseNote = VerdictNondeterministic, "reason"+evil, []string{"hash-seed" + evil}, "note"+evil
	f.Witness = &Witness{Args: []string{"arg" + evil}, Answers: []Answer{{Run: 0, Value: "V:1" + evil}, {Run: 1, Value: "V:2" + evil}}}
	f.Contained = []Event{{Kind: "timeout" + evil, Run: 1, Detail: "detail" + evil}}
	f = r.AddFunction("evil/a::b.py::g", 5)
	f.Verdict, f.Causes, f.InBaseline = VerdictNondeterministic, []string{BreakerRepeat}, true
	f.Witness = &Witness{Args: []string{}, Breaker: BreakerRepeat, Answers: []Answer{{Run: 1, Value: evil}, {Run: 1, Value: "V:2"}}}
	f = r.AddFunction("evil/a::b.py::look"+ctl, 7)
	f.Verdict, f.Reason = VerdictLook, "every rung raised"+evil
	f = r.AddFunction("evil/a::b.py::det", 9)
	f.Verdict, f.Reason = VerdictDeterministic, "no run disagreed"+evil
	f.MovedBy = &MovedBy{Culprit: "evil/a::b.py::set" + evil, Alone: evil, Moved: evil}
	f.Moves = []string{"x.py::m" + evil}
	f.OrderSensitive = &Witness{Args: []string{evil}, Breaker: BreakerDictOrder, Answers: []Answer{{Run: 0, Value: evil}, {Run: 0, Value: "V:2"}}}
	f = r.AddFunction("evil/a::b.py::h"+evil, 10)
	f.Verdict, f.Causes = VerdictNondeterministic, []string{}
	f.Witness = &Witness{Args: []string{}, Answers: []Answer{{Run: 0, Value: "V:1"}, {Run: 1, Value: "V:2"}}}
	// A file whose name and location are workflow commands: the text
	// starts lines with both.
	r.Modules = append(r.Modules, Module{Path: "::add-mask::secret", Status: "ok", Location: "\u00ad::error::loc#\u200b#[stop-commands]t"})
	f = r.AddFunction("::add-mask::secret::k", 1)
	f.Verdict, f.Causes = VerdictNondeterministic, []string{}
	f.Witness = &Witness{Args: []string{}, Answers: []Answer{{Run: 0, Value: "V:1"}, {Run: 1, Value: "V:2"}}}
	f = r.AddFunction("::error::deterministic::d", 1)
	f.Verdict, f.Reason = VerdictDeterministic, "##[add-mask]x"
	// A finding with no witness is not malformed: every renderer shows
	// it without one.
	f = r.AddFunction("evil/a::b.py::nowit", 12)
	f.Verdict, f.Causes = VerdictNondeterministic, []string{"clock"}
	f = r.AddFunction("evil/a::b.py::np", 11)
	f.Verdict, f.Reason = VerdictNotProbed, "not probed"+evil
	f = r.AddFunction("evil/a::b.py::quiet", 13)
	f.Verdict, f.Causes, f.Suppressed = VerdictNondeterministic, []string{"clock" + evil}, &Suppression{Line: 13}
	f.Witness = &Witness{Args: []string{evil}, Answers: []Answer{{Run: 0, Value: "V:1"}, {Run: 1, Value: "V:2"}}}
	r.Finish()
	return r
}

// viaMerge is what merge renders of r: written as JSON, read back, merged.
func viaMerge(t *testing.T, r *Report) *Report {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var part Report
	if err := json.Unmarshal(b.Bytes(), &part); err != nil {
		t.Fatal(err)
	}
	whole, err := Merge([]*Report{&part})
	if err != nil {
		t.Fatalf("a well-formed part was refused: %v", err)
	}
	return whole
}

// controls lists what a terminal or a log viewer could act on: C0
// controls but newline, DEL, C1 controls, and bytes that are not UTF-8.
func controls(s string) []string {
	var bad []string
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r == utf8.RuneError && n == 1) {
			bad = append(bad, fmt.Sprintf("%q at %d", s[i:i+n], i))
		}
		i += n
	}
	return bad
}

// runnerUnescapeProperty is how the Actions runner reads back a command's
// property.
func runnerUnescapeProperty(s string) string {
	for _, m := range [][2]string{{"%0D", "\r"}, {"%0A", "\n"}, {"%3A", ":"}, {"%2C", ","}, {"%25", "%"}} {
		s = strings.ReplaceAll(s, m[0], m[1])
	}
	return s
}

// annotated is how many annotation lines WriteGitHub owes r.
func annotated(r *Report) int {
	n := 0
	for _, f := range r.Functions {
		if !f.IsSuppressed() && (f.Verdict == VerdictNondeterministic || f.Verdict == VerdictLook) {
			n++
		}
	}
	return n
}

func checkGitHub(t *testing.T, r *Report) {
	t.Helper()
	var b strings.Builder
	if err := WriteGitHub(&b, r, TextOptions{Looks: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if bad := controls(out); len(bad) > 0 {
		t.Errorf("control characters in the github output: %v\n%q", bad, out)
	}
	// The runner finds a legacy ##[command] anywhere in a line, skipping
	// ignorable characters between the two "#": the escaping writes none.
	if strings.Contains(out, "#") {
		t.Errorf(`a "#" from the report reached the github output: %q`, out)
	}
	noCommands(t, "github", out, "::warning ", "::notice ")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := annotated(r) + 1; len(lines) != want {
		t.Errorf("%d lines, want %d annotations and a summary:\n%s", len(lines), want, out)
	}
	files := map[string]bool{}
	for i, line := range lines {
		// The runner trims white space, and compares so that format
		// characters (a soft hyphen) are ignored.
		trimmed := strings.TrimLeftFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) })
		if !strings.HasPrefix(trimmed, "::") {
			if i != len(lines)-1 {
				t.Errorf("line %d is not an annotation and not the summary: %q", i+1, line)
			}
			continue
		}
		kind, rest, ok := strings.Cut(line, " ")
		if !ok || (kind != "::warning" && kind != "::notice") {
			t.Errorf("line %d is a workflow command the report wrote: %q", i+1, line)
			continue
		}
		// As the runner parses it: properties up to the next "::".
		props, _, ok := strings.Cut(rest, "::")
		if !ok {
			t.Errorf("line %d: no message: %q", i+1, line)
			continue
		}
		for _, p := range strings.Split(props, ",") {
			k, v, _ := strings.Cut(p, "=")
			switch k {
			case "file":
				files[runnerUnescapeProperty(v)] = true
			case "line", "title":
			default:
				t.Errorf("line %d: property %q the report forged: %q", i+1, k, line)
			}
		}
	}
	// The file of evil/a::b.py::f... is evil/a::b.py, in the target src.
	if !files["src/evil/a::b.py"] {
		t.Errorf("no annotation at src/evil/a::b.py; files %v", files)
	}
}

// legacyCommand is "##[" as the runner may match it: format characters
// between are ignored.
var legacyCommand = regexp.MustCompile(`#\p{Cf}*#\p{Cf}*\[`)

// noCommands checks that no line of out is a workflow command but those
// whose prefix is allowed.
func noCommands(t *testing.T, format, out string, allowed ...string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		trimmed := strings.TrimLeftFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) })
		if strings.HasPrefix(trimmed, "::") && !slices.ContainsFunc(allowed, func(p string) bool { return strings.HasPrefix(line, p) }) {
			t.Errorf("%s line %d is a workflow command: %q", format, i+1, line)
		}
		if legacyCommand.MatchString(line) {
			t.Errorf("%s line %d holds a legacy workflow command: %q", format, i+1, line)
		}
	}
}

func checkText(t *testing.T, r *Report) {
	t.Helper()
	var b strings.Builder
	if err := WriteConcise(&b, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if bad := controls(b.String()); len(bad) > 0 {
		t.Errorf("control characters in the concise output: %v\n%q", bad, b.String())
	}
	noCommands(t, "concise", b.String())
	b.Reset()
	// Every deterministic function listed: each id is rendered.
	if err := WriteTextWith(&b, r, TextOptions{Deterministic: true}); err != nil {
		t.Fatal(err)
	}
	if bad := controls(b.String()); len(bad) > 0 {
		t.Errorf("control characters in the text output: %v\n%q", bad, b.String())
	}
	noCommands(t, "text", b.String())
	for _, want := range []string{"nondeterministic  evil/a::b.py::nowit\n         (the report holds no witness)", "\u00ad\\x3a:error::loc#\u200b#\\x5bstop-commands]t:1:", "  \\x3a:error::deterministic::d", "##\\x5badd-mask]x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
	if !strings.Contains(b.String(), `f\x1b[31m\x00\x07\x0d\x0a\x9b2J`) {
		t.Errorf("the id is not there, escaped:\n%s", b.String())
	}
	b.Reset()
	if err := WriteTextColor(&b, r, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, a := range []ansi{reset, bold, red, green, yellow} {
		out = strings.ReplaceAll(out, string(a), "")
	}
	if bad := controls(out); len(bad) > 0 {
		t.Errorf("control characters, besides the renderer's colours, in the colour text output: %v\n%q", bad, out)
	}
}

func checkJUnit(t *testing.T, r *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the JUnit output is not XML: %v\n%s", err, b.String())
		}
	}
	var s junitSuites
	if err := xml.Unmarshal(b.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, suite := range s.Suites {
		if suite.Name != "evil/a::b.py" {
			continue
		}
		for _, c := range suite.Cases {
			name, _, _ := strings.Cut(c.Name, "\uFFFD") // encoding/xml writes ESC as U+FFFD
			cases = append(cases, name)
		}
	}
	if got := strings.Join(cases, " "); got != "det f g look nowit np quiet" {
		t.Errorf("the suite evil/a::b.py has cases %q; suites %+v", got, s.Suites)
	}
	for i, c := range b.Bytes() {
		if c < 0x20 && c != '\n' {
			t.Fatalf("raw control byte %#x at %d in the JUnit output", c, i)
		}
	}
}

func checkSARIF(t *testing.T, r *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSARIF(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct{ Name string } `json:"driver"`
			} `json:"tool"`
			Results []struct {
				Properties map[string]any `json:"properties"`
				Locations  []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("the SARIF output is not JSON: %v", err)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].Tool.Driver.Name != r.Tool.Name {
		t.Fatalf("runs %+v", doc.Runs)
	}
	uris := map[string]string{}
	for _, res := range doc.Runs[0].Results {
		uris[fmt.Sprint(res.Properties["id"])] = res.Locations[0].PhysicalLocation.ArtifactLocation.URI
	}
	for _, f := range r.Functions {
		if f.Verdict != VerdictNondeterministic && f.Verdict != VerdictLook {
			continue
		}
		uri, ok := uris[f.ID]
		if !ok {
			t.Errorf("the SARIF does not carry the id %q as it was: %q", f.ID, uris)
		}
		if file, _ := SplitID(f.ID); file == "evil/a::b.py" && uri != "src/evil/a::b.py" {
			t.Errorf("%q is at %q, want src/evil/a::b.py", f.ID, uri)
		}
	}
}

func checkHTML(t *testing.T, r *Report) {
	t.Helper()
	var b strings.Builder
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(strings.ToLower(out), "<script"); n != 1 {
		t.Errorf("%d <script> in the page, want the page's own one", n)
	}
	if !strings.Contains(out, "no witness for this finding") {
		t.Error("the finding with no witness is not on the page")
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the forged markup is not on the page, escaped")
	}
}

// TestHostileReportRendersInert renders forged reports, as they are and
// as merge reads them from JSON, in every format.
func TestHostileReportRendersInert(t *testing.T) {
	for _, name := range forgedToolNames {
		r := hostile(name)
		if err := r.Validate(); err != nil {
			t.Fatalf("the forged report breaks a rule, so it tests nothing: %v", err)
		}
		for _, c := range []struct {
			how string
			r   *Report
		}{{"as written", r}, {"merged from JSON", viaMerge(t, hostile(name))}} {
			t.Run(fmt.Sprintf("%q %s", name, c.how), func(t *testing.T) {
				checkGitHub(t, c.r)
				checkText(t, c.r)
				checkJUnit(t, c.r)
				checkSARIF(t, c.r)
				checkHTML(t, c.r)
				var b bytes.Buffer
				if err := WriteJSON(&b, c.r); err != nil || !json.Valid(b.Bytes()) {
					t.Errorf("the JSON output is not JSON: %v", err)
				}
			})
		}
	}
}

// TestEscapersNeverPassControls checks the escapers on every byte and on
// bytes that are not UTF-8, which JSON never hands over but a scan can.
func TestEscapersNeverPassControls(t *testing.T) {
	var all []byte
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
	}
	s := string(all) + "\u0085\u009b\u00ad"
	if bad := controls(TerminalSafe(s)); len(bad) > 0 {
		t.Errorf("TerminalSafe passes %v", bad)
	}
	if got := TerminalSafe("\x9b2J"); got != `\x9b2J` {
		t.Errorf("a lone 0x9b byte is %q", got)
	}
	for _, esc := range []func(string) string{ghData, ghProperty} {
		out := esc(s)
		if bad := controls(out); len(bad) > 0 {
			t.Errorf("github escaping passes %v", bad)
		}
		if strings.ContainsAny(out, "#\n\r") {
			t.Errorf("github escaping passes # or a line break: %q", out)
		}
	}
	if got := ghProperty("a:b,c%d\ne\x1bf"); got != "a%3Ab%2Cc%25d%0Ae%1Bf" {
		t.Errorf("property escaped as %q", got)
	}
	if got := runnerUnescapeProperty(ghProperty("x::y,%0A:")); got != "x::y,%0A:" {
		t.Errorf("the runner reads the property back as %q", got)
	}
}

func TestSplitID(t *testing.T) {
	for _, c := range []struct{ id, file, name string }{
		{"pkg/mod.py::f", "pkg/mod.py", "f"},
		{"a::b.py::f", "a::b.py", "f"},
		{"dir::x/a::b.py::Class.method", "dir::x/a::b.py", "Class.method"},
		{"mod.py", "mod.py", ""},
		{"mod.py::", "mod.py", ""},
		{"::f", "", "f"},
		{"", "", ""},
	} {
		if file, name := SplitID(c.id); file != c.file || name != c.name {
			t.Errorf("SplitID(%q) = %q, %q; want %q, %q", c.id, file, name, c.file, c.name)
		}
	}
	// Every renderer places a::b.py::f in a::b.py.
	r := &Report{Tool: Tool{Name: "t"}, Runs: []sandbox.RunConditions{{ID: 0}, {ID: 1}},
		Modules: []Module{{Path: "a::b.py", Status: "ok", Location: "repo/a::b.py"}, {Path: "c::d.py", Status: "unreadable", Location: "repo/c::d.py"}}}
	f := r.AddFunction("a::b.py::f", 2)
	f.Verdict, f.Witness = VerdictNondeterministic, &Witness{Answers: []Answer{{0, "V:1"}, {1, "V:2"}}}
	r.Finish()
	if got := r.locator()("a::b.py::f"); got != "repo/a::b.py" {
		t.Errorf("located at %q", got)
	}
	var b strings.Builder
	if err := WriteSARIF(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"uri": "repo/c::d.py"`) {
		t.Errorf("the unreadable module c::d.py is not placed at its location:\n%s", b.String())
	}
	// An id with no "::" renders too (SARIF's fingerprint split used to
	// panic on one).
	r.Functions[0].ID = "nofunction.py"
	if err := WriteSARIF(io.Discard, r); err != nil {
		t.Fatal(err)
	}
}

// TestMergeRefusesMalformedParts: a part read from elsewhere is checked
// before anything renders it, and the error names the part and the fault.
func TestMergeRefusesMalformedParts(t *testing.T) {
	part := func(k, of int) *Report {
		r := &Report{Tool: Tool{Name: "nondet-sandbox", Version: "t"}, Seed: 1, Targets: []string{"src"},
			Runs:    []sandbox.RunConditions{{ID: 0, Purpose: "main"}, {ID: 1, Purpose: "main"}},
			Modules: []Module{{Path: fmt.Sprintf("m%d.py", k), Status: "ok"}}, Part: &Part{Index: k, Of: of}}
		f := r.AddFunction(fmt.Sprintf("m%d.py::f", k), 1)
		f.Verdict, f.Causes = VerdictNondeterministic, []string{"hash-seed"}
		f.Witness = &Witness{Args: []string{}, Answers: []Answer{{0, "V:1"}, {1, "V:2"}}}
		r.Finish()
		return r
	}
	if whole, err := Merge([]*Report{part(2, 2), part(1, 2)}); err != nil || len(whole.Functions) != 2 {
		t.Fatalf("well-formed parts: %v", err)
	}
	for _, c := range []struct {
		name      string
		spoil     func(a, b *Report)
		malformed bool
		want      []string
	}{
		{"null function", func(a, b *Report) { b.Functions = append(b.Functions, nil) }, true,
			[]string{"report 2 (part 2 of 2)", "function 2 is null"}},
		{"witness run out of range", func(a, b *Report) { b.Functions[0].Witness.Answers[1].Run = 7 }, true,
			[]string{"report 2 (part 2 of 2)", `"m2.py::f"`, "names run 7", "2 runs"}},
		{"negative witness run", func(a, b *Report) { a.Functions[0].Witness.Answers[0].Run = -1 }, true,
			[]string{"report 1 (part 1 of 2)", "names run -1"}},
		{"order-sensitive witness run out of range", func(a, b *Report) {
			a.Functions[0].OrderSensitive = &Witness{Answers: []Answer{{0, "a"}, {2, "b"}}}
		}, true, []string{"report 1", "order-sensitive witness names run 2"}},
		{"one answer", func(a, b *Report) { a.Functions[0].Witness.Answers = a.Functions[0].Witness.Answers[:1] }, true,
			[]string{"report 1", "1 answers, not 2"}},
		{"negative rung", func(a, b *Report) { a.Functions[0].Witness.Rung = -3 }, true,
			[]string{"report 1", "rung -3"}},
		{"id that is not FILE::function", func(a, b *Report) { b.Functions[0].ID = "m2.py" }, true,
			[]string{"report 2", `id "m2.py" is not FILE::function`}},
		{"run out of place", func(a, b *Report) { a.Runs[1].ID = 5 }, true,
			[]string{"report 1", "run 1 has id 5"}},
		{"negative part index", func(a, b *Report) { a.Part.Index = -1 }, true,
			[]string{"report 1 (part -1 of 2)", "part -1 of 2 (a part is counted from 1"}},
		{"part index past the total", func(a, b *Report) { b.Part.Index = 3 }, true,
			[]string{"report 2 (part 3 of 2)"}},
		{"total of zero", func(a, b *Report) { a.Part.Of, b.Part.Of = 0, 0; a.Part.Index = 0 }, true,
			[]string{"report 1 (part 0 of 0)"}},
		{"no part", func(a, b *Report) { b.Part = nil }, false,
			[]string{"report 2 is not a part"}},
		{"function in two parts", func(a, b *Report) { b.Functions[0].ID = "m1.py::f" }, false,
			[]string{`function "m1.py::f" is in part 1 and in part 2`}},
		{"a huge total", func(a, b *Report) { a.Part.Of, b.Part.Of = 1<<62, 1<<62 }, false,
			[]string{"part 3, 4,", "more of 4611686018427387904 is missing"}},
		// A part that scanned nothing is not compared with the others:
		// its witnesses are checked against the runs of the whole.
		{"empty part's witness past the whole's runs", func(a, b *Report) {
			b.Modules = nil
			b.Runs = append(b.Runs, sandbox.RunConditions{ID: 2})
			b.Functions[0].Witness.Answers[1].Run = 2
		}, true, []string{"part 2 of 2", "names run 2", "2 runs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := part(1, 2), part(2, 2)
			c.spoil(a, b)
			_, err := Merge([]*Report{a, b})
			if err == nil {
				t.Fatal("merged")
			}
			if !errors.Is(err, ErrParts) || errors.Is(err, ErrMalformed) != c.malformed {
				t.Errorf("error %v: ErrParts %v, ErrMalformed %v", err, errors.Is(err, ErrParts), errors.Is(err, ErrMalformed))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := Merge([]*Report{nil}); !errors.Is(err, ErrParts) {
		t.Errorf("a null part: %v", err)
	}
	// A baseline with a null function is skipped over, not a panic.
	r := part(1, 1)
	r.ApplyBaseline(&Report{Functions: []*Function{nil, {ID: "m1.py::f", Verdict: VerdictNondeterministic, Causes: []string{"hash-seed"}}}})
	if !r.Functions[0].InBaseline {
		t.Error("the baseline's finding was not applied")
	}
}
