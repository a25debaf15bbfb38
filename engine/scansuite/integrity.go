package scansuite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// inContainerOnly are the techniques that act on every process the probe
// may signal: on a host runtime whose probes see the host's processes
// they would act on the host's, so they run only where a container (or
// a PID namespace of the probe's own) holds them.
var inContainerOnly = map[string]bool{"signal_worker": true, "lingering": true}

// Integrity scans each technique of fixtures/integrity (dir) beside the
// honest module, both in one shard, and checks that the honest module's
// verdicts are what they are alone: scanned code changes the verdicts of
// its own module only. With only, just those techniques.
func Integrity(t *testing.T, rt sandbox.Runtime, python, dir string, only ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		if !rt.Isolated() && inContainerOnly[name] && !rt.Capabilities().OwnProcesses {
			t.Logf("%s: acts on every process it may signal; run in containers only", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			tree := t.TempDir()
			if err := exec.Command("cp", "-r", filepath.Join(dir, name)+"/.", filepath.Join(dir, "honest.py"), tree).Run(); err != nil {
				t.Fatal(err)
			}
			if err := exec.Command("chmod", "-R", "a+rX", tree).Run(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Dir(tree), 0o755); err != nil {
				t.Fatal(err)
			}
			tg, err := engine.ParseTarget(tree)
			if err != nil {
				t.Fatal(err)
			}
			opts := engine.Options{
				Runtime: rt, Python: python, Runs: 3, Jobs: 1, Shards: 1, Seed: 11,
				CallTimeout: 5 * time.Second, CacheDir: filepath.Join(os.TempDir(), "nds-test-cache"),
				Limits: sandbox.Limits{MemoryBytes: 512 << 20, Pids: 128, TmpfsBytes: 16 << 20},
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := engine.Scan(ctx, opts, []engine.Target{tg})
			if err != nil {
				t.Fatalf("the scan did not finish: %v", err)
			}
			for _, c := range []struct {
				id      string
				verdict string
			}{
				{"honest.py::stable", engine.VerdictDeterministic},
				{"honest.py::hash_order", engine.VerdictNondeterministic},
			} {
				f := rep.Function(c.id)
				switch {
				case f == nil:
					t.Errorf("%s: missing from the report", c.id)
				case f.Verdict != c.verdict:
					t.Errorf("%s: %s, want %s (%s)", c.id, f.Verdict, c.verdict, f.Reason)
				case len(f.Contained) > 0:
					t.Errorf("%s: charged with what its sibling did: %+v", c.id, f.Contained)
				case f.MovedBy != nil:
					t.Errorf("%s: moved by %+v", c.id, f.MovedBy)
				case f.Rungs.Answered != f.Rungs.Total:
					t.Errorf("%s: %d of %d rungs answered", c.id, f.Rungs.Answered, f.Rungs.Total)
				}
			}
		})
	}
}
