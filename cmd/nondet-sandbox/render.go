package main

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// renderOptions are render's flags: the form, and where it goes.
type renderOptions struct {
	format string
	output string
	show   []string
}

func (o *renderOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var(newChoice(&o.format, "format", "text", formats), "format", "report format: text, concise, json, sarif, github, junit or html")
	fs.StringSliceVar(&o.show, "show", nil, "with --format text, also list: deterministic")
	fs.StringVarP(&o.output, "output", "o", "", "write the report to this file instead of standard output, replacing it only once the whole report is written")
}

func newRenderCommand() *cobra.Command {
	var opts renderOptions
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

func runRender(_ context.Context, opts renderOptions, path string, stdout io.Writer) error {
	if !slices.Contains(formats, opts.format) {
		return usageErrorf("--format %q: choose %s", opts.format, strings.Join(formats, ", "))
	}
	if err := checkShow(opts.show); err != nil {
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
