package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
)

// fakeVenv makes a virtual environment whose interpreter is the tests'
// python, as the lister finds one: pyvenv.cfg beside bin/python. It
// returns that interpreter, the environment's folder and its
// site-packages.
func fakeVenv(t *testing.T) (python, root, site string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(testenv.Python(t))
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	site = filepath.Join(root, "lib", "python3.99", "site-packages") // the lister globs lib/python3*/site-packages
	mkdir(t, site)
	mkdir(t, filepath.Join(root, "bin"))
	write(t, filepath.Join(root, "pyvenv.cfg"), "home = "+filepath.Dir(real)+"\ninclude-system-site-packages = false\n")
	python = filepath.Join(root, "bin", "python")
	if err := os.Symlink(real, python); err != nil {
		t.Fatal(err)
	}
	return python, root, site
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	mkdir(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func meta(name string) string {
	return "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n\nA description: not a header.\n"
}

// honest installs a well-formed distribution in site, whose tops are
// honest and honest_mod.py.
func honest(t *testing.T, site string) {
	t.Helper()
	write(t, filepath.Join(site, "honest", "__init__.py"), "")
	write(t, filepath.Join(site, "honest_mod.py"), "")
	write(t, filepath.Join(site, "honest-1.0.dist-info", "METADATA"), meta("honest"))
	write(t, filepath.Join(site, "honest-1.0.dist-info", "RECORD"),
		"honest/__init__.py,sha256=x,0\nhonest_mod.py,,\nhonest-1.0.dist-info/METADATA,,\n../../../bin/honest,,\n__pycache__/honest_mod.cpython-311.pyc,,\n")
}

// hostile are distributions whose metadata the old lister took for a
// module outside site-packages, or that hung it or filled its memory:
// each is made in a virtual environment's folder root and its site, and
// its report (by its name, or its folder when the name cannot be read)
// must say all of says.
var hostile = []struct {
	name string
	make func(t *testing.T, root, site string)
	says func(root string) []string
}{
	// top_level.txt names that join to folders outside site-packages, made
	// to exist there so that the old lister took them.
	{"dotroot", func(t *testing.T, root, site string) {
		write(t, filepath.Join(root, "lib", "..root", "__init__.py"), "")
		topLevel(t, site, "dotroot", "../../..root")
	}, says("../../..root", "module name")},
	{"dotetc", func(t *testing.T, root, site string) {
		write(t, filepath.Join(root, "etc", "x.py"), "")
		topLevel(t, site, "dotetc", "../../../etc")
	}, says("../../../etc", "module name")},
	{"absetc", func(t *testing.T, root, site string) { topLevel(t, site, "absetc", "/etc") }, says("/etc", "module name")},
	// RECORD entries outside site-packages: absolute (its first part "/"
	// made site-packages itself a module) and up a level.
	{"recabs", func(t *testing.T, root, site string) {
		write(t, filepath.Join(root, "outside", "x.py"), "")
		write(t, filepath.Join(site, "recabs-1.0.dist-info", "METADATA"), meta("recabs"))
		write(t, filepath.Join(site, "recabs-1.0.dist-info", "RECORD"), filepath.Join(root, "outside", "x.py")+",,\n")
	}, func(root string) []string {
		return []string{filepath.Join(root, "outside", "x.py"), "outside site-packages"}
	}},
	{"recdots", func(t *testing.T, root, site string) {
		write(t, filepath.Join(site, "..", "x.py"), "")
		write(t, filepath.Join(site, "recdots-1.0.dist-info", "METADATA"), meta("recdots"))
		write(t, filepath.Join(site, "recdots-1.0.dist-info", "RECORD"), "../x.py,,\n")
	}, says("../x.py", "outside site-packages")},
	// A distribution's twelve scripts outside site-packages: one line.
	{"recmany", func(t *testing.T, root, site string) {
		write(t, filepath.Join(site, "recmany-1.0.dist-info", "METADATA"), meta("recmany"))
		var record strings.Builder
		for i := range 12 {
			fmt.Fprintf(&record, "../../../bin/tool%02d.py,,\n", i)
		}
		write(t, filepath.Join(site, "recmany-1.0.dist-info", "RECORD"), record.String())
	}, says("../../../bin/tool00.py: 12 Python files outside site-packages (this one and 11 more)")},
	// A package that is a link to a folder outside.
	{"linked", func(t *testing.T, root, site string) {
		write(t, filepath.Join(root, "outside", "__init__.py"), "")
		symlink(t, filepath.Join(root, "outside"), filepath.Join(site, "linked"))
		write(t, filepath.Join(site, "linked-1.0.dist-info", "METADATA"), meta("linked"))
		write(t, filepath.Join(site, "linked-1.0.dist-info", "RECORD"), "linked/__init__.py,,\n")
	}, says("linked", "resolves outside")},
	// Metadata that hangs a reader or fills its memory.
	{"fifo", func(t *testing.T, root, site string) {
		write(t, filepath.Join(site, "fifo-1.0.dist-info", "METADATA"), meta("fifo"))
		if err := syscall.Mkfifo(filepath.Join(site, "fifo-1.0.dist-info", "top_level.txt"), 0o644); err != nil {
			t.Fatal(err)
		}
	}, says("top_level.txt", "FIFO")},
	{"zero", func(t *testing.T, root, site string) {
		symlink(t, "/dev/zero", filepath.Join(site, "zero-1.0.dist-info", "METADATA"))
	}, says("METADATA", "symlink")},
	{"sparse", func(t *testing.T, root, site string) {
		write(t, filepath.Join(site, "sparse-1.0.dist-info", "METADATA"), meta("sparse"))
		f, err := os.Create(filepath.Join(site, "sparse-1.0.dist-info", "RECORD"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(100 << 20); err != nil {
			t.Fatal(err)
		}
	}, says("RECORD", "bound")},
	// A folder name that would drive the terminal it is printed on.
	{"evil", func(t *testing.T, root, site string) {
		symlink(t, "/dev/zero", filepath.Join(site, "evil\x1b[2J\u202e-1.0.dist-info", "METADATA"))
	}, says("METADATA", "symlink")},
}

func says(s ...string) func(string) []string { return func(string) []string { return s } }

func topLevel(t *testing.T, site, name, top string) {
	t.Helper()
	write(t, filepath.Join(site, name+"-1.0.dist-info", "METADATA"), meta(name))
	write(t, filepath.Join(site, name+"-1.0.dist-info", "top_level.txt"), top+"\n")
}

// insideSite fails the test for a top that is not one component naming
// something inside site, links resolved.
func insideSite(t *testing.T, p engine.Package) {
	t.Helper()
	root, err := filepath.EvalSymlinks(p.Site)
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range p.Tops {
		if strings.ContainsRune(top, '/') || top == ".." || top == "." {
			t.Errorf("%s: top %q is not one path component", p.Name, top)
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Join(p.Site, top))
		if err != nil {
			t.Errorf("%s: top %q: %v", p.Name, top, err)
			continue
		}
		if filepath.Dir(real) != root {
			t.Errorf("%s: top %q resolves to %s, outside %s", p.Name, top, real, root)
		}
	}
}

// checkHostile fails the test unless got holds honest alone, with its
// tops, nothing resolves outside site-packages, and each of names is
// reported with what it must say, in printable notes.
func checkHostile(t *testing.T, root string, got engine.Packages, names map[string]bool) {
	t.Helper()
	if len(got.Found) != 1 || got.Found[0].Name != "honest" || !slices.Equal(got.Found[0].Tops, []string{"honest", "honest_mod.py"}) {
		t.Errorf("found %+v, want only honest with its tops [honest honest_mod.py]", got.Found)
	}
	for _, p := range got.Found {
		insideSite(t, p)
	}
	for _, h := range hostile {
		if !names[h.name] {
			continue
		}
		var lines []string
		for _, b := range got.Broken {
			if strings.HasPrefix(b.Name, h.name) {
				lines = append(lines, b.Reason)
			}
		}
		for _, ig := range got.Ignored {
			if ig.Name == h.name {
				lines = append(lines, ig.Top+": "+ig.Reason)
			}
		}
		said := strings.Join(lines, "\n")
		if len(lines) == 0 {
			t.Errorf("%s: neither reported broken nor any top ignored", h.name)
		}
		for _, s := range h.says(root) {
			if !strings.Contains(said, s) {
				t.Errorf("%s: report %q does not say %q", h.name, said, s)
			}
		}
	}
	for _, note := range got.Notes() {
		for _, r := range note {
			if !unicode.IsPrint(r) {
				t.Errorf("note %q holds %U, which a terminal would act on", note, r)
			}
		}
	}
}

// Each hostile distribution beside an honest one: the honest one is
// found, the other reported, nothing outside site-packages taken.
func TestFindPackagesHostileMetadata(t *testing.T) {
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			python, root, site := fakeVenv(t)
			honest(t, site)
			h.make(t, root, site)
			got, err := engine.FindPackages(context.Background(), python, nil, true)
			if err != nil {
				t.Fatalf("FindPackages: %v\nnotes: %q", err, got.Notes())
			}
			checkHostile(t, root, got, map[string]bool{h.name: true})
		})
	}
}

// All of them at once: one broken distribution does not stop the scan of
// the others.
func TestFindPackagesHostileMetadataTogether(t *testing.T) {
	python, root, site := fakeVenv(t)
	honest(t, site)
	names := map[string]bool{}
	for _, h := range hostile {
		h.make(t, root, site)
		names[h.name] = true
	}
	got, err := engine.FindPackages(context.Background(), python, nil, true)
	if err != nil {
		t.Fatalf("FindPackages: %v\nnotes: %q", err, got.Notes())
	}
	checkHostile(t, root, got, names)
}

// Asked for by name, a broken distribution is an error saying why; the
// environment's other broken ones are not the user's concern.
func TestFindPackagesNamedBrokenIsAnError(t *testing.T) {
	python, root, site := fakeVenv(t)
	honest(t, site)
	for _, h := range hostile {
		h.make(t, root, site)
	}
	got, err := engine.FindPackages(context.Background(), python, []string{"honest"}, false)
	if err != nil || len(got.Found) != 1 || len(got.Broken) != 0 {
		t.Errorf("honest alone: found %+v, broken %+v, err %v", got.Found, got.Broken, err)
	}
	_, err = engine.FindPackages(context.Background(), python, []string{"honest", "fifo"}, false)
	if !errors.Is(err, engine.ErrUsage) || !strings.Contains(err.Error(), "fifo") || !strings.Contains(err.Error(), "top_level.txt") {
		t.Errorf("honest and fifo: err %v, want a usage error naming fifo and its top_level.txt", err)
	}
}

// fakePython is an "interpreter" that ignores the lister's script and
// runs sh instead, to test what FindPackages does with its answer.
func fakePython(t *testing.T, sh string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python")
	write(t, path, "#!/bin/sh\n"+sh+"\n")
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The lister's answer is checked again: a top that is not one component
// inside its site-packages is dropped with a note, whatever said it.
func TestFindPackagesDropsEscapingTopsFromTheAnswer(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	write(t, filepath.Join(site, "ok", "__init__.py"), "")
	write(t, filepath.Join(dir, "out", "__init__.py"), "")
	symlink(t, filepath.Join(dir, "out"), filepath.Join(site, "link"))
	python := fakePython(t, `echo '{"found": [{"name": "liar", "version": "1", "site": "`+site+`", "tops": ["ok", "/", "../out", "..", "link"]}]}'`)
	got, err := engine.FindPackages(context.Background(), python, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Found) != 1 || !slices.Equal(got.Found[0].Tops, []string{"ok"}) {
		t.Errorf("found %+v, want liar with the top ok only", got.Found)
	}
	var dropped []string
	for _, ig := range got.Ignored {
		dropped = append(dropped, ig.Top)
	}
	if !slices.Equal(dropped, []string{"/", "../out", "..", "link"}) {
		t.Errorf("notes for %q, want one for each escaping top", dropped)
	}
}

// A flood on the lister's stdout is cut at its bound, not read whole.
func TestFindPackagesBoundsTheAnswer(t *testing.T) {
	python := fakePython(t, "exec yes")
	_, err := engine.FindPackages(context.Background(), python, nil, true)
	if err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("err %v, want the answer refused as over its bound", err)
	}
}

func TestPackageTargetsDropsTopsOutsideSite(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	write(t, filepath.Join(site, "ok", "__init__.py"), "")
	write(t, filepath.Join(dir, "out", "__init__.py"), "")
	symlink(t, filepath.Join(dir, "out"), filepath.Join(site, "link"))
	pkgs := []engine.Package{{Name: "p", Site: site, Tops: []string{"ok", "../out", "/", "..", ".", "link", "gone.py"}}}
	var got []string
	for _, tg := range engine.PackageTargets(pkgs) {
		got = append(got, tg.Path)
	}
	if want := []string{filepath.Join(site, "ok")}; !slices.Equal(got, want) {
		t.Errorf("targets %q, want %q", got, want)
	}
}

// TestFindPackagesByImportName: a name no distribution has is looked up
// among what they install, as users type it (dateutil for
// python-dateutil); a name neither has is still an error that names it.
func TestFindPackagesByImportName(t *testing.T) {
	python, _, site := fakeVenv(t)
	honest(t, site)
	write(t, filepath.Join(site, "dateish", "__init__.py"), "")
	write(t, filepath.Join(site, "python_dateish-2.0.dist-info", "METADATA"), "Metadata-Version: 2.1\nName: python-dateish\nVersion: 2.0\n")
	write(t, filepath.Join(site, "python_dateish-2.0.dist-info", "RECORD"), "dateish/__init__.py,,\n")
	pkgs, err := engine.FindPackages(context.Background(), python, []string{"dateish", "honest"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pkgs.Found {
		names = append(names, p.Name+":"+strings.Join(p.Tops, ","))
	}
	slices.Sort(names)
	if want := []string{"honest:honest,honest_mod.py", "python-dateish:dateish"}; !slices.Equal(names, want) {
		t.Errorf("found %v, want %v", names, want)
	}
	_, err = engine.FindPackages(context.Background(), python, []string{"nodist"}, false)
	if err == nil || !strings.Contains(err.Error(), "nodist is not installed") {
		t.Errorf("a name nothing installs: %v", err)
	}
}
