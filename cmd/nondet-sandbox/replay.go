package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// replayOptions are replay's flags: the sandbox's, the call's, and the
// report to replay from.
type replayOptions struct {
	sandboxOptions
	callOptions
	report  string
	root    string
	snippet bool
	// runtimeGiven is set when --runtime is on the command line: only
	// then may replay run unisolated (a report or a config file never
	// chooses the host).
	runtimeGiven bool
}

func newReplayCommand() *cobra.Command {
	var opts replayOptions
	cmd := &cobra.Command{
		Use:   "replay --report REPORT.json ID",
		Short: "Re-run one function on its witness input under the two recorded runs' conditions",
		Long: `Re-run one function of a JSON report on its witness input, under the
conditions of the two runs whose answers disagreed, and say what that shows:
reproduced (the same two answers) or still nondeterministic (two other
answers: a clock, an RNG), exit status 1; fixed (the runs now agree), exit
status 0; not judged (a run gave no answer), exit status 3.`,
		Example: `  nondet-sandbox run --format json -o report.json src/
  nondet-sandbox replay --report report.json util.py::normalise`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmdline := commandLine(cmd.Flags())
			if err := applyUserConfig(cmd.Flags(), cmdline, cmd.ErrOrStderr()); err != nil {
				return err
			}
			opts.runtimeGiven = cmdline["runtime"]
			return runReplay(cmd.Context(), opts, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	opts.sandboxOptions.AddFlags(cmd.Flags())
	opts.callOptions.AddFlags(cmd.Flags())
	completeChoices(cmd, "runtime")
	cmd.Flags().StringVar(&opts.report, "report", "", "the JSON report the witness comes from (required)")
	cmd.Flags().StringVar(&opts.root, "root", "", "the folder the scan ran in, when it is not this one")
	cmd.Flags().BoolVar(&opts.snippet, "python-snippet", false, "after the replay, print a shell snippet that makes the witness's call in a plain interpreter under each run's hash seed, zone, locale, HOME, umask and working directory (unsandboxed: read it before you run it)")
	_ = cmd.MarkFlagRequired("report")
	return cmd
}

// runReplay replays one witness of a report. The report gives only values
// (the id, the input, the runs' conditions, each checked against what a
// scan writes); where and with what the function runs is this command's
// own choice, its flags or their defaults, never the report's.
func runReplay(ctx context.Context, opts replayOptions, id string, stdout, stderr io.Writer) error {
	if err := opts.sandboxOptions.check(); err != nil {
		return err
	}
	if err := opts.callOptions.check(); err != nil {
		return err
	}
	rep, err := readReport(opts.report, "--report")
	if err != nil {
		return err
	}
	opts.notes, opts.unconfined = stderr, opts.unsafe
	rt, err := newRuntime(ctx, opts.runtimeName, opts.sandboxOptions)
	if err != nil {
		return err
	}
	defer closeRuntime(rt)
	if !rt.Isolated() && !opts.runtimeGiven {
		return usageErrorf("replay runs on the host only when --runtime host is on the command line")
	}
	recorded, replaying := runtimeLabel(rep.Runtime, rep.OCIRuntime), runtimeLabel(rt.Name(), runtimeVariant(rt, opts.sandboxOptions))
	if recorded != replaying || rep.Python != opts.python {
		fmt.Fprintf(stderr, "nondet-sandbox: the report was recorded with --runtime %s --python %s; replaying with --runtime %s --python %s (give --runtime and --python to choose)\n",
			report.TerminalSafe(recorded), report.TerminalSafe(rep.Python), replaying, opts.python)
	}
	if rep.OCIRuntime != "" && rep.OCIRuntime != runtimeVariant(rt, opts.sandboxOptions) {
		// gVisor's kernel answers some calls as Linux does not: a witness
		// recorded under one kernel may not come back under another.
		fmt.Fprintf(stderr, "nondet-sandbox: this replay cannot run under %s, which recorded the report; give --runtime oci --oci-runtime %s to replay under it\n",
			report.TerminalSafe(rep.OCIRuntime), report.TerminalSafe(rep.OCIRuntime))
	}
	eo := engine.Options{
		Runtime: rt, Python: opts.python, Jobs: opts.jobs, CallTimeout: opts.callTimeout, IdleTimeout: opts.idleTimeout, FunctionBudget: opts.budget(), Unsafe: opts.unsafe,
		Private: true, Limits: opts.limits(),
		CacheDir: cacheDir(), Version: version, Notes: stderr, ProjectRoot: projectRoots(),
	}
	got, f, err := engine.Replay(ctx, eo, rep, id, opts.root)
	if err != nil {
		return err
	}
	w := f.Replayable()
	fmt.Fprintf(stdout, "%s: input %s, rung %d\n", report.TerminalSafe(f.ID), report.TerminalSafe(w.Input()), w.Rung)
	fmt.Fprintf(stdout, "recorded: %s  then  %s\n", report.TerminalSafe(w.Answers[0].Value), report.TerminalSafe(w.Answers[1].Value))
	if d := w.DivergedAt; d != nil {
		// What the report says; the replay below checks only the answers.
		fmt.Fprintf(stdout, "recorded as diverging at %s\n", report.TerminalSafe(d.String()))
	}
	for _, r := range got {
		value := r.Value
		if value == "" {
			value = "(no answer: " + r.Detail + ")"
		}
		if w.Breaker != "" && r.Breaker != "" {
			fmt.Fprintf(stdout, "replayed run %d: %s, then under %s: %s\n", r.Run.ID, report.TerminalSafe(value), r.Breaker, report.TerminalSafe(r.Value2))
		} else {
			fmt.Fprintf(stdout, "replayed run %d: %s\n", r.Run.ID, report.TerminalSafe(value))
		}
	}
	outcome, err := judgeReplay(w, got)
	fmt.Fprintln(stdout, outcome)
	if opts.snippet {
		// Only now: Replay has checked that the witness's input is the
		// one discovery shows today, not whatever the report says.
		snippet, serr := engine.Reproduction(rep, id, opts.root, opts.python, projectRoots())
		if serr != nil {
			return serr
		}
		fmt.Fprintf(stdout, "\n%s", snippet)
	}
	return err
}

// judgeReplay says what a replay of witness w shows, and the exit status
// that goes with it: errFindings when the function still gives two
// answers (the recorded ones, or others: a clock, an RNG), nil when it is
// fixed (one answer where it gave two), errUnjudged when a run gave no
// answer to compare.
func judgeReplay(w *report.Witness, got []engine.Replayed) (string, error) {
	for _, r := range got {
		if r.Value == "" {
			return fmt.Sprintf("not judged: run %d gave no answer (%s)", r.Run.ID, r.Detail),
				fmt.Errorf("the replay could not compare two answers: %w", errUnjudged)
		}
	}
	if w.Breaker != "" {
		r := got[0]
		switch {
		case r.Breaker == w.Breaker && r.Value == w.Answers[0].Value && r.Value2 == w.Answers[1].Value:
			return "reproduced: the same two answers again", errFindings
		case r.Breaker != "" && r.Value2 != "" && r.Value2 != r.Value:
			return "still nondeterministic: two answers in one run again, not the recorded ones (a clock, an RNG, an address)", errFindings
		}
		return "fixed: one run now gives one answer, under the same breaker and input", nil
	}
	if len(got) != 2 {
		return "not judged: the replay did not run both runs", fmt.Errorf("the replay ran %d runs: %w", len(got), errUnjudged)
	}
	a, b := got[0].Value, got[1].Value
	switch {
	case a == w.Answers[0].Value && b == w.Answers[1].Value:
		return "reproduced: the same two answers again", errFindings
	case a != b:
		return "still nondeterministic: the two runs disagree again, with other answers (a clock, an RNG, an address, or the calls before it)", errFindings
	}
	return "fixed: the two runs now agree (" + report.TerminalSafe(clipValue(a)) + ")", nil
}

// clipValue shortens an answer for one line.
func clipValue(v string) string {
	if r := []rune(v); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return v
}

// maxReport bounds a report read from a file: reports come from
// elsewhere (CI artifacts, baselines), and one far larger than any scan
// writes is refused before it is held in memory.
const maxReport = 1 << 30

// readReport reads a JSON report that flag names.
func readReport(path, flag string) (*report.Report, error) {
	// Opened without waiting: a FIFO (or a device) is refused, not waited
	// on for a writer that never comes.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, usageErrorf("%s %s is not a regular file", flag, path)
	}
	if st.Size() > maxReport {
		return nil, usageErrorf("%s %s is larger than %d MiB: no scan writes a report that large", flag, path, maxReport>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReport+1))
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	if len(data) > maxReport {
		return nil, usageErrorf("%s %s is larger than %d MiB: no scan writes a report that large", flag, path, maxReport>>20)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil || rep.Tool.Name == "" {
		return nil, usageErrorf("%s %s is not a nondet-sandbox JSON report (write one with --format json)", flag, path)
	}
	if err := rep.Validate(); err != nil {
		return nil, usageErrorf("%s %s: %v", flag, path, err)
	}
	return &rep, nil
}

// runtimeLabel is a runtime as --runtime and --oci-runtime name it.
func runtimeLabel(name, oci string) string {
	if oci != "" {
		return name + " --oci-runtime " + oci
	}
	return name
}
