package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// corpusTargets finds the installed corpus packages (fixtures/corpus/packages)
// in the test interpreter's environment.
func corpusTargets(t *testing.T, python string) []string {
	t.Helper()
	var targets, missing []string
	for _, fs := range labelLines(t, "corpus/packages", 2) {
		out, err := exec.Command(python, "-I", "-c", "import "+fs[1]+"; print("+fs[1]+".__file__)").Output()
		if err != nil {
			missing = append(missing, fs[0])
			continue
		}
		file := strings.TrimSpace(string(out))
		if filepath.Base(file) == "__init__.py" {
			file = filepath.Dir(file)
		}
		targets = append(targets, file)
	}
	if len(missing) > 0 {
		testenv.Skip(t, "corpus packages not installed: apt-get install "+strings.Join(missing, " ")+" (make corpus)")
	}
	return targets
}

// corpusLabels reads fixtures/corpus/labels: each finding of the corpus
// scan triaged by hand, "true" (one input, two answers, for the reason
// given) or "false" (with why the tool was wrong).
func corpusLabels(t *testing.T) map[string]string {
	t.Helper()
	return labelMap(t, "corpus/labels")
}

// TestRealWorldCorpus scans real third-party packages nobody here wrote
// and grades every finding against hand triage: a finding nobody triaged
// fails the test (so a change that adds findings must triage them), and
// the precision of `nondeterministic` must stay at least 0.95.
func TestRealWorldCorpus(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	python := "/usr/bin/python3" // Debian's: the corpus is Debian's packages
	if _, err := os.Stat(python); err != nil {
		testenv.Skip(t, "Debian's python3 is not installed")
	}
	targets := corpusTargets(t, python)
	labels := corpusLabels(t)
	opts := testOptions(t, "embedded", 8)
	opts.python, opts.callTimeout = python, 5*time.Second
	var out, errOut bytes.Buffer
	err := runRun(context.Background(), opts, targets, &out, &errOut)
	if errors.Is(err, engine.ErrRuntime) {
		testenv.Skip(t, err.Error())
	}
	if err != nil && !errors.Is(err, errFindings) {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var truePos, falsePos int
	var untriaged []string
	for _, f := range rep.Findings() {
		switch labels[f.ID] {
		case "true":
			truePos++
		case "false":
			falsePos++
		default:
			untriaged = append(untriaged, f.ID+" ("+strings.Join(f.Causes, ",")+")")
		}
	}
	sort.Strings(untriaged)
	for _, id := range untriaged {
		t.Errorf("finding not triaged in fixtures/corpus/labels: %s", id)
	}
	c := rep.Census
	t.Logf("corpus: %d functions and methods (%d methods); %d nondeterministic (%d true, %d false), %d deterministic, %d look, %d not probed; %d order-sensitive, %d moved by others; reach %d of %d probed (methods %d of %d probed, %d listed)",
		len(rep.Functions), c.Methods, c.Nondeterministic, truePos, falsePos, c.Deterministic, c.Look, c.NotProbed, c.OrderSensitive, c.MovedByOthers, c.Reached, c.Probed,
		c.MethodsReached, c.MethodsProbed, c.Methods)
	if c.Methods == 0 || c.MethodsReached == 0 {
		t.Errorf("no method of the corpus was reached: %+v", c)
	}
	if c.Probed == 0 || c.Reached == 0 || c.Reached > c.Probed {
		t.Errorf("reach %d of %d probed functions: not measured", c.Reached, c.Probed)
	}
	if n := truePos + falsePos; n > 0 {
		precision := float64(truePos) / float64(n)
		t.Logf("precision of nondeterministic: %.3f", precision)
		if precision < 0.95 {
			t.Errorf("precision %.3f is below 0.95", precision)
		}
	}
}
