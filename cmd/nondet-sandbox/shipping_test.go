package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// buildBinary builds the command as a user installs it, into a folder of
// its own, and returns that folder.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-tags", "seccomp", "-o", filepath.Join(bin, "nondet-sandbox"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestPreCommitHook runs the repository's hook through Debian's pre-commit
// (try-repo, on a scratch repository): a file with a nondeterministic
// function fails the commit and names it; a deterministic one passes.
func TestPreCommitHook(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t) // the hook runs the default runtime
	if _, err := exec.LookPath("pre-commit"); err != nil {
		testenv.Skip(t, "pre-commit is not installed (scripts/test-deps installs it)")
	}
	bin := buildBinary(t)
	self, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	files := map[string]string{
		"src/bad.py": "def tags(words):\n    return list({w + '!' for w in words})\n",
		"good.py":    "def tags(words):\n    return sorted({w + '!' for w in words})\n",
	}
	for name, src := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+home, "PRE_COMMIT_HOME="+filepath.Join(home, "cache"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	hook := func(file string) (string, error) {
		cmd := exec.Command("pre-commit", "try-repo", self, "nondet-sandbox", "--files", file)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Ids are the repository's, as in a scan of the whole tree: a
	// baseline made with `run .` applies to the hook.
	out, err := hook("src/bad.py")
	if err == nil || !strings.Contains(out, "src/bad.py:1: hash-seed: src/bad.py::tags") || !regexp.MustCompile(`nondet-sandbox\.+Failed`).MatchString(out) {
		t.Errorf("a nondeterministic function did not fail the hook (%v):\n%s", err, out)
	}
	out, err = hook("good.py")
	if err != nil || !regexp.MustCompile(`nondet-sandbox\.+Passed`).MatchString(out) {
		t.Errorf("a deterministic function failed the hook (%v):\n%s", err, out)
	}
}

// TestActionRunsTheCommand reads action.yml (with PyYAML) and checks that
// the command line its scan step runs is one the run command takes.
func TestActionRunsTheCommand(t *testing.T) {
	python := testenv.Python(t)
	script := `import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
print(json.dumps({"using": doc["runs"]["using"], "runs": [s.get("run", "") for s in doc["runs"]["steps"]],
                  "inputs": sorted(doc["inputs"])}))`
	var stderr strings.Builder
	cmd := exec.Command(python, "-c", script, "../../action.yml")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "No module named 'yaml'") {
			testenv.Skip(t, "PyYAML is not installed (scripts/test-deps installs it)")
		}
		t.Fatalf("action.yml does not read as YAML: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Using  string   `json:"using"`
		Runs   []string `json:"runs"`
		Inputs []string `json:"inputs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Using != "composite" {
		t.Errorf("runs.using is %q", doc.Using)
	}
	runCmd := newRunCommand()
	checked := 0
	for i, run := range doc.Runs {
		if strings.Contains(run, "scripts/action-scan") {
			script, err := os.ReadFile("../../scripts/action-scan")
			if err != nil {
				t.Fatal(err)
			}
			doc.Runs[i] = run + "\n" + string(script)
		}
	}
	for _, run := range doc.Runs {
		// An input pasted into a script runs: a path holding $(...) would.
		if strings.Contains(run, "${{") {
			t.Errorf("a run script expands an expression; pass inputs through env:\n%s", run)
		}
		for _, line := range strings.Split(run, "\n") {
			_, after, ok := strings.Cut(line, `/bin/nondet-sandbox" run `)
			if !ok {
				_, after, ok = strings.Cut(line, `"$bin" run `)
			}
			if !ok {
				continue
			}
			for _, word := range strings.Fields(after) {
				if name, ok := strings.CutPrefix(word, "--"); ok && name != "" {
					if runCmd.Flags().Lookup(name) == nil {
						t.Errorf("the action passes --%s, which run does not take", name)
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no nondet-sandbox run command line in action.yml")
	}
}

// TestActionScansTheCheckoutAsItsOwner runs the action's scan step
// (scripts/action-scan) as a CI job does: as root, through sudo (SUDO_UID),
// over a checkout another user owns. The project's pyproject.toml and its
// .gitignore are the project's own, and honoured; without SUDO_UID the
// same config is another user's, and in CI that fails the scan instead of
// scanning with other settings.
func TestActionScansTheCheckoutAsItsOwner(t *testing.T) {
	testenv.NeedRoot(t)
	bin := buildBinary(t)
	checkout := t.TempDir()
	if err := os.Chmod(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	unordered := "def tags(words):\n    return list({w + '!' for w in words})\n"
	for name, text := range map[string]string{
		"pyproject.toml": "[tool.nondet-sandbox]\nexclude = [\"excluded.py\"]\n",
		".gitignore":     "ignored.py\n*.sarif\n",
		"bad.py":         unordered, "ignored.py": unordered, "excluded.py": unordered,
	} {
		if err := os.WriteFile(filepath.Join(checkout, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", checkout).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, err := exec.Command("chown", "-R", "1001:1001", checkout).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	script, err := filepath.Abs("../../scripts/action-scan")
	if err != nil {
		t.Fatal(err)
	}
	scan := func(sudoUID string) (code, sarif, stderr string) {
		output := filepath.Join(t.TempDir(), "output")
		cmd := exec.Command(script)
		cmd.Dir = checkout
		cmd.Env = append(os.Environ(), "NDS_BIN="+filepath.Join(bin, "nondet-sandbox"), "NDS_PATHS=.",
			"NDS_ARGS=--seed 3 --python "+testenv.Python(t), "NDS_SARIF=out.sarif", "GITHUB_OUTPUT="+output, "CI=true", "SUDO_UID="+sudoUID,
			"XDG_CONFIG_HOME="+t.TempDir())
		var errOut strings.Builder
		cmd.Stderr = &errOut
		_ = cmd.Run()
		out, _ := os.ReadFile(output)
		data, _ := os.ReadFile(filepath.Join(checkout, "out.sarif"))
		os.Remove(filepath.Join(checkout, "out.sarif"))
		return strings.TrimSpace(string(out)), string(data), errOut.String()
	}
	code, sarif, stderr := scan("1001")
	if code != "exit-code=1" || !strings.Contains(sarif, "bad.py") || strings.Contains(sarif, "ignored.py::") || strings.Contains(sarif, "excluded.py::") {
		t.Errorf("through sudo: %s, want exit-code=1 and a finding in bad.py only\n%s\n%s", code, stderr, sarif)
	}
	code, _, stderr = scan("")
	if code != "exit-code=2" || !strings.Contains(stderr, "it belongs to uid 1001") || !strings.Contains(stderr, "in CI") {
		t.Errorf("as root, not through sudo: %s, want exit-code=2 and the refusal\n%s", code, stderr)
	}
}
