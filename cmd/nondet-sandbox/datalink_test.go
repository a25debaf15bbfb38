package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// TestDataLinksLeadWhereTheyLeadOnTheHost: a package whose data is a
// relative link out of its tree (fixtures/datalink, installed under
// /usr/local/share as Debian installs such packages under /usr) answers in
// a sandbox as it does on the host. A link the tree makes to a file
// outside the system folders stays dangling inside, nothing of the file
// reaches the report, and the look says the sandbox stopped it.
func TestDataLinksLeadWhereTheyLeadOnTheHost(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	dir, err := os.MkdirTemp("/usr/local/share", "nondet-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	copyTree(t, "../../fixtures/datalink", dir)
	pkg := filepath.Join(dir, "lib", "datalink")
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("a host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(pkg, secret)
	if err := os.Symlink(rel, filepath.Join(pkg, "secret.txt")); err != nil {
		t.Fatal(err)
	}
	leak := "import os\n\n\ndef secret():\n    with open(os.path.join(os.path.dirname(__file__), \"secret.txt\")) as f:\n        return f.read()\n"
	if err := os.WriteFile(filepath.Join(pkg, "leak.py"), []byte(leak), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []string{"host", "embedded", "docker"} {
		t.Run(rt, func(t *testing.T) {
			opts := testOptions(t, rt, 3)
			var out, errOut bytes.Buffer
			err := runRun(context.Background(), opts, []string{pkg}, &out, &errOut)
			if errors.Is(err, engine.ErrRuntime) {
				testenv.Skip(t, err.Error())
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var rep report.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			words := rep.Function("__init__.py::words")
			if words == nil || words.Verdict != engine.VerdictDeterministic || words.Rungs.Answered == 0 {
				t.Errorf("words: want it to answer, as on the host; got %+v", words)
			}
			leaked := rep.Function("leak.py::secret")
			if rt == "host" {
				return // no sandbox: the host's files are the host's
			}
			if strings.Contains(out.String()+errOut.String(), "a host secret") {
				t.Errorf("the file a link led out to reached the report")
			}
			if leaked == nil || leaked.Verdict != engine.VerdictLook ||
				!slices.ContainsFunc(leaked.Stopped, func(s report.Stop) bool { return s.Where == "sandbox" }) {
				t.Errorf("secret: want a look the sandbox stopped, got %+v", leaked)
			}
		})
	}
}

// copyTree copies a folder, links as links.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, dst)
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
