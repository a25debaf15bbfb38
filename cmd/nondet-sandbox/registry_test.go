package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestRuntimeFlagsComeFromTheRegistry: each flag a registered runtime
// declares is a flag of run, replay and doctor whose help names the
// runtimes that read it, and a config key only the user may set, a path
// key when the runtime says its value is a path.
func TestRuntimeFlagsComeFromTheRegistry(t *testing.T) {
	flags := runtimeFlags()
	if len(flags) < 7 {
		t.Fatalf("the registry declares %d runtime flags: %v", len(flags), flags)
	}
	var o sandboxOptions
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	for _, f := range flags {
		fl := fs.Lookup(f.Name)
		if fl == nil {
			t.Errorf("--%s is declared by a runtime but is no flag", f.Name)
			continue
		}
		if !strings.HasPrefix(fl.Usage, "with --runtime ") {
			t.Errorf("--%s's help does not say which runtimes read it: %q", f.Name, fl.Usage)
		}
		k, ok := lookupKey(f.Name)
		if !ok || k.trust != userOnly || k.path != f.Path {
			t.Errorf("config key %s: %+v (found %v), want user-only, path %v", f.Name, k, ok, f.Path)
		}
	}
	if got := forRuntimes("seccomp", "x"); got != "with --runtime embedded, rootless or oci: x" {
		t.Errorf("seccomp's help: %q", got)
	}
}
