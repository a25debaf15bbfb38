package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// TestScripts runs the command end to end on the txtar scripts in
// testdata/script. Conditions: [root] (the container runtimes can run).
func TestScripts(t *testing.T) {
	python := testenv.Python(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PYTHON", python)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, nil
		},
	})
}
