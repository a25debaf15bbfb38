package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

func newMergeCommand() *cobra.Command {
	var opts outputOptions
	cmd := &cobra.Command{
		Use:   "merge PART.json...",
		Short: "Join the JSON reports of a split scan's parts (run --shard K/N) into the report of the whole",
		Long: `Join the JSON reports of the parts of one split scan, each written by
run --shard K/N --seed S --format json, into the report that one scan of the
whole would have written. Every part must be given once; parts of different
scans (another seed, runtime, interpreter, version or set of targets) are
refused. The exit status is the scan's: 1 when the whole has findings.`,
		Example: `  nondet-sandbox run --shard 1/3 --seed 7 --format json -o part1.json src/
  nondet-sandbox run --shard 2/3 --seed 7 --format json -o part2.json src/
  nondet-sandbox run --shard 3/3 --seed 7 --format json -o part3.json src/
  nondet-sandbox merge --format sarif -o scan.sarif part*.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	completeChoices(cmd, "format")
	return cmd
}

func runMerge(_ context.Context, opts outputOptions, args []string, stdout io.Writer) error {
	if err := opts.check(); err != nil {
		return err
	}
	var parts []*report.Report
	for _, path := range args {
		rep, err := readReport(path, "merge")
		if err != nil {
			return err
		}
		parts = append(parts, rep)
	}
	rep, err := report.Merge(parts)
	if errors.Is(err, report.ErrParts) {
		return usageErrorf("merge: %v", err)
	}
	if err != nil {
		return err
	}
	out, err := openOutput(opts.output, stdout)
	if err != nil {
		return err
	}
	defer out.abort()
	out.show = opts.show
	if err := out.report(opts.format, rep); err != nil {
		return err
	}
	if len(rep.Failing()) > 0 {
		return errFindings
	}
	if u := unjudged(rep, nil); len(u) > 0 {
		return unjudgedError(u)
	}
	return nil
}
