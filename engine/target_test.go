package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestWalkLeavesOutWhatAProjectDoes: a walk of a project reads neither
// its virtual environments (by name or by pyvenv.cfg), build output and
// other ecosystems' trees, nor what git ignores; it reads them when the
// folder is an installed package's, or is named as the target. A
// repository's config cannot make the walk run a program.
func TestWalkLeavesOutWhatAProjectDoes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	files := []string{
		"app/main.py", "app/util.py", "tests/test_main.py",
		"venv/lib/site.py", "env/lib/site.py", "build/lib/app/main.py", "dist/x.py",
		"node_modules/pkg/gen.py", "generated/table.py", "app/secret_local.py",
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("def f():\n    return 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "env/pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("generated/\nsecret_*.py\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(t.TempDir(), "pwned")
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("config", "core.fsmonitor", "touch "+pwned+"; false")

	rels := func(targets ...Target) []string {
		found, _, _, err := findSources(targets, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range found {
			out = append(out, f.Rel)
		}
		return out
	}
	got := rels(Target{Arg: dir, Base: dir, Path: dir})
	want := []string{"app/main.py", "app/util.py", "tests/test_main.py"}
	if !slices.Equal(got, want) {
		t.Errorf("the project: read %v, want %v", got, want)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("the repository's core.fsmonitor ran")
	}
	venv := filepath.Join(dir, "venv")
	if got := rels(Target{Arg: venv, Base: venv, Path: venv}); !slices.Equal(got, []string{"lib/site.py"}) {
		t.Errorf("venv named as the target: read %v", got)
	}
	site := filepath.Join(dir, "build")
	if got := rels(Target{Arg: site, Base: site, Path: site, Installed: true}); !slices.Equal(got, []string{"lib/app/main.py"}) {
		t.Errorf("an installed package's folder: read %v", got)
	}
}

// TestAnAuditLeavesOutADistributionsTests: an installed distribution's own
// tests (tests and test folders, test_*.py, *_test.py, conftest.py) are
// not its library: an audit lists them as excluded and reads the rest. A
// project's tests are read.
func TestAnAuditLeavesOutADistributionsTests(t *testing.T) {
	site := t.TempDir()
	for _, f := range []string{"pkg/core.py", "pkg/testing.py", "pkg/tests/test_core.py", "pkg/tests/helpers.py",
		"pkg/test/data.py", "pkg/test_more.py", "pkg/core_test.py", "pkg/conftest.py", "tests/__init__.py"} {
		p := filepath.Join(site, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("def f():\n    return 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var read []string
	found, excluded, _, err := findSources([]Target{{Arg: site, Base: site, Path: filepath.Join(site, "pkg"), Installed: true},
		{Arg: site, Base: site, Path: filepath.Join(site, "tests"), Installed: true}}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		read = append(read, f.Rel)
	}
	if want := []string{"pkg/core.py", "pkg/testing.py"}; !slices.Equal(read, want) {
		t.Errorf("read %v, want %v", read, want)
	}
	if want := []string{"pkg/conftest.py", "pkg/core_test.py", "pkg/test/data.py", "pkg/test_more.py", "pkg/tests/helpers.py", "pkg/tests/test_core.py", "tests/__init__.py"}; !slices.Equal(excluded, want) {
		t.Errorf("excluded %v, want %v", excluded, want)
	}
	found, _, _, _ = findSources([]Target{{Arg: site, Base: site, Path: site}}, Filter{})
	if len(found) != 9 {
		t.Errorf("a project's tests: read %d files, want all 9", len(found))
	}
}
