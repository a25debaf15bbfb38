package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "nondet-sandbox",
		Short: "Find Python functions that answer differently from one run to the next",
		Long: `nondet-sandbox calls every module-level function of a Python tree on a fixed
ladder of inputs, in several fresh interpreters under deliberately varied
conditions, and reports the functions whose canonical answers disagreed, each
with a witness: the input, the two answers and the conditions of both runs.

Exit status: 0 no findings, 1 findings, 2 bad usage or unusable input,
3 no findings but something could not be judged (a module that does not
read or parse, a named function that was not probed), 5 no Python file
under the given paths, 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(newRunCommand(), newReplayCommand(), newDoctorCommand(), newBenchCommand(), newVersionCommand(), newImageCommand(), newMergeCommand(), newRenderCommand(), newCleanCommand())
	return root
}
