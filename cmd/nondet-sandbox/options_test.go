package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// testOptions are the run command's options as its flags default them,
// for a test: JSON, quiet, two jobs, a 1 GiB memory limit, Debian's python3
// (the image's on docker), the given runtime and seed. Each test changes
// only what it is about.
func testOptions(t *testing.T, runtime string, seed uint64) runOptions {
	t.Helper()
	var o runOptions
	o.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	o.format, o.quiet, o.jobs, o.memory, o.runtimeName, o.seed = "json", true, 2, 1<<30, runtime, seed
	o.python = "python3"
	if runtime != "docker" {
		o.python = testenv.Python(t)
	}
	return o
}

// labelLines reads a labels file under fixtures/: the fields of each line
// that is neither blank nor a comment, each with at least min fields.
func labelLines(t *testing.T, name string, min int) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < min {
			t.Fatalf("%s: %q has fewer than %d fields", name, line, min)
		}
		out = append(out, fs)
	}
	return out
}

// labelMap is a labels file as first field -> second field.
func labelMap(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, fs := range labelLines(t, name, 2) {
		out[fs[0]] = fs[1]
	}
	return out
}

func TestTestOptionsAreTheFlagDefaults(t *testing.T) {
	o := testOptions(t, "host", 1)
	if o.runs != 3 || o.smellRuns != 3 || o.callTimeout != 10*time.Second || !o.seccomp || !o.userns || o.pids != 256 || o.ociRuntime != "runc" {
		t.Fatalf("%+v", o)
	}
}
