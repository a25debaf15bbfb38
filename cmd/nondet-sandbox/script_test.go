package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// TestScripts runs the command end to end on the txtar scripts in
// testdata/script. Conditions: [root] (the container runtimes can run).
func TestScripts(t *testing.T) {
	testenv.Integration(t)
	python := testenv.Python(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PYTHON", python)
			env.Setenv(noCacheVar, "1") // cache.txtar turns it on
			env.Setenv("XDG_CACHE_HOME", env.WorkDir+"/.cache")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				// A script that needs root and finds none would skip its
				// container half: under the no-skip rule that is a failure.
				if os.Geteuid() != 0 && os.Getenv(testenv.NoSkipVar) == "1" {
					return false, fmt.Errorf("[root]: not root, and %s=1 forbids skipping", testenv.NoSkipVar)
				}
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
