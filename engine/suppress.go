package engine

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// ignoreComment is a suppression on a def line (or a decorator's, or the
// signature's last): "# nondet: ignore", or "# nondet: ignore[hash-seed,
// locale]" for some causes only; "# nondet: ignore-file" on a line of its
// own anywhere in a module covers every function of it. Any case.
var ignoreComment = regexp.MustCompile(`(?i)#\s*nondet:\s*ignore(-file)?(?:\[([^\]]*)\])?`)

// suppressions are one file's ignore comments, and the functions each
// covers.
type suppressions struct {
	rel    string
	byLine map[int]*report.Suppression
	file   *report.Suppression // ignore-file, or nil
	covers map[int][]string    // comment line -> ids of the functions it covers
	hidden map[int]bool        // comment lines covering a function the report does not list
}

// of is the suppression that covers a function: a comment on one of its
// lines, else the file's. id is the function's id in the report, "" when
// the report does not list it (private, or not the one asked for).
func (s *suppressions) of(line int, lines []int, id string) *report.Suppression {
	if s == nil {
		return nil
	}
	first, last := line, line
	if len(lines) == 2 {
		first, last = lines[0], lines[1]
	}
	sup := s.file
	for l := first; l <= last; l++ {
		if s.byLine[l] != nil {
			sup = s.byLine[l]
			break
		}
	}
	if sup != nil {
		if id == "" {
			s.hidden[sup.Line] = true
		} else {
			s.covers[sup.Line] = append(s.covers[sup.Line], id)
		}
	}
	return sup
}

// unusedSuppressions are the ignore comments that suppressed nothing,
// as file:line: on no function's lines, or covering only functions that
// are not findings. A comment on a function the report does not list is
// never called unused.
func unusedSuppressions(all []*suppressions, rep *report.Report) []string {
	var out []string
	for _, s := range all {
		var lines []int
		for l := range s.byLine {
			lines = append(lines, l)
		}
		if s.file != nil {
			lines = append(lines, s.file.Line)
		}
		slices.Sort(lines)
		for _, l := range lines {
			if s.hidden[l] {
				continue
			}
			used := false
			for _, id := range s.covers[l] {
				if f := rep.Function(id); f != nil && f.Verdict == VerdictNondeterministic {
					used = true
				}
			}
			if !used {
				out = append(out, fmt.Sprintf("%s:%d", s.rel, l))
			}
		}
	}
	return out
}

// CauseNames are the causes a finding can name, which an ignore comment,
// --ignore and --select may list: each varied condition, and what is no
// condition.
func CauseNames() []string { return causeNames() }

func causeNames() []string {
	names := []string{"process", "unattributed", BreakerRepeat, report.BreakerOrderFree}
	for _, c := range sandbox.Varieds {
		names = append(names, string(c.Name))
	}
	return names
}

// readSuppressions reads the ignore comments of one source file. A
// cause it does not know is said in notes (file:line), so a typo does not
// silently suppress nothing.
func (s *scan) readSuppressions(f *sourceFile) *suppressions {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out *suppressions
	known := causeNames()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), maxSourceLine)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.Contains(strings.ToLower(text), "nondet") {
			continue
		}
		m := ignoreComment.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		sup := &report.Suppression{Line: line}
		for _, c := range strings.Split(m[2], ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c == "" {
				continue
			}
			if !slices.Contains(known, c) && s.ex.opts.Notes != nil {
				fmt.Fprintf(s.ex.opts.Notes, "nondet-sandbox: %s:%d: %q is not a cause; an ignore comment names some of: %s\n", f.Rel, line, c, strings.Join(known, ", "))
			}
			sup.Causes = append(sup.Causes, c)
		}
		if out == nil {
			out = &suppressions{rel: f.Rel, byLine: map[int]*report.Suppression{}, covers: map[int][]string{}, hidden: map[int]bool{}}
		}
		if m[1] != "" {
			if out.file == nil {
				out.file = sup
			}
			continue
		}
		out.byLine[line] = sup
	}
	return out
}

// maxSourceLine is the longest line read for comments; a longer one
// (minified code) ends the reading of that file's comments.
const maxSourceLine = 1 << 20
