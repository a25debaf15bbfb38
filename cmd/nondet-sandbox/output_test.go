package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestOutputIsNeverLost: -o replaces the old report only with a whole new
// one. A scan that is interrupted leaves the old file as it was, and no
// temporary file beside it; a scan that ends puts the new report in place,
// keeping the old file's permissions.
func TestOutputIsNeverLost(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "baseline.json")
	old := []byte(`{"the": "committed baseline"}`)
	if err := os.WriteFile(path, old, 0o640); err != nil {
		t.Fatal(err)
	}
	only := func(want []byte) {
		t.Helper()
		if got := names(dir); !slices.Equal(got, []string{"baseline.json"}) {
			t.Errorf("the folder holds %v, want only baseline.json", got)
		}
		if got, _ := os.ReadFile(path); want != nil && !bytes.Equal(got, want) {
			t.Errorf("baseline.json is %q, want %q", got, want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := testOptions(t, "host", 3)
	opts.output = path
	err := runRun(ctx, opts, []string{"../../fixtures/known.py"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || errors.Is(err, errFindings) {
		t.Fatalf("an interrupted scan: %v", err)
	}
	only(old)

	testenv.Integration(t)
	if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py::epoch_year"}, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errFindings) {
		t.Fatalf("a scan with a finding: %v", err)
	}
	only(nil)
	data, _ := os.ReadFile(path)
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil || rep.Function("known.py::epoch_year") == nil {
		t.Fatalf("the new report does not read: %v\n%.200s", err, data)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the report's mode is %v, want the old file's 0640 (%v)", fi.Mode().Perm(), err)
	}
}

// TestPlainProgress: where standard error is not a terminal (a CI log),
// progress is a plain line at the first interpreter and then at most one
// per interval, with the count, the share and an estimate of what is left.
func TestPlainProgress(t *testing.T) {
	var b bytes.Buffer
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	progress := plainProgress(&b, now, 10*time.Second)
	progress(engine.Progress{Phase: "probing"})
	for done := 1; done <= 40; done++ {
		clock = clock.Add(time.Second) // one interpreter a second
		progress(engine.Progress{Phase: "probing", Done: done, Planned: 40})
	}
	// A new phase is said at once, and its estimate is its own.
	progress(engine.Progress{Phase: "confirming"})
	clock = clock.Add(time.Second)
	progress(engine.Progress{Phase: "confirming", Done: 1, Planned: 4})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("40 seconds gave %d lines, want 7 (probing; at 1s, 11s, 21s, 31s; confirming; its first):\n%s", len(lines), b.String())
	}
	for i, want := range map[int]string{
		0: "nondet-sandbox: probing",
		2: "nondet-sandbox: probing: 11 of 40 interpreters (27%), about 29s left",
		5: "nondet-sandbox: confirming",
		6: "nondet-sandbox: confirming: 1 of 4 interpreters (25%), about 3s left",
	} {
		if lines[i] != want {
			t.Errorf("line %d is %q, want %q", i+1, lines[i], want)
		}
	}
}

// cancelOn cancels a scan when its progress says an interpreter finished.
type cancelOn struct {
	cancel func()
	buf    bytes.Buffer
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), "probing: 1 of") {
		c.cancel()
	}
	return len(p), nil
}

// TestInterruptedScanWritesAPartialReport: Ctrl-C after some runs keeps
// what ran, as a report marked partial beside -o's file (never over it:
// it may be the committed baseline), and the scan ends as interrupted.
func TestInterruptedScanWritesAPartialReport(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "mod.py")
	if err := os.WriteFile(src, []byte("import time\n\n\ndef steady(x):\n    return x\n\n\ndef hang():\n    time.sleep(100)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "baseline.json")
	old := []byte(`{"the": "committed baseline"}`)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := testOptions(t, "host", 3)
	opts.output, opts.quiet, opts.callTimeout = path, false, time.Second
	stderr := &cancelOn{cancel: cancel}
	err := runRun(ctx, opts, []string{src}, &bytes.Buffer{}, stderr)
	if !errors.Is(err, engine.ErrInterrupted) || ctx.Err() == nil {
		t.Fatalf("want the scan interrupted, got %v\n%s", err, stderr.buf.String())
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Errorf("-o's file changed: %q", got)
	}
	if !strings.Contains(stderr.buf.String(), "marked partial, in "+path+".partial") {
		t.Errorf("stderr does not say where the partial report is:\n%s", stderr.buf.String())
	}
	data, err := os.ReadFile(path + ".partial")
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil || !rep.Partial {
		t.Fatalf("the partial report does not read as partial: %v\n%.300s", err, data)
	}
	f := rep.Function("mod.py::steady")
	if f == nil || f.Verdict != engine.VerdictNotProbed || !strings.Contains(f.Reason, "interrupted before") {
		t.Errorf("steady: want not probed as interrupted before some run, got %+v witness %+v", f, f.Witness)
	}
}

// TestOutputToAPipeOrThroughALink: -o names a pipe (or a device such as
// /dev/null, or /dev/stdout): the report is written into it and the node
// stays what it was, where renaming a file over it would replace it (as
// root, /dev/null itself). -o names a link: the file it leads to gets
// the report, and the link stays. -o names a folder: said at once.
func TestOutputToAPipeOrThroughALink(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	scanned := filepath.Join(dir, "scan.json")
	opts := testOptions(t, "host", 3)
	opts.output = scanned
	if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py::epoch_year"}, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errFindings) {
		t.Fatalf("the scan: %v", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		data, _ := os.ReadFile(fifo)
		got <- data
	}()
	if err := runRender(context.Background(), outputOptions{format: "concise", output: fifo}, scanned, &bytes.Buffer{}); err != nil {
		t.Fatalf("render to a pipe: %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe is now %v (%v)", st.Mode(), err) // and its reader waits for ever
	}
	if data := <-got; !strings.Contains(string(data), "known.py::epoch_year") {
		t.Errorf("the pipe read %q", data)
	}

	real := filepath.Join(dir, "real.txt")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("real.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := runRender(context.Background(), outputOptions{format: "concise", output: link}, scanned, &bytes.Buffer{}); err != nil {
		t.Fatalf("render through a link: %v", err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is now %v (%v)", st.Mode(), err)
	}
	if data, _ := os.ReadFile(real); !strings.Contains(string(data), "known.py::epoch_year") {
		t.Errorf("the linked file holds %q", data)
	}
	if got := names(dir); !slices.Equal(got, []string{"fifo", "link.txt", "real.txt", "scan.json"}) {
		t.Errorf("the folder holds %v, want fifo, link.txt, real.txt, scan.json", got)
	}

	err := runRender(context.Background(), outputOptions{format: "concise", output: dir}, scanned, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("render to a folder: %v", err)
	}
}

// names are the names in dir, sorted.
func names(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestTerminalProgressMoves: each phase's bar counts its own
// interpreters from zero as they finish, under its own name; a phase that
// starts before it has planned any does not leave a finished bar that
// stays still.
func TestTerminalProgressMoves(t *testing.T) {
	var out bytes.Buffer
	progress, finish := terminalProgress(&out)
	progress(engine.Progress{Phase: "discovering"})
	progress(engine.Progress{Phase: "probing"})
	progress(engine.Progress{Phase: "probing", Planned: 6})
	progress(engine.Progress{Phase: "probing", Done: 3, Planned: 6})
	mark := out.Len()
	progress(engine.Progress{Phase: "attributing"})
	progress(engine.Progress{Phase: "attributing", Planned: 18})
	progress(engine.Progress{Phase: "attributing", Done: 5, Planned: 18})
	finish()
	probing, attributing := out.String()[:mark], out.String()[mark:]
	if !strings.Contains(probing, "probing") || !strings.Contains(probing, "(3/6") {
		t.Errorf("probing's bar did not move to 3 of 6:\n%q", probing)
	}
	if strings.Contains(probing, "attributing") || !strings.Contains(attributing, "(5/18") {
		t.Errorf("attributing's bar:\n%q", attributing)
	}
}
