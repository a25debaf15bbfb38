package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// Target is one command-line argument: a directory, a .py file, or
// FILE::function.
type Target struct {
	Arg  string
	Base string // absolute folder that report ids are relative to
	Path string // absolute file or directory
	Func string // set for FILE::function
	// Installed marks an installed distribution's folder (--package): it is
	// read whole, without the project's default excludes or .gitignore.
	Installed bool
}

// ParseTarget checks one argument and says what to do when it is wrong.
func ParseTarget(arg string) (Target, error) {
	t := Target{Arg: arg}
	path := arg
	if i := strings.LastIndex(arg, "::"); i >= 0 {
		path, t.Func = arg[:i], arg[i+2:]
		if !isQualName(t.Func) {
			return t, &usageError{fmt.Sprintf("%s: after '::' give a module-level function or a class's method, as in util.py::normalise or util.py::Parser.parse", arg)}
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return t, &usageError{fmt.Sprintf("%s: %v", arg, err)}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return t, &usageError{fmt.Sprintf("%s: no such file or directory; give a directory, a .py file, or FILE.py::function", path)}
	}
	t.Path = abs
	switch {
	case st.IsDir() && t.Func != "":
		return t, &usageError{fmt.Sprintf("%s is a directory; '::function' goes after a .py file", path)}
	case st.IsDir():
		t.Base = abs
	case strings.HasSuffix(abs, ".py") && st.Mode().IsRegular():
		t.Base = filepath.Dir(abs)
	default:
		return t, &usageError{fmt.Sprintf("%s is not a Python source file (.py); give a directory, a .py file, or FILE.py::function", path)}
	}
	return t, nil
}

// sourceFile is one module found under a target.
type sourceFile struct {
	Path string // absolute, on the host
	Rel  string // relative to its target's Base, slash-separated
	Root string // the directory that goes on sys.path
	Name string // dotted module name under Root
	Func string // only this function, when the target named one
	base string // the target folder Rel is relative to
}

// disambiguate keeps ids unique when two targets hold files with the same
// relative path (run a/ b/, both with util.py): those are named from the
// folders' common parent instead.
func disambiguate(files []sourceFile) {
	paths := map[string]map[string]bool{}
	for _, f := range files {
		if paths[f.Rel] == nil {
			paths[f.Rel] = map[string]bool{}
		}
		paths[f.Rel][f.Path] = true
	}
	for i, f := range files {
		if len(paths[f.Rel]) < 2 {
			continue
		}
		var bases []string
		for p := range paths[f.Rel] {
			bases = append(bases, strings.TrimSuffix(p, "/"+f.Rel))
		}
		common := commonDir(bases)
		if rel, err := filepath.Rel(common, f.Path); err == nil {
			files[i].Rel = filepath.ToSlash(rel)
		}
	}
}

func commonDir(dirs []string) string {
	common := dirs[0]
	for _, d := range dirs[1:] {
		for !within(d, common) {
			common = filepath.Dir(common)
		}
	}
	return common
}

// Filter narrows what a walk of a directory target reads: a file is read
// when it matches an include pattern (or none is given) and no exclude
// pattern. Patterns are doublestar globs (src/**/*.py) matched against the
// path relative to Base; one without a slash matches a name at any depth
// (tests, test_*.py), and an excluded directory excludes what it holds.
// A file named on the command line is always read.
type Filter struct {
	Base    string
	Include []string
	Exclude []string
	// Force applies the excludes to files named on the command line too:
	// the patterns, the default excluded folders below Base and what git
	// ignores (as ruff's force-exclude, for hooks that name every staged
	// file).
	Force bool
	// Root, when set, is the folder ids of the files in dir are relative
	// to (their project's root); a file outside it keeps its target's Base.
	// Asked per file, so a project inside a directory target keeps its
	// ids whether the scan named it or a folder above it.
	Root func(dir string) string
}

// forcedOut says whether Force leaves out a file named on the command
// line. gitDirs caches what git ignores, by folder.
func (f Filter) forcedOut(path string, gitDirs map[string]map[string]bool) bool {
	if !f.keeps(path) {
		return true
	}
	if rel, err := filepath.Rel(f.Base, path); err == nil && !strings.HasPrefix(rel, "..") {
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for _, name := range parts[:len(parts)-1] {
			if name == "__pycache__" || strings.HasPrefix(name, ".") || slices.Contains(DefaultExcludes, name) {
				return true
			}
		}
	}
	dir := filepath.Dir(path)
	ignored, ok := gitDirs[dir]
	if !ok {
		ignored, _ = gitIgnored(context.Background(), dir)
		gitDirs[dir] = ignored
	}
	return ignored[path]
}

// check says what is wrong with a pattern, for the user.
func (f Filter) check() error {
	for _, p := range append(append([]string{}, f.Include...), f.Exclude...) {
		if !doublestar.ValidatePattern(p) {
			return &usageError{fmt.Sprintf("%q is not a glob pattern (src/**/*.py, tests)", p)}
		}
	}
	return nil
}

// keeps says whether a file found under a directory target is read.
func (f Filter) keeps(path string) bool {
	if len(f.Include) == 0 && len(f.Exclude) == 0 {
		return true
	}
	rel, err := filepath.Rel(f.Base, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = path
	}
	rel = filepath.ToSlash(rel)
	if len(f.Include) > 0 && !matchAny(f.Include, rel, false) {
		return false
	}
	return !matchAny(f.Exclude, rel, true)
}

// matchAny matches rel against patterns; with dirs, a pattern that
// matches one of rel's folders matches rel too.
func matchAny(patterns []string, rel string, dirs bool) bool {
	parts := strings.Split(rel, "/")
	for _, p := range patterns {
		p = strings.TrimSuffix(p, "/")
		if ok, _ := doublestar.Match(p, rel); ok {
			return true
		}
		for i := range parts {
			if !dirs && i < len(parts)-1 {
				continue
			}
			if !strings.Contains(p, "/") {
				if ok, _ := doublestar.Match(p, parts[i]); ok {
					return true
				}
			} else if i < len(parts)-1 {
				if ok, _ := doublestar.Match(p, strings.Join(parts[:i+1], "/")); ok {
					return true
				}
			}
		}
	}
	return false
}

// DefaultExcludes are the folders a walk of a project never enters below
// a target, as ruff's defaults: virtual environments and what they
// install, build output, other ecosystems' trees. Hidden folders (.venv,
// .tox, .nox, .git) are skipped anyway, and so is any folder holding a
// pyvenv.cfg (a virtual environment under another name). A folder named
// as a target is read.
var DefaultExcludes = []string{"venv", "build", "dist", "site-packages", "__pypackages__", "node_modules", "_build", "buck-out"}

// skipDir says whether a walk of a project leaves out the folder at path.
func skipDir(path, name string) bool {
	if name == "__pycache__" || strings.HasPrefix(name, ".") || slices.Contains(DefaultExcludes, name) {
		return true
	}
	_, err := os.Lstat(filepath.Join(path, "pyvenv.cfg"))
	return err == nil
}

// gitIgnored lists the files git ignores under dir (.gitignore, the
// repository's info/exclude, the user's excludes file), as absolute paths;
// nil when dir is in no work tree or git is missing. Files, not folders:
// git does not name an ignored file inside a folder it does not track
// (--directory), which a new project's folders all are.
// The tree may be hostile: git runs with its file-system monitor off (a
// repository's config could name a program for it), and reads no file's
// content. An ignore file that is not a regular file (a FIFO would hold
// git until its timeout, a device would feed it without end) means git
// is not asked: nothing is left out for it, and the warning says why.
func gitIgnored(ctx context.Context, dir string) (map[string]bool, string) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pre := []string{"-c", "core.fsmonitor=false"}
	if sudoOwns(dir) {
		// Root through sudo, over the sudo user's checkout (a CI job):
		// git would refuse it as another user's, and its ignores go
		// unread. It is the user's, as the config's ownership check has it.
		pre = append(pre, "-c", "safe.directory=*")
	}
	git := func(args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, "git", append(append(slices.Clone(pre), "-C", dir), args...)...).Output()
	}
	// Finding the repository reads its .git and config: neither may be a
	// FIFO either.
	for d := dir; ; d = filepath.Dir(d) {
		dot := filepath.Join(d, ".git")
		if _, err := os.Stat(dot); err == nil {
			for _, f := range []string{dot, filepath.Join(dot, "config"), filepath.Join(dot, "HEAD")} {
				if st, err := os.Stat(f); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
					return nil, fmt.Sprintf("%s is not a regular file (%s): what git ignores under %s is not left out", f, st.Mode().Type(), dir)
				}
			}
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	out, err := git("rev-parse", "--show-toplevel", "--git-path", "info/exclude")
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && bytes.Contains(ee.Stderr, []byte("dubious ownership")) {
		return nil, fmt.Sprintf("git refuses the repository of %s, which another user owns (\"dubious ownership\"): what it ignores is not left out; mark it safe (git config --global --add safe.directory DIR) to have it read", dir)
	}
	if err != nil {
		return nil, "" // not in a work tree
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, ""
	}
	top, files := lines[0], []string{filepath.Join(dir, lines[1])}
	if filepath.IsAbs(lines[1]) {
		files[0] = lines[1]
	}
	if x, err := git("config", "--path", "--get", "core.excludesFile"); err == nil {
		files = append(files, strings.TrimSpace(string(x)))
	}
	for d := dir; within(d, top); d = filepath.Dir(d) {
		files = append(files, filepath.Join(d, ".gitignore"))
		if d == top || d == filepath.Dir(d) {
			break
		}
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if err == nil && !d.IsDir() && d.Name() == ".gitignore" && path != filepath.Join(dir, ".gitignore") {
			files = append(files, path)
		}
		return nil
	})
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && !st.Mode().IsRegular() {
			return nil, fmt.Sprintf("%s is not a regular file (%s): what git ignores under %s is not left out", f, st.Mode().Type(), dir)
		}
	}
	out, err = git("ls-files", "-z", "--others", "--ignored", "--exclude-standard")
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Sprintf("git took over 30 s to list what it ignores under %s: nothing is left out for it", dir)
		}
		return nil, ""
	}
	ignored := map[string]bool{}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" {
			continue
		}
		ignored[filepath.Join(dir, filepath.FromSlash(rel))] = true
	}
	return ignored, ""
}

// distributionTest says whether a file of an installed distribution (in
// site, its site-packages) is one of its own tests rather than the library:
// under a tests or test folder, or named test_*.py, *_test.py or
// conftest.py. An audit leaves them out, and lists them as excluded:
// their functions are a test runner's to call, with its fixtures.
func distributionTest(site, path string) bool {
	rel, err := filepath.Rel(site, path)
	if err != nil {
		return false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, dir := range parts[:len(parts)-1] {
		if dir == "tests" || dir == "test" {
			return true
		}
	}
	name := parts[len(parts)-1]
	return strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py") || name == "conftest.py"
}

// sudoOwns says whether dir belongs to the user who ran this process
// as root through sudo (SUDO_UID).
func sudoOwns(dir string) bool {
	st, err := os.Stat(dir)
	sudo := os.Getenv("SUDO_UID")
	if err != nil || os.Geteuid() != 0 || sudo == "" {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && strconv.FormatUint(uint64(sys.Uid), 10) == sudo
}

// findSources walks the targets. Symlinked directories (and so symlink
// loops), hidden directories, __pycache__, the default excludes, what git
// ignores and non-.py files are skipped without a word (an installed
// package's folder is read whole); duplicates across targets are listed
// once. The .py
// files the filter leaves out are returned too (relative to their target,
// slash-separated): a config that came with the tree may have set the
// filter, so the report lists what it hid.
func findSources(targets []Target, filter Filter) (out []sourceFile, excluded, warnings []string, err error) {
	seen := map[string]bool{}
	add := func(t Target, path string) {
		if seen[path+"::"+t.Func] {
			return
		}
		seen[path+"::"+t.Func] = true
		base := t.Base
		if filter.Root != nil && !t.Installed {
			if r := filter.Root(filepath.Dir(path)); r != "" && within(path, r) {
				base = r
			}
		}
		rel, _ := filepath.Rel(base, path)
		root, name := moduleName(path)
		out = append(out, sourceFile{Path: path, Rel: filepath.ToSlash(rel), Root: root, Name: name, Func: t.Func, base: base})
	}
	gitDirs := map[string]map[string]bool{}
	for _, t := range targets {
		st, err := os.Stat(t.Path)
		if err != nil {
			return nil, nil, nil, &usageError{fmt.Sprintf("%s: %v", t.Arg, err)}
		}
		if !st.IsDir() {
			if filter.Force && !t.Installed && filter.forcedOut(t.Path, gitDirs) {
				excluded = append(excluded, filepath.ToSlash(t.Arg))
				continue
			}
			add(t, t.Path)
			continue
		}
		var ignored map[string]bool
		if !t.Installed {
			var warning string
			if ignored, warning = gitIgnored(context.Background(), t.Path); warning != "" {
				warnings = append(warnings, warning)
			}
		}
		err = filepath.WalkDir(t.Path, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if d != nil && d.IsDir() && path != t.Path {
					return fs.SkipDir // unreadable: nothing to list
				}
				return nil
			}
			name := d.Name()
			if d.IsDir() {
				if path == t.Path {
					return nil
				}
				if name == "__pycache__" || strings.HasPrefix(name, ".") || (!t.Installed && skipDir(path, name)) {
					return fs.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".py") {
				return nil
			}
			if ignored[path] || !filter.keeps(path) || t.Installed && distributionTest(t.Base, path) {
				if rel, err := filepath.Rel(t.Base, path); err == nil {
					excluded = append(excluded, filepath.ToSlash(rel))
				}
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				st, err := os.Stat(path)
				if err != nil || !st.Mode().IsRegular() || intoKernel(path) {
					return nil
				}
			} else if !d.Type().IsRegular() {
				return nil
			}
			add(t, path)
			return nil
		})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("walk %s: %w", t.Arg, err)
		}
	}
	disambiguate(out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	sort.Strings(excluded)
	return out, slices.Compact(excluded), warnings, nil
}

// maxSiblings bounds the modules packageSiblings lists.
const maxSiblings = 5000

// packageSiblings are the other modules of the top-level package of a
// replay's one file, which a scan of the package saw: they may build its
// method's receiver (a subclass in another module). Their Rel is marked,
// so it names no scanned file.
func packageSiblings(files []sourceFile) []sourceFile {
	if len(files) != 1 || !strings.Contains(files[0].Name, ".") {
		return nil
	}
	f := files[0]
	top, _, _ := strings.Cut(f.Name, ".")
	var out []sourceFile
	_ = filepath.WalkDir(filepath.Join(f.Root, top), func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || len(out) >= maxSiblings:
			return filepath.SkipDir
		case d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "__pycache__"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".py") || path == f.Path || !d.Type().IsRegular():
			return nil
		}
		root, name := moduleName(path)
		if root != f.Root {
			return nil
		}
		rel, _ := filepath.Rel(f.Root, path)
		out = append(out, sourceFile{Path: path, Rel: "(context)/" + filepath.ToSlash(rel), Root: root, Name: name, base: f.Root})
		return nil
	})
	return out
}

// moduleName finds the import root of a file: the nearest ancestor that is
// not a package (has no __init__.py), so a module inside a package is
// imported by its dotted name and its relative imports work.
func moduleName(path string) (root, name string) {
	dir := filepath.Dir(path)
	parts := []string{strings.TrimSuffix(filepath.Base(path), ".py")}
	if parts[0] == "__init__" {
		parts = nil
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "__init__.py")); err != nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir || !isIdentifier(filepath.Base(dir)) {
			break
		}
		parts = append([]string{filepath.Base(dir)}, parts...)
		dir = parent
	}
	if len(parts) == 0 { // an __init__.py whose folder is not importable as a package
		return filepath.Dir(path), "__init__"
	}
	return dir, strings.Join(parts, ".")
}

// isQualName says whether s names a function or a method: name or
// Class.name, never a special method (discovery lists none: f.__globals__
// is an attribute, not a method).
func isQualName(s string) bool {
	class, name, dotted := strings.Cut(s, ".")
	if !dotted {
		return isIdentifier(s)
	}
	special := strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__")
	return isIdentifier(class) && isIdentifier(name) && !special
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 127 || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// intoKernel says whether a link leads into /proc, /sys or /dev, whose
// "regular" files (/proc/kmsg) block or never end: never a source file.
func intoKernel(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return true
	}
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if real == d || strings.HasPrefix(real, d+"/") {
			return true
		}
	}
	return false
}
