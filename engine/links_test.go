package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// TestLinkBinds: a link that leaves a scanned tree for what the sandbox
// shows anyway is made to lead there inside too; a link to anything else,
// or one that would arrive under a name the container keeps, is left to
// dangle, whatever the untrusted tree asks for.
func TestLinkBinds(t *testing.T) {
	base := t.TempDir()
	mk := func(rel, content string) {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(rel, to string) {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("lib/pkg/__init__.py", "")
	mk("share/data/words.txt", "a b")
	mk("share/tables/t.json", "{}")
	if err := os.MkdirAll(filepath.Join(filepath.Dir(base), "tmp", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	mk("secret/key", "k")
	link("lib/pkg/words.txt", "../../share/data/words.txt") // a file: its folder
	link("lib/pkg/tables", "../../share/tables")            // a folder
	link("lib/pkg/key", "../../secret/key")                 // not shown: stays dangling
	link("lib/pkg/tmp", "../../../tmp/x")                   // arrives at /tmp/x: the system's
	link("lib/pkg/inner", "__init__.py")                    // inside its tree
	link("lib/.hidden/words.txt", "../../share/data/words.txt")
	link("lib/pkg/gone", "../../share/none") // dangling on the host
	trees := []sandbox.Bind{{Source: filepath.Join(base, "lib"), Target: "/scan/0"}}
	binds := append([]sandbox.Bind{{Source: "/x", Target: "/nondet"}}, trees...)
	show := []string{filepath.Join(base, "share"), filepath.Join(filepath.Dir(base), "tmp")}
	got := linkBinds(trees, binds, show, reservedTop)
	want := []sandbox.Bind{
		{Source: filepath.Join(base, "share/data"), Target: "/scan/share/data"},
		{Source: filepath.Join(base, "share/tables"), Target: "/scan/share/tables"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("linkBinds = %+v, want %+v", got, want)
	}
	// A link already right inside needs nothing.
	binds = append(binds, sandbox.Bind{Source: filepath.Join(base, "share"), Target: "/scan/share"})
	if got := linkBinds(trees, binds, show, reservedTop); len(got) != 0 {
		t.Errorf("with /scan/share bound: %+v, want none", got)
	}
}
