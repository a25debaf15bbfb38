package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

func newRenderCommand() *cobra.Command {
	var opts outputOptions
	cmd := &cobra.Command{
		Use:   "render REPORT.json",
		Short: "Write a JSON report in another format, without scanning again",
		Long: `Write a report that run (or merge) wrote with --format json in any other
format: a long scan's JSON becomes HTML, SARIF or text without running a
probe. The report is read as untrusted data, like merge's parts. The exit
status is 0 when the report was written, whatever it found: the scan's own
exit status said that.`,
		Example: `  nondet-sandbox run --format json -o scan.json src/
  nondet-sandbox render --format html -o scan.html scan.json
  nondet-sandbox render --format sarif -o scan.sarif scan.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRender(cmd.Context(), opts, args[0], cmd.OutOrStdout())
		},
	}
	opts.AddFlags(cmd.Flags())
	completeChoices(cmd, "format")
	return cmd
}

func runRender(_ context.Context, opts outputOptions, path string, stdout io.Writer) error {
	if err := opts.check(); err != nil {
		return err
	}
	rep, err := readReport(path, "render")
	if err != nil {
		return err
	}
	out, err := openOutput(opts.output, stdout)
	if err != nil {
		return err
	}
	defer out.abort()
	out.show = opts.show
	return out.report(opts.format, rep)
}
