package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/nondet-sandbox/nondet-sandbox/report"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
)

// replayOptions are replay's flags: the sandbox's, the call's, and the
// report to replay from.
type replayOptions struct {
	sandboxOptions
	callOptions
	report string
	root   string
}

func newReplayCommand() *cobra.Command {
	var opts replayOptions
	cmd := &cobra.Command{
		Use:   "replay --report REPORT.json ID",
		Short: "Re-run one function on its witness input under the two recorded runs' conditions",
		Example: `  nondet-sandbox run --format json -o report.json src/
  nondet-sandbox replay --report report.json util.py::normalise`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd.Context(), opts, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.Flags().Changed("runtime"), cmd.Flags().Changed("python"))
		},
	}
	opts.sandboxOptions.AddFlags(cmd.Flags())
	opts.callOptions.AddFlags(cmd.Flags())
	completeChoices(cmd, "runtime")
	cmd.Flags().StringVar(&opts.report, "report", "", "the JSON report the witness comes from (required)")
	cmd.Flags().StringVar(&opts.root, "root", "", "the folder the scan ran in, when it is not this one")
	_ = cmd.MarkFlagRequired("report")
	return cmd
}

func runReplay(ctx context.Context, opts replayOptions, id string, stdout, stderr io.Writer, runtimeSet, pythonSet bool) error {
	rep, err := readReport(opts.report, "--report")
	if err != nil {
		return err
	}
	// Replay where the scan ran, with what it ran, unless told otherwise.
	if !runtimeSet && rep.Runtime != "" {
		opts.runtimeName = rep.Runtime
	}
	if !pythonSet && rep.Python != "" {
		opts.python = rep.Python
	}
	opts.notes = stderr
	rt, err := newRuntime(ctx, opts.runtimeName, opts.sandboxOptions)
	if err != nil {
		return err
	}
	defer closeRuntime(rt)
	eo := engine.Options{
		Runtime: rt, Python: opts.python, Jobs: opts.jobs, CallTimeout: opts.callTimeout, Unsafe: opts.unsafe,
		Private: true, Limits: opts.limits(),
		CacheDir: cacheDir(), Version: version, Notes: stderr,
	}
	got, f, err := engine.Replay(ctx, eo, rep, id, opts.root)
	if err != nil {
		return err
	}
	w := f.Replayable()
	fmt.Fprintf(stdout, "%s on (%s), rung %d\n", f.ID, strings.Join(w.Args, ", "), w.Rung)
	fmt.Fprintf(stdout, "recorded: %s  then  %s\n", w.Answers[0].Value, w.Answers[1].Value)
	reproduced := true
	for i, r := range got {
		value := r.Value
		if value == "" {
			value = "(no answer: " + r.Detail + ")"
		}
		switch {
		case w.Breaker != "" && r.Breaker != "":
			fmt.Fprintf(stdout, "replayed run %d: %s, then under %s: %s\n", r.Run.ID, value, r.Breaker, r.Value2)
		default:
			fmt.Fprintf(stdout, "replayed run %d: %s\n", r.Run.ID, value)
		}
		if w.Breaker == "" && value != w.Answers[i].Value {
			reproduced = false
		}
		if w.Breaker != "" && (r.Breaker != w.Breaker || r.Value2 == "" || r.Value2 == r.Value) {
			reproduced = false
		}
	}
	if w.Breaker == "" && len(got) == 2 && got[0].Value == got[1].Value {
		reproduced = false
	}
	if reproduced {
		fmt.Fprintln(stdout, "reproduced: the same two answers again")
		return errFindings
	}
	fmt.Fprintln(stdout, "not reproduced exactly: the answers moved (a clock, an RNG, an address, or the calls before it)")
	return nil
}

// readReport reads a JSON report that flag names.
func readReport(path, flag string) (*report.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil || rep.Tool.Name == "" {
		return nil, usageErrorf("%s %s is not a nondet-sandbox JSON report (write one with --format json)", flag, path)
	}
	return &rep, nil
}
