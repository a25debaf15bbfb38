package main

import (
	"context"
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
	if runtime != "docker" && runtime != "kubernetes" { // the image's own
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
	if o.runs != 3 || o.smellRuns != 3 || o.callTimeout != 5*time.Second || o.idleTimeout != 2*time.Second || !o.seccomp || !o.userns || o.pids != 256 || o.ociRuntime != "runc" {
		t.Fatalf("%+v", o)
	}
}

// TestEachCommandTakesItsOwnFlags: doctor and replay take only the flags
// they use, the enum flags refuse a value they do not know, --memory reads
// sizes as people write them, and completion offers the runtimes.
func TestEachCommandTakesItsOwnFlags(t *testing.T) {
	root := newRootCommand()
	want := map[string]struct{ has, hasNot []string }{
		"run":     {[]string{"runtime", "format", "output", "seed", "runs", "memory", "order-free"}, nil},
		"doctor":  {[]string{"runtime", "python", "memory", "format"}, []string{"output", "seed", "runs", "order-free", "smell-runs", "private", "quiet", "jobs"}},
		"replay":  {[]string{"runtime", "python", "report", "call-timeout", "jobs"}, []string{"format", "output", "seed", "runs", "order-free", "smell-runs", "quiet"}},
		"version": {[]string{"runtime", "python"}, []string{"format", "output", "seed", "runs"}},
	}
	for name, w := range want {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range w.has {
			if cmd.Flags().Lookup(f) == nil {
				t.Errorf("%s has no --%s", name, f)
			}
		}
		for _, f := range w.hasNot {
			if cmd.Flags().Lookup(f) != nil {
				t.Errorf("%s takes --%s, which it does not use", name, f)
			}
		}
	}
	var o runOptions
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--memory", "512MiB", "--runtime", "host", "--format", "junit"}); err != nil {
		t.Fatal(err)
	}
	if o.memory != 512<<20 || o.runtimeName != "host" || o.format != "junit" {
		t.Errorf("parsed %d %s %s", o.memory, o.runtimeName, o.format)
	}
	for _, bad := range [][]string{{"--runtime", "podman"}, {"--format", "yaml"}, {"--memory", "lots"}} {
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"__complete", "run", "--runtime", ""})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, name := range runtimeNames() {
		if !strings.Contains(out.String(), name+"\n") {
			t.Errorf("completion of --runtime does not offer %s:\n%s", name, out.String())
		}
	}
}

// TestArgumentsCheckedBeforeAnySandbox: a wrong path, a folder with no
// Python file and an output that cannot be written are said before a
// runtime is built (an unknown interpreter would fail a runtime's start).
func TestArgumentsCheckedBeforeAnySandbox(t *testing.T) {
	o := testOptions(t, "docker", 1)
	o.image = "no-such-image-anywhere:never"
	for name, c := range map[string]struct {
		args   []string
		output string
		code   int
		says   string
	}{
		"missing path":   {[]string{"no/such/dir"}, "", exitUsage, "no such file or directory"},
		"no Python file": {[]string{t.TempDir()}, "", exitEmpty, "no Python file"},
		"output":         {[]string{"../../fixtures/known.py"}, "/no/such/dir/r.json", exitUsage, "--output"},
	} {
		t.Run(name, func(t *testing.T) {
			o := o
			o.output = c.output
			err := runRun(context.Background(), o, c.args, &strings.Builder{}, &strings.Builder{})
			if code := exitCode(context.Background(), err); code != c.code || !strings.Contains(err.Error(), c.says) {
				t.Errorf("exit %d, %v; want %d saying %q", code, err, c.code, c.says)
			}
		})
	}
}
