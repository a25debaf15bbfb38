package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// findingText is one line about a finding: the input, the two answers,
// what moved them.
func findingText(f *Function) string {
	w := f.Witness
	if w == nil || len(w.Answers) < 2 {
		text := f.ID + " is nondeterministic (the report holds no witness)"
		if len(f.Causes) > 0 {
			text += "; causes: " + strings.Join(f.Causes, ", ")
		}
		return text
	}
	text := fmt.Sprintf("%s gave two answers to %s: %s then %s", f.ID, w.Input(),
		clip(w.Answers[0].Value, 120), clip(w.Answers[1].Value, 120))
	if len(f.Causes) > 0 {
		text += "; causes: " + strings.Join(f.Causes, ", ")
	}
	if d := w.DivergedAt; d != nil {
		text += "; diverged at " + clip(d.String(), 200)
	}
	return text
}

// annotationAt is where a finding's annotation goes: the scanned line at
// which its runs parted, else its def.
func annotationAt(f *Function, where func(id string) string, file func(string) string) (string, int) {
	if f.Verdict == VerdictNondeterministic && f.Witness != nil {
		if d := f.Witness.TreeLine(); d != nil && d.Line > 0 {
			return file(d.File), d.Line
		}
	}
	return where(f.ID), max(f.Line, 1)
}

// WriteGitHub writes GitHub Actions workflow commands: a warning per
// finding at the line where its runs parted, else its def (an annotation
// on the pull request), a notice per look, and a summary line.
//
// The runner takes any line that starts with "::" (after white space) for
// a command, and "##[" anywhere in a line for a legacy one (add-mask,
// stop-commands, error, ...); a report may come from elsewhere (merge
// reads CI artifacts). So every field of the report goes through ghData
// or ghProperty: the only lines that start with "::" are the annotations
// written here, whose properties cannot hold "::" and whose message
// cannot end the line; and the summary line starts with the tool's name
// escaped as a property, which holds no ":" at all.
func WriteGitHub(w io.Writer, r *Report, opts TextOptions) error {
	where, file := r.locator(), r.fileLocator()
	var b strings.Builder
	fs := slices.Clone(r.Functions)
	byPlace(fs)
	for _, f := range fs {
		var kind, title, text string
		switch {
		case f.IsSuppressed():
			continue
		case f.Verdict == VerdictNondeterministic && f.InBaseline:
			kind, title, text = "notice", "nondeterministic (in the baseline)", findingText(f)
		case f.Verdict == VerdictNondeterministic:
			kind, title, text = "warning", "nondeterministic", findingText(f)
		case f.Verdict == VerdictLook && opts.Looks:
			kind, title, text = "notice", "look", f.ID+": "+f.Reason
		default:
			continue
		}
		at, line := annotationAt(f, where, file)
		fmt.Fprintf(&b, "::%s file=%s,line=%d,title=%s::%s\n", kind, ghProperty(at), line, ghProperty(title), ghData(text))
	}
	c := r.Census
	fmt.Fprintf(&b, "%s: %d nondeterministic, %d deterministic, %d look, %d not probed\n", ghProperty(r.Tool.Name), c.Nondeterministic, c.Deterministic, c.Look, c.NotProbed)
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command's message as the runner unescapes it
// (%25, %0D, %0A), and more that it does not unescape, so that the line
// stays one line of text with no command in it:
//
//   - every other C0 control, DEL and C1 control (U+0080 to U+009F), and
//     any byte that is not UTF-8, as the percent-encoding of its bytes
//     (ESC is %1B, U+009B is %C2%9B). Not U+FFFD: the reader of the log
//     sees which character it was, and since "%" is always %25 the runner
//     can never turn one of these back into a control character. The log
//     viewer interprets ANSI escapes, so ESC must not reach it raw;
//   - "#" as %23, so that no legacy "##[command]" can form: the runner
//     looks for one anywhere in a line, with .NET's culture-aware
//     IndexOf, which may skip ignorable characters (a soft hyphen) between
//     the two "#", so escaping "[" only after "##" would not do.
func ghData(s string) string { return ghEscape(s, false) }

// ghProperty escapes as ghData, and ":" and "," too (%3A, %2C), as the
// runner unescapes a command's properties: a property cannot end the
// command's properties or start another.
func ghProperty(s string) string { return ghEscape(s, true) }

func ghEscape(s string, property bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '%' || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r == utf8.RuneError && n == 1),
			r == '#', property && (r == ':' || r == ','):
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// JUnit's XML as CI systems read it (Jenkins, GitLab, Azure, the
// test-report actions): one test suite per module, one test case per
// function; a finding is a failure, a look or a function not probed is
// skipped.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	File     string      `xml:"file,attr,omitempty"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *Report) error {
	where := r.locator()
	out := junitSuites{Name: r.Tool.Name}
	index := map[string]int{}
	for _, f := range r.Functions {
		file, name := SplitID(f.ID)
		i, ok := index[file]
		if !ok {
			i = len(out.Suites)
			index[file] = i
			out.Suites = append(out.Suites, junitSuite{Name: file, File: where(f.ID)})
		}
		s := &out.Suites[i]
		c := junitCase{Name: name, ClassName: strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", "."), File: where(f.ID), Line: f.Line}
		switch {
		case f.IsSuppressed():
			c.Skipped = &junitSkipped{Message: "nondeterministic, ignored in the source: " + findingText(f)}
			s.Skipped++
		case f.Verdict == VerdictNondeterministic && f.InBaseline:
			c.Skipped = &junitSkipped{Message: "nondeterministic, in the baseline: " + findingText(f)}
			s.Skipped++
		case f.Verdict == VerdictNondeterministic:
			c.Failure = &junitFailure{Message: "nondeterministic", Type: "nondeterministic", Text: findingText(f) + "\n" + witnessConditions(r, f)}
			// The failure points where the runs parted, as a test
			// failure points at the assertion.
			c.File, c.Line = annotationAt(f, where, r.fileLocator())
			s.Failures++
		case f.Verdict == VerdictLook || f.Verdict == VerdictNotProbed:
			c.Skipped = &junitSkipped{Message: f.Verdict + ": " + f.Reason}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, s := range out.Suites {
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// witnessConditions lists the two witness runs' conditions, one per line.
func witnessConditions(r *Report, f *Function) string {
	if f.Witness == nil {
		return ""
	}
	var lines []string
	seen := map[int]bool{}
	for _, a := range f.Witness.Answers {
		if run := r.RunOf(f, a.Run); !seen[a.Run] {
			seen[a.Run] = true
			lines = append(lines, fmt.Sprintf("run %d: %s", run.ID, run.Describe()))
		}
	}
	if ownRuns(f) {
		lines = append(lines, fmt.Sprintf("(runs of the scan of %s, seed %d, whose verdict the cache kept)", f.Cached.Date, f.Cached.Seed))
	}
	return strings.Join(lines, "\n")
}
