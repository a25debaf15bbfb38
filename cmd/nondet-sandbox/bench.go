package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
)

type benchOptions struct {
	runtimes   string
	repeat     int
	python     string
	runs       int
	jobs       int
	synthetic  string
	kubeconfig string
}

//go:embed floor.py
var floorSource []byte

func newBenchCommand() *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench [PATH...]",
		Short: "Time the scan of PATH (default fixtures/known.py, or a synthetic tree outside a checkout) on several runtimes side by side",
		Long: `Time the scan of PATH (default fixtures/known.py in a checkout of this
project, else a synthetic tree of 20x10) on several runtimes side by
side: median wall time, interpreters, calls, CPU per call (the scan's own
process and the processes it waited for; a Docker container's are not
counted; on Kubernetes only the coordinator's), interpreters (containers,
pods) started per second, and the ratio to the first runtime.

With --synthetic MODULESxFUNCTIONS (say 100x10) bench writes a synthetic tree
of small pure functions itself, measures the floor of its calls in the same
run (one interpreter, every call the scan makes, no sandbox, no records) and
prints the microseconds each call costs above that floor.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && opts.synthetic == "" {
				if _, err := os.Stat(defaultBenchTarget); err == nil {
					args = []string{defaultBenchTarget}
				} else {
					// Installed with go install, no checkout: a tree of its own.
					opts.synthetic = "20x10"
					fmt.Fprintf(cmd.ErrOrStderr(), "nondet-sandbox: no %s here (not a checkout): timing a synthetic tree of %s; give PATH to time your own code\n", defaultBenchTarget, opts.synthetic)
				}
			}
			return runBench(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.runtimes, "runtimes", "host", "comma-separated runtimes to compare; the first is the baseline")
	fs.IntVar(&opts.repeat, "repeat", 5, "scans per runtime; the median is reported")
	fs.StringVar(&opts.python, "python", "python3", "the Python interpreter")
	fs.IntVar(&opts.runs, "runs", 3, "runs per shard")
	fs.IntVar(&opts.jobs, "jobs", runtime.NumCPU(), "interpreters at once")
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "for the kubernetes runtime: the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&opts.synthetic, "synthetic", "", "scan a synthetic tree of MODULESxFUNCTIONS (e.g. 100x10) instead of PATH, and measure the floor of its calls")
	return cmd
}

// defaultBenchTarget is what bench times in a checkout of this project.
const defaultBenchTarget = "fixtures/known.py"

// cpuTime is the CPU this process (the engine) used, and the children it
// waited for.
func cpuTime() (engine, children time.Duration) {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime), tv(kids.Utime) + tv(kids.Stime)
}

// floor runs floor.py on the synthetic tree: CPU per call with no sandbox,
// no records and no state restored.
func floor(ctx context.Context, python, tree string) (calls int, perCall time.Duration, err error) {
	dir, err := os.MkdirTemp("", "nondet-sandbox-floor-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "floor.py"), floorSource, 0o644); err != nil {
		return 0, 0, err
	}
	// floor.py imports the worker's package as worker, from dir.
	if err := engine.WriteWorker(filepath.Join(dir, "worker")); err != nil {
		return 0, 0, err
	}
	out, err := exec.CommandContext(ctx, python, "-B", "-s", filepath.Join(dir, "floor.py"), tree, dir).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("floor: %v", err)
	}
	var f struct {
		Calls int     `json:"calls"`
		CPU   float64 `json:"cpu"`
	}
	if err := json.Unmarshal(out, &f); err != nil || f.Calls == 0 {
		return 0, 0, fmt.Errorf("floor: unreadable answer %q", out)
	}
	return f.Calls, time.Duration(f.CPU / float64(f.Calls) * 1e9), nil
}

func runBench(ctx context.Context, opts benchOptions, args []string, out io.Writer) error {
	var floorPerCall time.Duration
	if opts.synthetic != "" {
		var m, f int
		if n, err := fmt.Sscanf(opts.synthetic, "%dx%d", &m, &f); n != 2 || err != nil || m < 1 || f < 1 {
			return usageErrorf("--synthetic %q: give MODULESxFUNCTIONS, such as 100x10", opts.synthetic)
		}
		dir, err := os.MkdirTemp("", "nondet-sandbox-synth-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		nondet, err := writeSynthTree(dir, m, f)
		if err != nil {
			return err
		}
		calls, per, err := floor(ctx, opts.python, dir)
		if err != nil {
			return err
		}
		floorPerCall = per
		fmt.Fprintf(out, "synthetic tree: %d modules, %d functions, %d nondeterministic; floor: %d calls, %.1f µs CPU per call\n",
			m, m*f, nondet, calls, float64(per)/1e3)
		args = []string{filepath.Join(dir, "synth")}
	}
	targets, err := parseTargets(args)
	if err != nil {
		return err
	}
	cache := cacheDir()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "runtime\tmedian wall\tinterpreters\tper second\tcalls\tCPU µs/call\tof it engine\tabove floor\tvs %s\n", strings.Split(opts.runtimes, ",")[0])
	var base time.Duration
	for i, name := range strings.Split(opts.runtimes, ",") {
		rt, err := newRuntime(ctx, name, sandboxOptions{seccomp: true, userns: true, ociRuntime: "runc", image: docker.DefaultImage, kubeconfig: opts.kubeconfig})
		if err != nil {
			return err
		}
		defer closeRuntime(rt)
		var walls, cpus, engines []time.Duration
		var rep *report.Report
		for range opts.repeat {
			start := time.Now()
			eng0, kids0 := cpuTime()
			rep, err = engine.Scan(ctx, engine.Options{
				Runtime: rt, Python: opts.python, Runs: opts.runs, Jobs: opts.jobs, Seed: 1,
				CacheDir: cache, Limits: sandbox.Limits{},
			}, targets)
			if err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
			eng1, kids1 := cpuTime()
			walls, cpus, engines = append(walls, time.Since(start)), append(cpus, eng1-eng0+kids1-kids0), append(engines, eng1-eng0)
		}
		slices.Sort(walls)
		slices.Sort(cpus)
		slices.Sort(engines)
		med, cpu, eng := walls[len(walls)/2], cpus[len(cpus)/2], engines[len(engines)/2]
		if i == 0 {
			base = med
		}
		per, enginePer := time.Duration(0), time.Duration(0)
		if rep.Calls > 0 {
			per, enginePer = cpu/time.Duration(rep.Calls), eng/time.Duration(rep.Calls)
		}
		above := "-"
		if floorPerCall > 0 {
			above = fmt.Sprintf("%.1f", float64(per-floorPerCall)/1e3)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%d\t%.1f\t%.1f\t%s\t%.2fx\n", name, med.Round(time.Millisecond), rep.Processes, float64(rep.Processes)/med.Seconds(), rep.Calls,
			float64(per)/1e3, float64(enginePer)/1e3, above, float64(med)/float64(base))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	fmt.Fprintf(out, "engine peak RSS: %.0f MB\n", float64(self.Maxrss)/1024)
	return nil
}
