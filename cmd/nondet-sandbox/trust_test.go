package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// The scanned tree, its config and the reports given back to the tool are
// untrusted input: these tests plant in them what would choose what runs
// on the host, and check from the host that nothing of it took effect.

// hijack is a [tool.nondet-sandbox] table that tries every key that
// decides what runs here or loosens the sandbox, beside two that only
// shape the report.
const hijack = `[tool.nondet-sandbox]
runtime = "host"
python = "tools/python3"
oci-runtime = "./tools/runc"
image = "evil:latest"
kubeconfig = "tools/kubeconfig"
namespace = "kube-system"
runtime-class = "none"
seccomp = false
userns = false
memory = "64GiB"
pids = 1000000
cpus = 0
jobs = 512
call-timeout = "10h"
runs = 4
exclude = ["tests"]
`

// writeTree writes files (slash paths) under dir, executable when they
// are under tools/.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(name, "tools/") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// configured parses args as run's command line and applies the config
// files as run does; it returns the options and what was said.
func configured(t *testing.T, args ...string) (runOptions, string, error) {
	t.Helper()
	var o runOptions
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	var notes bytes.Buffer
	_, err := o.configure(fs, fs.Args(), &notes)
	return o, notes.String(), err
}

// defaults are run's options with no flag and no config.
func defaults(t *testing.T) runOptions {
	var o runOptions
	o.AddFlags(pflag.NewFlagSet("run", pflag.ContinueOnError))
	return o
}

// TestProjectConfigShapesTheReportOnly: a project's pyproject.toml sets
// runs and exclude, and none of the keys that decide what runs on the host
// or how contained it is: each is named on stderr with where it belongs.
// The same file named with --config is the user's word and is obeyed.
func TestProjectConfigShapesTheReportOnly(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"proj/pyproject.toml": hijack, "proj/src/m.py": "def f():\n    return 1\n"})
	o, notes, err := configured(t, filepath.Join(dir, "proj/src"))
	if err != nil {
		t.Fatal(err)
	}
	d := defaults(t)
	if o.runtimeName != "auto" || o.python != d.python || o.ociRuntime != "runc" || o.image != d.image || o.kubeconfig != "" ||
		o.namespace != "" || o.runtimeCls != "" || !o.seccomp || !o.userns || o.memory != d.memory || o.pids != d.pids ||
		o.cpus != 0 || o.jobs != d.jobs || o.callTimeout != d.callTimeout {
		t.Errorf("the project's config chose what runs here: %+v", o.sandboxOptions)
	}
	if o.runs != 4 || strings.Join(o.exclude, ",") != "tests" {
		t.Errorf("the project's config did not shape the report: runs %d, exclude %v", o.runs, o.exclude)
	}
	for _, key := range []string{"runtime", "python", "oci-runtime", "image", "kubeconfig", "namespace", "runtime-class", "seccomp", "userns"} {
		if !strings.Contains(notes, key+" ignored: a project's config may not choose what runs on this machine") {
			t.Errorf("%s: not said\n%s", key, notes)
		}
	}
	for _, key := range []string{"memory", "pids", "jobs", "call-timeout"} {
		if !strings.Contains(notes, key+" ignored: a project's config may tighten this limit, not loosen it") {
			t.Errorf("%s: not said\n%s", key, notes)
		}
	}
	if !strings.Contains(notes, "a project outside the working directory: cpus, exclude, runs") {
		t.Errorf("the keys a project outside the working directory set are not named:\n%s", notes)
	}
	if n := strings.Count(notes, "\n"); n != 14 {
		t.Errorf("want one line per refused key and one for what was set, got %d:\n%s", n, notes)
	}

	// A project may tighten a limit.
	writeTree(t, dir, map[string]string{"tight/pyproject.toml": "[tool.nondet-sandbox]\nmemory = \"256MiB\"\npids = 64\ncpus = 0.5\njobs = 1\ncall-timeout = \"2s\"\n", "tight/m.py": ""})
	o, notes, err = configured(t, filepath.Join(dir, "tight"))
	if err != nil || o.memory != 256<<20 || o.pids != 64 || o.cpus != 0.5 || o.jobs != 1 || o.callTimeout.Seconds() != 2 || strings.Contains(notes, "ignored") {
		t.Errorf("tightening: %v %+v\n%s", err, o.sandboxOptions, notes)
	}

	// --config FILE is the user's consent.
	o, _, err = configured(t, "--config", filepath.Join(dir, "proj/pyproject.toml"), filepath.Join(dir, "proj/src"))
	if err != nil || o.runtimeName != "host" || o.python != filepath.Join(dir, "proj/tools/python3") || o.seccomp || o.memory != 64<<30 {
		t.Errorf("--config: %v %+v", err, o.sandboxOptions)
	}
	// A flag wins over both.
	o, _, err = configured(t, "--config", filepath.Join(dir, "proj/pyproject.toml"), "--runtime", "embedded", "--runs", "2", filepath.Join(dir, "proj/src"))
	if err != nil || o.runtimeName != "embedded" || o.runs != 2 {
		t.Errorf("flags: %v %s %d", err, o.runtimeName, o.runs)
	}
}

// TestConfigThatIsNoFileStopsNothing: a pyproject.toml in the tree that
// is a FIFO, a link to /dev/zero or huge is refused or passed over in one
// line, at once.
func TestConfigThatIsNoFileStopsNothing(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	for name, make := range map[string]func(string) error{
		"fifo": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"huge": func(p string) error {
			f, err := os.Create(p)
			if err == nil {
				err = f.Truncate(1 << 30)
				f.Close()
			}
			return err
		},
	} {
		writeTree(t, dir, map[string]string{name + "/m.py": ""})
		if err := make(filepath.Join(dir, name, "pyproject.toml")); err != nil {
			t.Fatal(err)
		}
		_, notes, err := configured(t, filepath.Join(dir, name))
		refused := err != nil && strings.Contains(err.Error(), "pass --no-config to scan without it")
		if !refused && !strings.Contains(notes, "not reading") { // /dev/zero: anyone may write it
			t.Errorf("%s: %v\n%s", name, err, notes)
		}
	}
}

// TestUserConfigIsTrusted: the user's own config file sets what a project
// may not; a project's file may not undo it, and may still shape the
// report over it.
func TestUserConfigIsTrusted(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	writeTree(t, xdg, map[string]string{"nondet-sandbox/config.toml": "runtime = \"oci\"\noci-runtime = \"crun\"\nruns = 5\nmemory = \"1GiB\"\n"})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"pyproject.toml": "[tool.nondet-sandbox]\nruntime = \"host\"\nruns = 3\nmemory = \"2GiB\"\n", "m.py": ""})
	o, notes, err := configured(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.runtimeName != "oci" || o.ociRuntime != "crun" || o.memory != 1<<30 || o.runs != 3 {
		t.Errorf("runtime %s, oci-runtime %s, memory %d, runs %d\n%s", o.runtimeName, o.ociRuntime, o.memory, o.runs, notes)
	}
	if !strings.Contains(notes, "runtime ignored") || !strings.Contains(notes, "memory ignored") {
		t.Errorf("not said:\n%s", notes)
	}
	// --no-config reads neither.
	o, _, _ = configured(t, "--no-config", dir)
	if o.runtimeName != "auto" || o.runs != 3 {
		t.Errorf("--no-config: %s %d", o.runtimeName, o.runs)
	}
}

// TestConfigOfAnotherUserIsNotRead: a pyproject.toml above the project
// that another user owns, or that anyone may write, is not read, with one
// line that says why (as git's safe.directory).
func TestConfigOfAnotherUserIsNotRead(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("CI", "") // outside CI a refused config is a line, not an error
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"pyproject.toml": "[tool.nondet-sandbox]\nruns = 7\n", "proj/m.py": ""})
	conf := filepath.Join(dir, "pyproject.toml")
	if err := os.Chmod(conf, 0o666); err != nil {
		t.Fatal(err)
	}
	o, notes, err := configured(t, filepath.Join(dir, "proj"))
	if err != nil || o.runs != 3 || !strings.Contains(notes, "not reading "+conf+": anyone may write it") {
		t.Errorf("a world-writable config: %v runs %d\n%s", err, o.runs, notes)
	}
	// In CI nobody reads the line: the scan stops instead.
	t.Setenv("CI", "true")
	if _, _, err := configured(t, filepath.Join(dir, "proj")); err == nil || !strings.Contains(err.Error(), "in CI (CI is set)") {
		t.Errorf("a world-writable config in CI: %v", err)
	}
	t.Setenv("CI", "")
	if os.Geteuid() != 0 {
		return // only root can give a file to another user
	}
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(conf, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	o, notes, err = configured(t, filepath.Join(dir, "proj"))
	if err != nil || o.runs != 3 || !strings.Contains(notes, "not reading "+conf+": it belongs to uid 12345") {
		t.Errorf("another user's config: %v runs %d\n%s", err, o.runs, notes)
	}
	// Named with --config, it is the user's choice.
	o, _, err = configured(t, "--config", conf, filepath.Join(dir, "proj"))
	if err != nil || o.runs != 7 {
		t.Errorf("--config: %v runs %d", err, o.runs)
	}
}

// TestUserConfigThroughALink: the user's config is read only when the
// file itself, what it links to and every folder on the way to either are
// the user's or root's: a link another user put in a folder of theirs,
// leading to a file of root's with their text, is not read.
func TestUserConfigThroughALink(t *testing.T) {
	testenv.NeedRoot(t)
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	rootsFile := filepath.Join(t.TempDir(), "theirs.toml")
	if err := os.WriteFile(rootsFile, []byte("runs = 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(xdg, "nondet-sandbox")
	conf := filepath.Join(folder, "config.toml")
	project := t.TempDir()
	writeTree(t, project, map[string]string{"m.py": ""})
	for _, c := range []struct {
		name        string
		folderOwner int
		linkOwner   int
		want        int
		said        string
	}{
		{"the user's link to root's file", 0, 0, 9, ""},
		{"another user's link", 0, 12345, 3, "it belongs to uid 12345"},
		{"a link in another user's folder", 12345, 0, 3, "on its way is " + folder + ", and it belongs to uid 12345"},
	} {
		os.RemoveAll(folder)
		if err := os.Mkdir(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rootsFile, conf); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(conf, c.linkOwner, c.linkOwner); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(folder, c.folderOwner, c.folderOwner); err != nil {
			t.Fatal(err)
		}
		o, notes, err := configured(t, project)
		if err != nil || o.runs != c.want || c.said != "" && !strings.Contains(notes, "not reading "+conf+": ") || !strings.Contains(notes, c.said) {
			t.Errorf("%s: %v runs %d, want %d\n%s", c.name, err, o.runs, c.want, notes)
		}
	}
	// The file the link leads to in a folder of another user's.
	theirs := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "c.toml"), []byte("runs = 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	os.Remove(conf)
	if err := os.Chown(folder, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(theirs, "c.toml"), conf); err != nil {
		t.Fatal(err)
	}
	if o, notes, err := configured(t, project); err != nil || o.runs != 3 || !strings.Contains(notes, "on its way is "+theirs) {
		t.Errorf("a link to a file in another user's folder: %v runs %d\n%s", err, o.runs, notes)
	}
}

// hostileTree is a project whose config asks for the host runtime, its
// own interpreter and its own OCI runtime (each of which would leave a
// mark at marks/NAME on the host if it ran), and whose one function
// writes a mark where the gate does not look.
func hostileTree(t *testing.T, marks string) map[string]string {
	script := "#!/bin/sh\necho ran > " + marks + "/$(basename $0)\nexec /usr/bin/python3 \"$@\"\n"
	return map[string]string{
		"tools/python3":         script,
		"tools/runc":            script,
		"src/tests/test_mod.py": "def test_it():\n    return 1\n",
		"src/mod.py": "import builtins\n\ndef leave_a_mark():\n    o = getattr(builtins, 'op' + 'en')\n" +
			"    with o(" + `"` + marks + `/function"` + ", 'w') as f:\n        f.write('ran')\n    return 1\n",
	}
}

// TestHijackingTreeRunsNothingOnTheHost: scanning a tree whose config
// asks for the host runtime, its own interpreter and its own OCI runtime
// (in the tree, and in a folder above it that another user owns) runs the
// scan in a sandbox, with the user's interpreter: nothing the tree holds
// leaves a mark on the host.
func TestHijackingTreeRunsNothingOnTheHost(t *testing.T) {
	testenv.NeedRoot(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("CI", "") // another user's config is passed over with a line
	for _, where := range []string{"in the tree", "above the tree", "above, another user's"} {
		t.Run(where, func(t *testing.T) {
			dir, marks := t.TempDir(), t.TempDir()
			if err := os.Chmod(marks, 0o777); err != nil {
				t.Fatal(err)
			}
			proj := filepath.Join(dir, "proj")
			writeTree(t, proj, hostileTree(t, marks))
			conf := filepath.Join(proj, "pyproject.toml")
			if where != "in the tree" {
				conf = filepath.Join(dir, "pyproject.toml")
			}
			writeTree(t, filepath.Dir(conf), map[string]string{"pyproject.toml": strings.ReplaceAll(hijack, `"tools/`, `"proj/tools/`)})
			if where == "above, another user's" {
				if err := os.Chown(conf, 12345, 12345); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			root := newRootCommand()
			root.SetArgs([]string{"run", "-q", "--format", "json", "--seed", "5", "--python", testenv.Python(t), filepath.Join(proj, "src")})
			root.SetOut(&out)
			root.SetErr(&errOut)
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var rep report.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Runtime == "host" || rep.Python != testenv.Python(t) {
				t.Errorf("the scan ran on %s with %s", rep.Runtime, rep.Python)
			}
			if strings.Contains(errOut.String(), "not a sandbox") {
				t.Errorf("warned of the host runtime:\n%s", errOut.String())
			}
			entries, _ := os.ReadDir(marks)
			for _, e := range entries {
				t.Errorf("%s ran on the host", e.Name())
			}
			if f := rep.Function("mod.py::leave_a_mark"); f == nil {
				t.Errorf("the function was not scanned:\n%s", out.String())
			}
			// What the tree's exclude hid is in the report, and the keys
			// it set are named: the user did not write them.
			if where == "above, another user's" {
				if len(rep.Excluded) != 0 || rep.Function("tests/test_mod.py::test_it") == nil {
					t.Errorf("another user's config excluded %v", rep.Excluded)
				}
			} else {
				// Ids and the excluded files are from the project's root,
				// the config's folder.
				want := "src/tests/test_mod.py"
				if where == "above the tree" {
					want = "proj/src/tests/test_mod.py"
				}
				if strings.Join(rep.Excluded, ",") != want || rep.Function("tests/test_mod.py::test_it") != nil {
					t.Errorf("excluded %v", rep.Excluded)
				}
				if !strings.Contains(errOut.String(), "a project outside the working directory: cpus, exclude, runs") {
					t.Errorf("the keys the tree set are not named:\n%s", errOut.String())
				}
			}
		})
	}
}

// tamperedReport is a real report of the fixtures with its runtime,
// interpreter and one finding's id or run conditions changed by edit.
func tamperedReport(t *testing.T, edit func(*report.Report)) string {
	t.Helper()
	rep := fixtureReport(t)
	edit(rep)
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var fixtureReportJSON []byte

// fixtureReport is a scan of fixtures/known.py on the host runtime (the
// runtime does not matter: only its fields are used), made once.
func fixtureReport(t *testing.T) *report.Report {
	t.Helper()
	if fixtureReportJSON == nil {
		opts := testOptions(t, "host", 13)
		var out bytes.Buffer
		if err := runRun(context.Background(), opts, []string{"../../fixtures/known.py"}, &out, &bytes.Buffer{}); !errors.Is(err, errFindings) {
			t.Fatal(err)
		}
		fixtureReportJSON = out.Bytes()
	}
	var rep report.Report
	if err := json.Unmarshal(fixtureReportJSON, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// TestReplayTrustsOnlyTheUser: a report that names the host runtime or a
// script as its interpreter replays in a sandbox with the user's
// interpreter; traversing folders, uid 0 and ids outside the scanned tree
// are refused with a message; nothing is left on the host.
func TestReplayTrustsOnlyTheUser(t *testing.T) {
	testenv.NeedRoot(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	marks := t.TempDir()
	script := filepath.Join(marks, "python3")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran > "+marks+"/interpreter\nexec /usr/bin/python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := t.TempDir()
	writeTree(t, secret, map[string]string{"settings.py": "def password():\n    return 'hunter2'\n"})
	rel, err := filepath.Rel(filepath.Join(mustAbs(t, "../../fixtures")), filepath.Join(secret, "settings.py"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "known.py::resolve_features"
	outside := filepath.Join(t.TempDir(), "x")
	cases := []struct {
		name    string
		edit    func(*report.Report)
		id      string
		refused string // "" when it replays
	}{
		{"host runtime and a script for python", func(r *report.Report) { r.Runtime, r.Python = "host", script }, id, ""},
		{"home outside the scratch space", func(r *report.Report) {
			for i := range r.Runs {
				r.Runs[i].Home = "/../../" + outside
			}
		}, id, "has home"},
		{"cwd outside the scratch space", func(r *report.Report) {
			for i := range r.Runs {
				r.Runs[i].Cwd = "$SCRATCH/../../" + outside
			}
		}, id, "has cwd"},
		{"uid 0 with another gid", func(r *report.Report) {
			for i := range r.Runs {
				r.Runs[i].UID, r.Runs[i].GID = 0, 12
			}
		}, id, "has uid/gid"},
		{"uid 1000", func(r *report.Report) {
			for i := range r.Runs {
				r.Runs[i].UID, r.Runs[i].GID = 1000, 1000
			}
		}, id, "has uid/gid"},
		{"a timezone that is a file", func(r *report.Report) {
			for i := range r.Runs {
				r.Runs[i].TZ = ":/etc/shadow"
			}
		}, id, "has tz"},
		{"an id outside the tree", func(r *report.Report) { r.Function(id).ID = filepath.ToSlash(rel) + "::password" }, filepath.ToSlash(rel) + "::password", "names a file outside the scanned tree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := tamperedReport(t, c.edit)
			var out, errOut bytes.Buffer
			root := newRootCommand()
			root.SetArgs([]string{"replay", "--report", path, "--python", testenv.Python(t), c.id})
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := root.ExecuteContext(context.Background())
			if c.refused == "" {
				if !errors.Is(err, errFindings) || !strings.Contains(errOut.String(), "recorded with --runtime host --python "+script) {
					t.Errorf("%v\n%s\n%s", err, out.String(), errOut.String())
				}
			} else if err == nil || !strings.Contains(err.Error(), c.refused) || exitCode(context.Background(), err) != 2 {
				t.Errorf("want a refusal saying %q, got %v\n%s", c.refused, err, out.String())
			}
			if strings.Contains(out.String(), "hunter2") {
				t.Errorf("replay imported a file outside the report's targets:\n%s", out.String())
			}
			if _, err := os.Stat(filepath.Join(marks, "interpreter")); err == nil {
				t.Errorf("the report's interpreter ran")
			}
			if _, err := os.Stat(outside); err == nil {
				t.Errorf("replay made %s", outside)
			}
		})
	}
	// The host only when the command line says so.
	path := tamperedReport(t, func(r *report.Report) {})
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	writeTree(t, xdg, map[string]string{"nondet-sandbox/config.toml": "runtime = \"host\"\n"})
	root := newRootCommand()
	root.SetArgs([]string{"replay", "--report", path, id})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "only when --runtime host is on the command line") {
		t.Errorf("a config file chose the host for replay: %v", err)
	}
}

func mustAbs(t *testing.T, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestHostileReportsAreRefused: reports given to merge, --baseline and
// replay that are huge, deeply nested, not regular files or not reports
// are refused in one line (exit 2) before anything runs.
func TestHostileReportsAreRefused(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxReport + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	deep := filepath.Join(dir, "deep.json")
	if err := os.WriteFile(deep, []byte(`{"tool":{"name":"x"},"functions":`+strings.Repeat("[", 200000)+strings.Repeat("]", 200000)+"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO no one writes: refused at once, not waited on.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{huge: "larger than", deep: "is not a nondet-sandbox JSON report", dir: "not a regular file", "/dev/zero": "not a regular file", fifo: "not a regular file"} {
		for _, args := range [][]string{{"merge", name}, {"render", name}, {"replay", "--report", name, "a.py::f"}, {"run", "--baseline", name, "../../fixtures/known.py"}} {
			root := newRootCommand()
			root.SetArgs(args)
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(context.Background()) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("%v: still reading after a minute", args)
			}
			if err == nil || !strings.Contains(err.Error(), want) || exitCode(context.Background(), err) != 2 {
				t.Errorf("%v: want a refusal saying %q, got %v", args, want, err)
			}
		}
	}
}

// TestMergeOfForgedPartsInjectsNothing: a part whose tool name and ids
// carry workflow commands and terminal escapes merges into a report whose
// github format has no line the runner would take as a command but the
// tool's own annotations, and whose text has no escape.
func TestMergeOfForgedPartsInjectsNothing(t *testing.T) {
	dir := t.TempDir()
	part := `{"tool":{"name":"x\n::error::pwned\n::add-mask::secret","version":"1"},"runtime":"embedded","python":"python3","seed":1,
"targets":["."],"runs":[{"id":0},{"id":1}],"conditions_skipped":[],"modules":[{"path":"evil.py","status":"ok"}],
"functions":[{"id":"evil.py::f\r::warning::x\u001b[31m","line":1,"verdict":"look","reason":"\n::error::y\u0007","causes":[]}],
"census":{},"processes":1,"calls":1,"part":{"index":1,"of":1}}`
	path := filepath.Join(dir, "part.json")
	if err := os.WriteFile(path, []byte(part), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"github", "text"} {
		var out bytes.Buffer
		if err := runMerge(context.Background(), outputOptions{format: format}, []string{path}, &out); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "::") && !strings.HasPrefix(line, "::notice file=") {
				t.Errorf("%s: a line the runner takes as a command: %q", format, line)
			}
		}
		if strings.ContainsAny(out.String(), "\x1b\x07\r") {
			t.Errorf("%s: a control character reached the output: %q", format, out.String())
		}
	}
}

// TestReplayNeverRunsAsRoot: a report whose runs say uid 0 (what a scan
// writes where the user was not varied) replays as the base probe user
// on every runtime that varies users, Docker included, where there is no
// user namespace and uid 0 would be the host's root.
func TestReplayNeverRunsAsRoot(t *testing.T) {
	testenv.NeedRoot(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	opts := testOptions(t, "embedded", 21)
	var out bytes.Buffer
	if err := runRun(context.Background(), opts, []string{"../../fixtures/causes.py::from_user"}, &out, &bytes.Buffer{}); !errors.Is(err, errFindings) {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for i := range rep.Runs {
		rep.Runs[i].UID, rep.Runs[i].GID = 0, 0
	}
	data, _ := json.Marshal(&rep)
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []string{"embedded", "docker"} {
		t.Run(rt, func(t *testing.T) {
			python := testenv.Python(t)
			if rt == "docker" {
				python = "python3" // the image's
			}
			var rout, rerr bytes.Buffer
			root := newRootCommand()
			root.SetArgs([]string{"replay", "--runtime", rt, "--python", python, "--report", path, "causes.py::from_user"})
			root.SetOut(&rout)
			root.SetErr(&rerr)
			err := root.ExecuteContext(context.Background())
			if err != nil && !errors.Is(err, errFindings) {
				t.Fatalf("%v\n%s", err, rerr.String())
			}
			t.Log(rout.String())
			if !strings.Contains(rout.String(), `replayed run 0: V:"probe61000"`) || strings.Contains(rout.String(), `V:"root"`) {
				t.Errorf("replayed as root, or not at all:\n%s", rout.String())
			}
		})
	}
}

// TestConfigErrorsSayWhatToDo: a misspelt key names the key it is close
// to, and a value of the wrong kind says what was wanted, not the
// parser's error.
func TestConfigErrorsSayWhatToDo(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for text, want := range map[string]string{
		"run = 3\n":            `has no key "run"; did you mean "runs"?`,
		"runs = \"x\"\n":       `runs = "x": not a whole number`,
		"call-timeout = 7\n":   `call-timeout = "7": not a duration (5s, 2m, 1h30m)`,
		"smell-runs = \"a\"\n": `smell-runs = "a": not a whole number`,
	} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"pyproject.toml": "[tool.nondet-sandbox]\n" + text, "m.py": ""})
		_, _, err := configured(t, dir)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("%q: %v, want it to say %q", text, err, want)
		}
	}
}
