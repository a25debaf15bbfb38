package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
)

// doctorOptions are doctor's flags: the sandbox's, and the format.
type doctorOptions struct {
	sandboxOptions
	format string
}

func newDoctorCommand() *cobra.Command {
	var opts doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show which conditions the runtime can vary here, and the sandbox as a probe sees it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	opts.AddFlags(cmd.Flags())
	cmd.Flags().Var(newChoice(&opts.format, "format", "text", []string{"text", "json"}), "format", "text or json")
	completeChoices(cmd, "runtime", "format")
	return cmd
}

func runDoctor(ctx context.Context, opts doctorOptions, stdout, stderr io.Writer) error {
	if opts.format != "text" && opts.format != "json" {
		return usageErrorf("--format %q: choose text or json", opts.format)
	}
	if err := opts.sandboxOptions.check(); err != nil {
		return err
	}
	opts.notes = stderr
	rt, err := newRuntime(ctx, opts.runtimeName, opts.sandboxOptions)
	if err != nil {
		return err
	}
	defer closeRuntime(rt)
	cache := cacheDir()
	d, err := engine.Doctor(ctx, engine.Options{
		Runtime: rt, Python: opts.python, Jobs: 1, Seed: 1, CacheDir: cache, Notes: stderr,
		Limits: opts.limits(),
	})
	if err != nil {
		return err
	}
	if opts.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return engine.WriteDiagnosis(stdout, d)
}
