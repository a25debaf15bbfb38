package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// TestJUnitReadByJunitparser feeds --format junit to a real consumer,
// Debian's python3-junitparser: one case per function, a failure for each
// finding, a skip for each look or function not probed.
func TestJUnitReadByJunitparser(t *testing.T) {
	testenv.Integration(t)
	python := testenv.Python(t)
	if err := exec.Command(python, "-c", "import junitparser").Run(); err != nil {
		testenv.Skip(t, "python3-junitparser is not installed (scripts/test-deps installs it)")
	}
	opts := testOptions(t, "host", 6)
	opts.format = "junit"
	var out, errOut bytes.Buffer
	args := []string{"../../fixtures/known.py::epoch_year", "../../fixtures/known.py::dedup_sorted", "../../fixtures/precision/lazy.py", "../../fixtures/precision/blocks.py"}
	if err := runRun(context.Background(), opts, args, &out, &errOut); !errors.Is(err, errFindings) {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	rep, _, _ := runJSON(t, append([]string{"--seed=6"}, args...)...)
	want := map[string]string{}
	for _, f := range rep.Functions {
		want[f.ID] = map[string]string{"nondeterministic": "failure", "look": "skipped", "not-probed": "skipped"}[f.Verdict]
		if want[f.ID] == "" {
			want[f.ID] = "passed"
		}
	}
	file := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import sys
from junitparser import JUnitXml, Failure, Skipped
for suite in JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        kind = "passed"
        for r in case.result:
            kind = "failure" if isinstance(r, Failure) else "skipped" if isinstance(r, Skipped) else "other"
        print(suite.name + "::" + case.name, kind)
`
	var stderr strings.Builder
	cmd := exec.Command(python, "-c", script, file)
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("junitparser could not read the report: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("junitparser read %d cases, the scan has %d functions:\n%s", len(lines), len(want), got)
	}
	for _, line := range lines {
		id, kind, _ := strings.Cut(line, " ")
		if want[id] != kind {
			t.Errorf("%s: junitparser read %s, the verdict says %s", id, kind, want[id])
		}
	}
}

// TestGitHubAnnotationsPointWhereTheRunsParted: each --format github
// warning names a file that exists from the repository root and the line,
// in the function's body, at which its witness's runs parted: the line
// its message quotes.
func TestGitHubAnnotationsPointWhereTheRunsParted(t *testing.T) {
	testenv.Integration(t)
	opts := testOptions(t, "host", 6)
	opts.format = "github"
	var out, errOut bytes.Buffer
	if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py::epoch_year", "../../fixtures/causes.py::from_timezone"}, &out, &errOut); !errors.Is(err, errFindings) {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	re := regexp.MustCompile(`(?m)^::warning file=([^,]+),line=(\d+),title=nondeterministic::(\S+) gave two answers`)
	ms := re.FindAllStringSubmatch(out.String(), -1)
	if len(ms) != 2 {
		t.Fatalf("want 2 warnings, got %d:\n%s", len(ms), out.String())
	}
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(locationBase(), m[1]))
		if err != nil {
			t.Fatalf("the annotation's file is not there from the repository root: %v", err)
		}
		line, _ := strconv.Atoi(m[2])
		lines := strings.Split(string(src), "\n")
		name := m[3][strings.Index(m[3], "::")+2:]
		def := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "def "+name+"(") }) + 1
		if def == 0 || line <= def || line > len(lines) {
			t.Errorf("%s: line %d is not in the body of %s (def at %d)", m[1], line, name, def)
			continue
		}
		quoted := fmt.Sprintf("diverged at %s:%d  %s", filepath.Base(m[1]), line, strings.TrimSpace(lines[line-1]))
		if !strings.Contains(out.String(), quoted) {
			t.Errorf("%s:%d: no message quotes the line (%q):\n%s", m[1], line, quoted, out.String())
		}
	}
}

// TestHTMLInChromium renders --format html in Debian's headless chromium
// and checks what a person would see: every finding's id and both its
// answers, the census chart, and a page whose script ran without an error
// (a page with a broken script, rendered the same way, is caught).
func TestHTMLInChromium(t *testing.T) {
	testenv.Integration(t)
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		testenv.Skip(t, "no chromium (scripts/test-deps installs Debian's)")
	}
	render := func(page string) (dom, log string) {
		t.Helper()
		cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
			"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	scriptError := regexp.MustCompile(`CONSOLE.*(Uncaught|Error)`)
	broken := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(broken, []byte(`<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, log := render(broken); !scriptError.MatchString(log) {
		t.Fatalf("the check cannot see a script error; chromium's log:\n%s", log)
	}

	opts := testOptions(t, "host", 6)
	opts.format = "html"
	page := filepath.Join(t.TempDir(), "report.html")
	opts.output = page
	args := []string{"../../fixtures/known.py", "../../fixtures/precision/blocks.py"}
	if err := runRun(context.Background(), opts, args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errFindings) {
		t.Fatal(err)
	}
	rep, _, _ := runJSON(t, append([]string{"--seed=6"}, args...)...)
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).Match(src) {
		t.Error("the page fetches something from elsewhere")
	}
	dom, log := render(page)
	if m := scriptError.FindString(log); m != "" {
		t.Errorf("a script error in the page: %s", m)
	}
	if !strings.Contains(dom, `data-ready="yes"`) {
		t.Error("the page's script did not run to its end")
	}
	if !strings.Contains(dom, `id="census-chart"`) {
		t.Error("no census chart")
	}
	findings := 0
	for _, f := range rep.Functions {
		if f.Verdict != "nondeterministic" {
			continue
		}
		findings++
		if !strings.Contains(dom, `data-id="`+f.ID+`"`) {
			t.Errorf("finding %s is not on the page", f.ID)
		}
	}
	if findings == 0 || strings.Count(dom, "<article") != findings {
		t.Errorf("%d findings in the report, %d on the page", findings, strings.Count(dom, "<article"))
	}
}
