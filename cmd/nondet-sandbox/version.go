package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	var opts sandboxOptions
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Python interpreter probes would use and the runtime a scan would take",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	opts.AddFlags(fs)
	completeChoices(cmd, "runtime")
	return cmd
}

// runVersion says what a scan would run with here; a Python or a runtime
// that is missing is said, not an error: that is what the command is for.
func runVersion(ctx context.Context, opts sandboxOptions, w io.Writer) error {
	fmt.Fprintf(w, "nondet-sandbox %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "python: %s\n", pythonVersion(ctx, opts.python))
	var notes strings.Builder
	opts.notes = &notes
	rt, err := newRuntime(ctx, opts.runtimeName, opts)
	switch {
	case err != nil:
		fmt.Fprintf(w, "runtime: none (--runtime %s): %v\n", opts.runtimeName, err)
	case opts.runtimeName == "auto":
		fmt.Fprintf(w, "runtime: %s (what --runtime auto takes here)\n", rt.Name())
	default:
		fmt.Fprintf(w, "runtime: %s\n", rt.Name())
	}
	if rt != nil {
		closeRuntime(rt)
	}
	return nil
}

func pythonVersion(ctx context.Context, python string) string {
	path, err := exec.LookPath(python)
	if err != nil {
		return fmt.Sprintf("%s not found (pass --python with a path to python3)", python)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-I", "-S", "-c", "import sys; print(sys.version.split()[0])").Output()
	if err != nil {
		return fmt.Sprintf("%s does not run: %v", path, err)
	}
	return fmt.Sprintf("%s (Python %s)", path, strings.TrimSpace(string(out)))
}
