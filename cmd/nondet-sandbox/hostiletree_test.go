package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestNoFileStopsTheScan: a tree planted with files made to stop a scan (a
// 5 MB source, an 8 GiB sparse one, a link into /proc that blocks when
// read, a FIFO, a hidden link to /usr that a mask would follow) is
// reported, and the honest module beside them gets its verdict, on the
// host and in a container.
func TestNoFileStopsTheScan(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("honest.py", "def one():\n    return 1\n")
	big := bytes.Repeat([]byte("x = 1\n"), 5<<20/6+1)
	write("big.py", string(big))
	sparse, err := os.Create(filepath.Join(dir, "sparse.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(8 << 30); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	for name, target := range map[string]string{"kmsg.py": "/proc/kmsg", ".evil": "/usr"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []string{"host", "embedded"} {
		t.Run(rt, func(t *testing.T) {
			if rt != "host" {
				testenv.NeedRoot(t)
			}
			var out, errOut bytes.Buffer
			// The oversized files are named and the scan goes on; its exit
			// status says that not everything could be judged.
			err := runRun(context.Background(), testOptions(t, rt, 4), []string{dir}, &out, &errOut)
			if !errors.Is(err, errUnjudged) || !strings.Contains(err.Error(), "big.py: too-large") {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var rep report.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if f := rep.Function("honest.py::one"); f == nil || f.Verdict != report.VerdictDeterministic {
				t.Errorf("the honest module: %+v", f)
			}
			status := map[string]string{}
			for _, m := range rep.Modules {
				status[m.Path] = m.Status
			}
			if status["big.py"] != "too-large" || status["sparse.py"] != "too-large" {
				t.Errorf("oversized sources: %v", status)
			}
			for _, name := range []string{"kmsg.py", "fifo.py"} {
				if _, listed := status[name]; listed {
					t.Errorf("%s was opened as a source file: %v", name, status)
				}
			}
		})
	}
}
