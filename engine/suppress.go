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

// ignoreComment is a suppression on a def line: "# nondet: ignore", or
// "# nondet: ignore[hash-seed, locale]" for some causes only.
var ignoreComment = regexp.MustCompile(`#\s*nondet:\s*ignore(?:\[([^\]]*)\])?`)

// causeNames are the causes a finding can name, which an ignore comment
// may list: each varied condition, and what is no condition.
func causeNames() []string {
	names := []string{"process", "unattributed", BreakerRepeat, report.BreakerOrderFree}
	for _, c := range sandbox.Varieds {
		names = append(names, string(c.Name))
	}
	return names
}

// suppressions reads the ignore comments of one source file, by line. A
// cause it does not know is said in notes (file:line), so a typo does not
// silently suppress nothing.
func (s *scan) suppressions(f *sourceFile) map[int]*report.Suppression {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out map[int]*report.Suppression
	known := causeNames()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), maxSourceLine)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.Contains(text, "nondet") {
			continue
		}
		m := ignoreComment.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		sup := &report.Suppression{Line: line}
		for _, c := range strings.Split(m[1], ",") {
			if c = strings.TrimSpace(c); c == "" {
				continue
			}
			if !slices.Contains(known, c) && s.ex.opts.Notes != nil {
				fmt.Fprintf(s.ex.opts.Notes, "nondet-sandbox: %s:%d: %q is not a cause; an ignore comment names some of: %s\n", f.Rel, line, c, strings.Join(known, ", "))
			}
			sup.Causes = append(sup.Causes, c)
		}
		if out == nil {
			out = map[int]*report.Suppression{}
		}
		out[line] = sup
	}
	return out
}

// maxSourceLine is the longest line read for comments; a longer one
// (minified code) ends the reading of that file's comments.
const maxSourceLine = 1 << 20
