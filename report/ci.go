package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// findingText is one line about a finding: the input, the two answers,
// what moved them.
func findingText(f *Function) string {
	w := f.Witness
	text := fmt.Sprintf("%s gave two answers to (%s): %s then %s", f.ID, strings.Join(w.Args, ", "),
		clip(w.Answers[0].Value, 120), clip(w.Answers[1].Value, 120))
	if len(f.Causes) > 0 {
		text += "; moved by: " + strings.Join(f.Causes, ", ")
	}
	return text
}

// WriteGitHub writes GitHub Actions workflow commands: a warning per
// finding at its file and def line (an annotation on the pull request), a
// notice per look, and a summary line.
func WriteGitHub(w io.Writer, r *Report) error {
	where := r.locator()
	var b strings.Builder
	for _, f := range r.Functions {
		var kind, title, text string
		switch {
		case f.IsSuppressed():
			continue
		case f.Verdict == VerdictNondeterministic && f.InBaseline:
			kind, title, text = "notice", "nondeterministic (in the baseline)", findingText(f)
		case f.Verdict == VerdictNondeterministic:
			kind, title, text = "warning", "nondeterministic", findingText(f)
		case f.Verdict == VerdictLook:
			kind, title, text = "notice", "look", f.ID+": "+f.Reason
		default:
			continue
		}
		fmt.Fprintf(&b, "::%s file=%s,line=%d,title=%s::%s\n", kind, ghProperty(where(f.ID)), max(f.Line, 1), ghProperty(title), ghData(text))
	}
	c := r.Census
	fmt.Fprintf(&b, "%s: %d nondeterministic, %d deterministic, %d look, %d not probed\n", r.Tool.Name, c.Nondeterministic, c.Deterministic, c.Look, c.NotProbed)
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData and ghProperty escape a workflow command's message and its
// properties as the runner unescapes them.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
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
		file, name, _ := strings.Cut(f.ID, "::")
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
	var lines []string
	seen := map[int]bool{}
	for _, a := range f.Witness.Answers {
		for _, run := range r.Runs {
			if run.ID == a.Run && !seen[run.ID] {
				seen[run.ID] = true
				lines = append(lines, fmt.Sprintf("run %d: hash seed %d, TZ %s, locale %s, user %d, umask %s, cwd %s, cpus %s, clock %s, order %s",
					run.ID, run.HashSeed, run.TZ, run.Locale, run.UID, run.Umask, run.Cwd, run.CPUs, run.Clock, run.CallOrder))
			}
		}
	}
	return strings.Join(lines, "\n")
}
