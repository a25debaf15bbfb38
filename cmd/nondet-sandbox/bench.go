package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
)

type benchOptions struct {
	runtimes string
	repeat   int
	python   string
	runs     int
	jobs     int
}

func newBenchCommand() *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench [PATH...]",
		Short: "Time the scan of PATH (default fixtures/known.py) on several runtimes side by side",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"fixtures/known.py"}
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
	return cmd
}

func runBench(ctx context.Context, opts benchOptions, args []string, out io.Writer) error {
	targets, err := parseTargets(args)
	if err != nil {
		return err
	}
	cache := cacheDir()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "runtime\tmedian wall\tinterpreters\tcalls\tcalls/s\tvs %s\n", strings.Split(opts.runtimes, ",")[0])
	var base time.Duration
	for i, name := range strings.Split(opts.runtimes, ",") {
		rt, err := newRuntime(ctx, name, runOptions{seccomp: true, userns: true, ociRuntime: "runc", image: docker.DefaultImage})
		if err != nil {
			return err
		}
		defer closeRuntime(rt)
		var walls []time.Duration
		var rep *engine.Report
		for range opts.repeat {
			start := time.Now()
			rep, err = engine.Scan(ctx, engine.Options{
				Runtime: rt, Python: opts.python, Runs: opts.runs, Jobs: opts.jobs, Seed: 1,
				CacheDir: cache, Limits: sandbox.Limits{},
			}, targets)
			if err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
			walls = append(walls, time.Since(start))
		}
		slices.Sort(walls)
		med := walls[len(walls)/2]
		if i == 0 {
			base = med
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.2fx\n", name, med.Round(time.Millisecond), rep.Processes, rep.Calls,
			float64(rep.Calls)/med.Seconds(), float64(med)/float64(base))
	}
	return tw.Flush()
}
