package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText writes the report for people: findings first, each with its
// witness, then the other verdicts and a census.
func WriteText(w io.Writer, r *Report) error { return WriteTextColor(w, r, false) }

// WriteTextColor is WriteText, in colour when color is set (a terminal
// that has not asked for none: NO_COLOR, TERM=dumb).
func WriteTextColor(w io.Writer, r *Report, color bool) error {
	return WriteTextWith(w, r, TextOptions{Color: color})
}

// TextOptions say how the text report reads.
type TextOptions struct {
	// Color writes terminal colours.
	Color bool
	// Deterministic lists every deterministic function; without it they
	// are counted, and only those with a fact beside the verdict (moved by
	// another function, or moving one) are listed.
	Deterministic bool
	// Looks annotates each look too (GitHub's format, where they would be
	// a notice each); the text report lists them anyway.
	Looks bool
	// Path turns a file's path as the report has it (from the repository
	// root) into one that resolves from the reader's working directory, as
	// linters print theirs; nil leaves it.
	Path func(string) string
}

// where is the report's locator, with the paths it found under the
// repository root as opts.Path shows them.
func (o TextOptions) where(r *Report) func(id string) string {
	where := r.locator()
	if o.Path == nil {
		return where
	}
	located := map[string]bool{}
	for _, m := range r.Modules {
		located[m.Path] = m.Location != ""
	}
	return func(id string) string {
		if file, _ := SplitID(id); located[file] {
			return o.Path(where(id))
		}
		return where(id)
	}
}

// listedIDs bounds the ids a group of looks or functions not probed lists
// in text; the JSON report lists them all.
const listedIDs = 8

// WriteTextWith is WriteText as opts say. Every finding's runs are
// described once, at the top; a finding names the conditions that moved
// it with their two values.
func WriteTextWith(w io.Writer, r *Report, opts TextOptions) error {
	var out strings.Builder
	p := &printer{w: &out, color: opts.Color}
	p.f("nondet-sandbox %s · runtime %s · %d runs · seed %d · %d interpreters started\n",
		r.Tool.Version, r.Runtime, len(r.Runs), r.Seed, r.Processes)
	if r.Partial {
		p.f("PARTIAL: the scan was interrupted; what ran is judged, what some run never called is not probed\n")
	}
	if r.CallerHashSeed != "" {
		p.f("note: PYTHONHASHSEED=%s is set in your environment; it was not passed on (each run sets its own)\n", r.CallerHashSeed)
	}
	for _, s := range r.Skipped {
		p.f("note: %s not varied: %s\n", s.Condition, s.Reason)
	}
	findings := r.Findings()
	p.runs(r, findings)
	head := green
	if len(findings) > 0 {
		head = red
	}
	p.f("\n%sFINDINGS — %d%s", p.on(head), len(findings), p.on(reset))
	if len(findings) > 0 {
		p.f(", each with a witness:")
	}
	p.f("\n")
	// Each finding's first line starts with FILE:LINE: so an editor or a
	// terminal can jump to the def.
	where := opts.where(r)
	for _, f := range findings {
		wt := f.Witness
		known := ""
		if f.InBaseline {
			known = "   (in the baseline: does not fail the scan)"
		}
		p.f("%s:%d: %snondeterministic%s  %s%s%s%s\n", where(f.ID), max(f.Line, 1), p.on(red), p.on(reset), p.on(bold), f.ID, p.on(reset), known)
		if wt == nil || len(wt.Answers) < 2 {
			p.f("         (the report holds no witness)\n")
		} else {
			p.witness(r, f, wt, f.Causes)
		}
		if d := describeCauses(f.Causes); d != "" {
			p.f("         %s\n", d)
		}
		if f.CauseNote != "" {
			label := "unattributed"
			if len(f.Causes) > 0 {
				label = f.Causes[0]
			}
			p.f("         %s: %s\n", label, f.CauseNote)
		}
		p.smells(f)
		p.contained(f)
	}
	if len(findings) > 0 {
		p.f("  a witness is a fact: each of these functions gave two answers to one input\n")
	}
	var ignored []string
	heading := "ignored in the source (# nondet: ignore)"
	for _, f := range r.Functions {
		if f.IsSuppressed() {
			line, how := f.Line, ""
			if f.Suppressed != nil {
				line = f.Suppressed.Line
			}
			if len(f.Ignored) > 0 {
				how = "; the configuration ignores " + strings.Join(f.Ignored, ", ")
				heading = "ignored in the source (# nondet: ignore) or by --ignore, --select"
			}
			ignored = append(ignored, fmt.Sprintf("%s:%d: %s (causes: %s%s)", where(f.ID), line, f.ID, strings.Join(f.Causes, ", "), how))
		}
	}
	if len(ignored) > 0 {
		p.f("\n%s — %d, nondeterministic all the same:\n", heading, len(ignored))
		for _, line := range ignored {
			p.f("%s\n", line)
		}
	}
	var sensitive []*Function
	for _, f := range r.Functions {
		if f.OrderSensitive != nil && len(f.OrderSensitive.Answers) >= 2 {
			sensitive = append(sensitive, f)
		}
	}
	if len(sensitive) > 0 {
		p.f("\nEQUAL INPUTS, TWO ANSWERS — %d: the answer follows a dict argument's key order (not nondeterminism, not counted as a finding)\n", len(sensitive))
		for _, f := range sensitive {
			wt := f.OrderSensitive
			p.f("%s:%d: order-sensitive  %s\n", where(f.ID), max(f.Line, 1), f.ID)
			p.f("         %s -> %s  then, with every dict's keys reversed,  %s\n", wt.Input(),
				clip(wt.Answers[0].Value, 60), clip(wt.Answers[1].Value, 60))
		}
	}
	var det []*Function
	all := 0
	for _, f := range r.Functions {
		if f.Verdict == VerdictDeterministic {
			all++
			if opts.Deterministic || f.MovedBy != nil || len(f.Moves) > 0 {
				det = append(det, f)
			}
		}
	}
	if all > 0 {
		p.f("\n%sdeterministic — no run disagreed, which is not a guarantee — %d%s", p.on(green), all, p.on(reset))
		switch {
		case len(det) == all:
			p.f("\n")
		case len(det) > 0:
			p.f(" (these %d with a fact beside the verdict; --show deterministic lists every one)\n", len(det))
		default:
			p.f(" (--show deterministic lists them)\n")
		}
		for _, f := range det {
			p.f("  %-40s %s\n", f.ID, strings.TrimPrefix(f.Reason, "no run disagreed; not a guarantee; "))
			if m := f.MovedBy; m != nil {
				who := m.Culprit
				if who == "" {
					who = "functions called before it (bisection named none)"
				}
				p.f("         moved by state that %s left: alone %s, in run %d after it %s\n", who, clip(m.Alone, 40), m.Run, clip(m.Moved, 40))
				if d := m.DivergedAt; d != nil {
					p.f("         alone and after it, diverged at %s\n", clip(d.String(), 200))
				}
			}
			if len(f.Moves) > 0 {
				p.f("         leaves state behind that moved: %s\n", strings.Join(f.Moves, ", "))
			}
			p.smells(f)
			p.contained(f)
		}
	}
	// Looks and functions not probed, grouped by what stopped them.
	for _, g := range []struct{ verdict, title string }{
		{VerdictLook, "look — the ladder never reached the body"},
		{VerdictNotProbed, "not probed"},
	} {
		groups := groupByReason(r.Functions, g.verdict)
		n := 0
		for _, gr := range groups {
			n += len(gr.IDs)
		}
		if n == 0 {
			continue
		}
		p.f("\n%s%s — %d%s\n", p.on(groupColor[g.verdict]), g.title, n, p.on(reset))
		for _, gr := range groups {
			shown, more := gr.IDs[:min(len(gr.IDs), listedIDs)], ""
			if len(gr.IDs) > len(shown) {
				more = fmt.Sprintf(", and %d more", len(gr.IDs)-len(shown))
			}
			p.f("  %d: %s\n         %s%s\n", len(gr.IDs), gr.Reason, strings.Join(shown, ", "), more)
		}
	}
	var bad []string
	ok := 0
	for _, m := range r.Modules {
		if m.Status == "ok" {
			ok++
			continue
		}
		bad = append(bad, fmt.Sprintf("  %s: %s: %s", m.Path, m.Status, m.Error))
	}
	p.f("\nmodules: %d ok, %d not\n", ok, len(bad))
	for _, b := range bad {
		p.f("%s\n", b)
	}
	if n := len(r.Excluded); n > 0 {
		shown := r.Excluded[:min(n, 5)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(", and %d more (the JSON report lists them)", n-len(shown))
		}
		p.f("excluded by include/exclude or .gitignore: %d files: %s%s\n", n, strings.Join(shown, ", "), more)
	}
	if n := len(r.UnusedSuppressions); n > 0 {
		shown := r.UnusedSuppressions[:min(n, 5)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf(", and %d more (the JSON report lists them)", n-len(shown))
		}
		p.f("unused ignore comments (no finding to suppress; remove them): %s%s\n", strings.Join(shown, ", "), more)
	}
	c := r.Census
	p.f("census: %d nondeterministic · %d deterministic · %d look · %d not probed",
		c.Nondeterministic, c.Deterministic, c.Look, c.NotProbed)
	if c.Methods > 0 {
		p.f(" (%s, %s)", count(len(r.Functions)-c.Methods, "function"), count(c.Methods, "method"))
	}
	p.f("\n")
	if c.TestCases > 0 {
		p.f("test cases: %s not probed (their runner sets them up)\n", count(c.TestCases, "method"))
	}
	switch {
	case c.Probed > 0 && c.MethodsProbed > 0:
		p.f("reach: %d of %d probed functions and %d of %d probed methods had a call enter their body (a clean report speaks for those)\n",
			c.Reached-c.MethodsReached, c.Probed-c.MethodsProbed, c.MethodsReached, c.MethodsProbed)
	case c.Probed > 0:
		p.f("reach: %d of %d probed functions had a call enter their body (a clean report speaks for those)\n", c.Reached, c.Probed)
	}
	switch cu := r.Cache; {
	case cu == nil:
	case cu.Reused == 0:
		p.f("cache: no module's verdicts could be reused; these %d are kept for the next scan\n", cu.Modules)
	default:
		p.f("cache: %d of %d modules unchanged, their verdicts reused from earlier scans (--no-cache scans them again)\n", cu.Reused, cu.Modules)
	}
	for _, pk := range r.Packages {
		pc := pk.Census
		p.f("  %s %s: %d nondeterministic · %d deterministic · %d look · %d not probed\n", pk.Name, pk.Version,
			pc.Nondeterministic, pc.Deterministic, pc.Look, pc.NotProbed)
	}
	if c.Suppressed > 0 || c.InBaseline > 0 {
		p.f("of the nondeterministic: %d ignored in the source · %d in the baseline · %d failing\n", c.Suppressed, c.InBaseline, len(r.Failing()))
	}
	if c.OrderSensitive > 0 || c.MovedByOthers > 0 {
		p.f("beside the verdicts: %d order-sensitive · %d moved only by state other functions left\n", c.OrderSensitive, c.MovedByOthers)
	}
	if p.err != nil {
		return p.err
	}
	_, err := io.WriteString(w, notCommands(out.String()))
	return err
}

// notCommands keeps text from being taken for workflow commands where a
// CI runner prints it (GitHub Actions: a line that starts with "::" after
// white space, or "##[" anywhere in a line; the runner's comparison may
// skip format characters such as a soft hyphen): the first ":" of such a
// line is written \x3a and such a "[" \x5b, as TerminalSafe writes
// escapes. A line the renderer writes itself never starts with "::" nor
// holds "##[": only a field of the report can make one.
func notCommands(text string) string {
	ignorable := func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }
	var b strings.Builder
	for line := range strings.SplitAfterSeq(text, "\n") {
		if rest := strings.TrimLeftFunc(line, ignorable); strings.HasPrefix(rest, "::") {
			b.WriteString(line[:len(line)-len(rest)])
			b.WriteString(`\x3a`)
			line = rest[1:]
		}
		hashes := 0 // "#" just before, format characters aside
		for i := 0; i < len(line); {
			r, n := utf8.DecodeRuneInString(line[i:])
			switch {
			case r == '#':
				hashes++
			case r == '[' && hashes >= 2:
				b.WriteString(`\x5b`)
				hashes, i = 0, i+n
				continue
			case !unicode.Is(unicode.Cf, r):
				hashes = 0
			}
			b.WriteString(line[i : i+n])
			i += n
		}
	}
	return b.String()
}

// witness prints a finding's input, its two answers and the runs that
// gave them: for two runs, the conditions among its causes, with the value
// each run had.
func (p *printer) witness(r *Report, f *Function, wt *Witness, causes []string) {
	order := ""
	if wt.OrderOnly {
		order = "   (order only)"
	}
	p.f("         %s -> %s  then  %s%s\n", wt.Input(),
		clip(wt.Answers[0].Value, 60), clip(wt.Answers[1].Value, 60), order)
	switch wt.Breaker {
	case BreakerRepeat:
		p.f("         both in run %d, calling twice with the same input\n", wt.Answers[0].Run)
	case BreakerOrderFree:
		p.f("         both in run %d, the second with the argument declared order-free reversed\n", wt.Answers[0].Run)
	default:
		a, b := r.RunOf(f, wt.Answers[0].Run), r.RunOf(f, wt.Answers[1].Run)
		var moved []string
		for _, c := range causes {
			if v, ok := sandbox.VariedCondition(sandbox.Condition(c)); ok && !v.Same(a, b) {
				moved = append(moved, fmt.Sprintf("%s %s → %s", v.Label, shown(v.Show(a)), shown(v.Show(b))))
			}
		}
		if len(moved) == 0 {
			p.f("         runs %d and %d\n", a.ID, b.ID)
		} else {
			p.f("         runs %d and %d: %s\n", a.ID, b.ID, strings.Join(moved, ", "))
		}
		if ownRuns(f) {
			p.f("         (runs of the scan of %s, seed %d, whose verdict the cache kept)\n", f.Cached.Date, f.Cached.Seed)
			p.f("           run %d: %s\n           run %d: %s\n", a.ID, a.Describe(), b.ID, b.Describe())
		}
	}
	if d := wt.DivergedAt; d != nil {
		p.f("         diverged at %s\n", clip(d.String(), 200))
	} else if wt.NoDivergence != "" {
		p.f("         no divergence line: %s\n", wt.NoDivergence)
	}
}

// shown is a condition's value in a sentence: "none" when it has none.
func shown(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// runs describes, once, every run a finding's witness names.
func (p *printer) runs(r *Report, findings []*Function) {
	named := map[int]bool{}
	for _, f := range findings {
		if f.Witness != nil && !ownRuns(f) {
			for _, a := range f.Witness.Answers {
				named[a.Run] = true
			}
		}
	}
	if len(named) == 0 {
		return
	}
	p.f("runs the witnesses name:\n")
	for i := range r.Runs {
		if named[r.Runs[i].ID] {
			p.f("  run %d: %s\n", r.Runs[i].ID, r.Runs[i].Describe())
		}
	}
}

type printer struct {
	w     io.Writer
	err   error
	color bool
}

// ansi is a terminal escape the renderer writes itself: its own type, so
// f does not escape it as it escapes what the scanned code wrote.
type ansi string

const (
	reset  ansi = "\x1b[0m"
	bold   ansi = "\x1b[1m"
	red    ansi = "\x1b[1;31m"
	green  ansi = "\x1b[32m"
	yellow ansi = "\x1b[33m"
)

var groupColor = map[string]ansi{VerdictDeterministic: green, VerdictLook: yellow, VerdictNotProbed: bold}

// on is the escape when in colour, else nothing.
func (p *printer) on(a ansi) ansi {
	if !p.color {
		return ""
	}
	return a
}

// f prints with every string argument made safe for a terminal: names,
// values and messages come from the scanned code, or from a report read
// from elsewhere, and an escape sequence in one must not reach the
// reader's terminal.
func (p *printer) f(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = TerminalSafe(s)
		}
	}
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// TerminalSafe writes what a terminal would act on as visible escapes:
// every C0 control (tab, newline and carriage return too: a field's text
// never lays out lines), DEL and C1 control (U+0080 to U+009F, CSI among
// them) as \xNN of the character, a bidirectional control as \uNNNN,
// and a byte that is not UTF-8 as \xNN
// of the byte (a lone 0x9b is CSI to an 8-bit terminal). Everything the
// text report prints from a report goes through it; print a report's
// field anywhere else (replay, a note) through it too.
func TerminalSafe(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r > 0xff && unsafeRune(r, n):
			fmt.Fprintf(&b, "\\u%04x", r)
		case unsafeRune(r, n):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune says whether a decoded rune (n bytes long) is a control
// character, a bidirectional control (which reorders what is shown, as
// in trojan-source attacks) or a byte that is not UTF-8.
func unsafeRune(r rune, n int) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r == utf8.RuneError && n == 1) ||
		r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func (p *printer) contained(f *Function) {
	if len(f.Contained) == 0 {
		return
	}
	seen := map[string][]int{}
	var order []string
	for _, e := range f.Contained {
		key := e.Kind + ": " + e.Detail
		if _, ok := seen[key]; !ok {
			order = append(order, key)
		}
		seen[key] = append(seen[key], e.Run)
	}
	for _, k := range order {
		p.f("         contained: %s (runs %s)\n", k, joinInts(seen[k]))
	}
}

// smells prints suspicions beside a verdict, never as one.
func (p *printer) smells(f *Function) {
	if len(f.Smells) == 0 {
		return
	}
	var parts []string
	for _, s := range f.Smells {
		if s.Kind == "set-iteration" {
			parts = append(parts, fmt.Sprintf("iteration over a set (line %d)", s.Line))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s (line %d)", s.Kind, s.Call, s.Line))
	}
	p.f("         smells (a suspicion, not a verdict; %d runs): %s\n", f.Runs, strings.Join(parts, ", "))
}

func joinInts(xs []int) string {
	var out []string
	seen := map[int]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, fmt.Sprint(x))
		}
	}
	return strings.Join(out, ",")
}

// RunOf is the conditions of run i as f's witness names it: this
// report's run, or, for a verdict reused from the cache with other runs,
// that scan's; none when neither describes it (Validate refuses such a
// report; the renderers do not panic).
func (r *Report) RunOf(f *Function, i int) sandbox.RunConditions {
	runs := r.RunsOf(f)
	if i < 0 || i >= len(runs) {
		return sandbox.RunConditions{ID: i}
	}
	return runs[i]
}

// RunsOf are the runs f's witness and moved_by name: this report's, or
// those of the earlier scan a cached verdict comes from.
func (r *Report) RunsOf(f *Function) []sandbox.RunConditions {
	if f != nil && ownRuns(f) {
		return f.Cached.Runs
	}
	return r.Runs
}

// ownRuns is whether f's witness names runs of another scan than r's.
func ownRuns(f *Function) bool { return f.Cached != nil && len(f.Cached.Runs) > 0 }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// describeCauses is the text for a finding's causes.
func describeCauses(c []string) string {
	if len(c) == 0 {
		return ""
	}
	return fmt.Sprintf("causes: %s", strings.Join(c, ", "))
}

// WriteConcise writes one line per finding, as linters print theirs:
// FILE:LINE: causes: id, the file as opts.Path shows it.
func WriteConcise(w io.Writer, r *Report, opts TextOptions) error {
	var out strings.Builder
	p := &printer{w: &out}
	where := opts.where(r)
	findings := r.Findings()
	if len(findings) == 0 {
		c := r.Census
		p.f("no findings: %d deterministic, %d look, %d not probed\n", c.Deterministic, c.Look, c.NotProbed)
	}
	for _, f := range findings {
		causes := strings.Join(f.Causes, ",")
		if causes == "" {
			causes = "nondeterministic"
		}
		known := ""
		if f.InBaseline {
			known = " (in the baseline)"
		}
		p.f("%s:%d: %s: %s%s\n", where(f.ID), max(f.Line, 1), causes, f.ID, known)
	}
	if cu := r.Cache; cu != nil && cu.Reused > 0 {
		p.f("cache: %d of %d modules unchanged\n", cu.Reused, cu.Modules)
	}
	if p.err != nil {
		return p.err
	}
	_, err := io.WriteString(w, notCommands(out.String()))
	return err
}

// count is n and a noun, plural but for one.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
