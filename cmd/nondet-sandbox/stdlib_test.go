package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
)

// TestStdlibScan scans the top-level modules of the interpreter's own
// standard library (about 170 files and 1,000 public functions, many of
// which delete files, spawn processes, open sockets or browsers when handed
// plain strings) in the embedded runtime: it finishes, reports every
// module, and the host is unchanged.
func TestStdlibScan(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	if _, err := embedded.New(embedded.DefaultOptions()); err != nil {
		testenv.Skip(t, "embedded runtime unavailable: "+err.Error())
	}
	py := testenv.Python(t)
	out, err := exec.Command(py, "-I", "-S", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
	if err != nil {
		t.Fatal(err)
	}
	stdlib := strings.TrimSpace(string(out))
	files, _ := filepath.Glob(filepath.Join(stdlib, "*.py"))
	if len(files) < 100 {
		t.Fatalf("only %d modules in %s", len(files), stdlib)
	}
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	watched := []string{home, cwd, stdlib, "/tmp", "/var/tmp", "/"}
	before := map[string]string{}
	for _, d := range watched {
		before[d] = listing(d)
	}
	stdlibTree := treeListing(stdlib)

	opts := testOptions(t, "embedded", 3)
	opts.python, opts.callTimeout, opts.smellRuns = py, 5*time.Second, 0
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err = runRun(context.Background(), opts, files, &stdout, &stderr)
	wall := time.Since(start)
	if err != nil && err != errFindings {
		t.Fatalf("the scan did not finish: %v\n%s", err, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Modules) != len(files) {
		t.Errorf("%d modules reported of %d", len(rep.Modules), len(files))
	}
	for _, m := range rep.Modules {
		if m.Status != "ok" && m.Error == "" {
			t.Errorf("module %s: %s without a reason", m.Path, m.Status)
		}
	}
	c := rep.Census
	if c.Nondeterministic+c.Deterministic+c.Look+c.NotProbed != len(rep.Functions) || len(rep.Functions) < 500 {
		t.Errorf("census %+v does not add up to %d functions", c, len(rep.Functions))
	}
	// Precision on code nobody here wrote: no finding rests on a dict's
	// key order or on state another function left, and that state is
	// named where it is known to live (mimetypes' add_type feeds its
	// guess_type).
	for _, f := range rep.Findings() {
		if f.Witness == nil || f.Witness.Breaker == engine.BreakerDictOrder || f.MovedBy != nil || slices.Contains(f.Causes, "dict-order") {
			t.Errorf("%s: a finding with no witness of its own: %+v", f.ID, f.Witness)
		}
	}
	if f := rep.Function("mimetypes.py::guess_type"); f == nil || f.Verdict == engine.VerdictNondeterministic ||
		f.MovedBy == nil || f.MovedBy.Culprit != "mimetypes.py::add_type" {
		t.Errorf("mimetypes.guess_type: want moved by mimetypes.py::add_type, not a finding: %+v", f)
	}
	for _, d := range watched {
		if changed := changes(before[d], listing(d)); len(changed) > 0 {
			t.Errorf("%s changed during the scan: %v", d, changed)
		}
	}
	if treeListing(stdlib) != stdlibTree {
		t.Errorf("the standard library's tree changed during the scan")
	}
	t.Logf("stdlib scan: %d modules, %d functions, wall %s, %d containers, %d calls; %d nondeterministic, %d deterministic, %d look, %d not probed; %d order-sensitive, %d moved by others",
		len(rep.Modules), len(rep.Functions), wall.Round(time.Second), rep.Processes, rep.Calls,
		c.Nondeterministic, c.Deterministic, c.Look, c.NotProbed, c.OrderSensitive, c.MovedByOthers)
}

// listing is a directory's entries that a probe could have made, with
// sizes and times, one level deep: those owned by a probe user (61000 and
// up, or mapped from a container's user namespace, 100000 and up). What
// other processes on a busy machine write to /tmp at the same time is not
// the scan's doing, and root's own files are not a probe's.
func listing(dir string) string {
	entries, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "nondet-sandbox-") || strings.HasPrefix(name, "go-build") || name == ".cache" || name == "go" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || st.Uid < 60000 {
			continue
		}
		mt := info.ModTime().UnixNano()
		if e.IsDir() {
			mt = 0 // a directory's time moves with any entry: compare entries instead
		}
		fmt.Fprintf(&b, "%s %d %d\n", name, info.Size(), mt)
	}
	return b.String()
}

// changes lists entries that appeared or changed between two listings,
// leaving out what other tests running at the same time make: their
// temporary directories and Go's.
func changes(before, after string) []string {
	ignored := func(l string) bool {
		return l == "" || strings.HasPrefix(l, "Test") || strings.HasPrefix(l, "nds-") || strings.HasPrefix(l, ".nondet-sandbox-secret-")
	}
	in := func(list string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(list, "\n") {
			m[l] = true
		}
		return m
	}
	was, is := in(before), in(after)
	var out []string
	for l := range is {
		if !was[l] && !ignored(l) {
			out = append(out, "new or changed: "+l)
		}
	}
	for l := range was {
		if !is[l] && !ignored(l) {
			out = append(out, "gone or changed: "+l)
		}
	}
	return out
}

func treeListing(dir string) string {
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			fmt.Fprintf(&b, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}
