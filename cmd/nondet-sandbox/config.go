package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// Settings come from four places, and who wrote each decides what it may
// set. The command line and a file named with --config are the user's
// word. The user's own config file ($XDG_CONFIG_HOME/nondet-sandbox/
// config.toml) is too. A project's pyproject.toml, found from the first
// target upward as ruff and mypy find theirs, arrives with the code being
// scanned: it may shape the report, never choose what runs on this machine
// or loosen the sandbox around it. Each key is the flag of the same name.
//
//	[tool.nondet-sandbox]
//	runs = 3
//	include = ["src/**/*.py"]        # relative to the file
//	exclude = ["tests", "**/_vendor/**"]
//	order-free = ["src/util.py::merge:items"]
//	package = ["requests"]           # installed distributions to audit

// trust is who may set a key.
type trust int

const (
	// shapesReport keys say what is scanned and how the report reads.
	shapesReport trust = iota
	// tightens keys are limits: a project may make one stricter than it
	// is, never looser.
	tightens
	// userOnly keys decide what runs on this machine or how contained it
	// is: the command line, --config FILE or the user's config only.
	userOnly
)

// configKey is one key a config file may hold: the flag of that name.
type configKey struct {
	name  string
	trust trust
	// path keys are relative to the file that gives them.
	path bool
	// strictness reads a tightens key's current value from the flags:
	// the larger, the looser.
	strictness func(fs *pflag.FlagSet) float64
}

// configKeys is every key, in the order help lists them.
var configKeys = []configKey{
	{name: "runs", trust: shapesReport},
	{name: "seed", trust: shapesReport},
	{name: "include", trust: shapesReport},
	{name: "exclude", trust: shapesReport},
	{name: "extend-exclude", trust: shapesReport},
	{name: "force-exclude", trust: shapesReport},
	{name: "ignore", trust: shapesReport},
	{name: "select", trust: shapesReport},
	{name: "per-file-ignores", trust: shapesReport},
	{name: "order-free", trust: shapesReport},
	{name: "private", trust: shapesReport},
	{name: "tests", trust: shapesReport},
	{name: "smell-runs", trust: shapesReport},
	{name: "format", trust: shapesReport},
	{name: "package", trust: shapesReport},
	{name: "all-packages", trust: shapesReport},
	{name: "no-cache", trust: shapesReport},
	{name: "jobs", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 { n, _ := fs.GetInt("jobs"); return float64(n) }},
	{name: "call-timeout", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 { d, _ := fs.GetDuration("call-timeout"); return float64(d) }},
	{name: "idle-timeout", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 { d, _ := fs.GetDuration("idle-timeout"); return float64(d) }},
	{name: "function-budget", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 {
		d, _ := fs.GetDuration("function-budget")
		if d <= 0 {
			return math.Inf(1) // none
		}
		return float64(d)
	}},
	{name: "explain-budget", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 {
		d, _ := fs.GetDuration("explain-budget")
		if d <= 0 {
			return math.Inf(1) // none
		}
		return float64(d)
	}},
	{name: "memory", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 { return float64(*fs.Lookup("memory").Value.(*size).p) }},
	{name: "pids", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 { n, _ := fs.GetInt64("pids"); return float64(n) }},
	{name: "cpus", trust: tightens, strictness: func(fs *pflag.FlagSet) float64 {
		n, _ := fs.GetFloat64("cpus")
		if n <= 0 {
			return math.Inf(1) // no quota
		}
		return n
	}},
	{name: "runtime", trust: userOnly},
	{name: "python", trust: userOnly, path: true},
	// A cache folder's entries decide verdicts: only the user names one.
	{name: "cache-dir", trust: userOnly, path: true},
}

// The runtimes' own flags are keys too, as the registry declares them:
// they choose how contained the probes are, so only the user sets them.
func init() {
	for _, f := range runtimeFlags() {
		configKeys = append(configKeys, configKey{name: f.Name, trust: userOnly, path: f.Path})
	}
}

func lookupKey(name string) (configKey, bool) {
	for _, k := range configKeys {
		if k.name == name {
			return k, true
		}
	}
	return configKey{}, false
}

func keyNames(which func(configKey) bool) string {
	var names []string
	for _, k := range configKeys {
		if which(k) {
			names = append(names, k.name)
		}
	}
	return strings.Join(names, ", ")
}

// configSource is one config file and how far it is trusted.
type configSource struct {
	path    string
	project bool // found with the scanned code, not named by the user
}

// userConfigPath is the user's own config file; "" when there is no
// config folder.
func userConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "nondet-sandbox", "config.toml")
}

// findConfig finds the pyproject.toml with a [tool.nondet-sandbox] table
// nearest above dir; "" when there is none. A file it may not read (see
// ownedBySafe) is passed over with a line on notes.
func findConfig(dir string, notes io.Writer) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		path := filepath.Join(d, "pyproject.toml")
		if _, err := os.Stat(path); err == nil {
			if why := unsafeConfig(path); why != "" {
				// In CI nobody reads the note: a project whose settings are
				// refused is not scanned with others.
				if has, _ := hasTable(path); has && os.Getenv("CI") != "" {
					return "", usageErrorf("not reading %s: %s; in CI (CI is set) the scan does not go on without the project's settings: give the checkout to the user the scan runs as, or pass --config %s or --no-config", path, why, path)
				}
				fmt.Fprintf(notes, "nondet-sandbox: not reading %s: %s\n", path, why)
			} else {
				has, err := hasTable(path)
				if err != nil {
					return "", err
				}
				if has {
					return path, nil
				}
			}
		}
		if d == filepath.Dir(d) {
			return "", nil
		}
	}
}

// unsafeConfig says why a config file found on its own (not named with
// --config) may not be read: one another user owns, or that others may
// write or replace, could be anybody's (as git's safe.directory and
// OpenSSH's checks of authorized_keys reason); "" when it may be read.
// The file itself is checked, not only what a link leads to (a link of
// another user's to a file of root's holds their choice), and so is every
// folder on the way to it and to what it links to: each owned by the user
// or root, and not writable by others (unless sticky, as /tmp, where no
// one may replace what is not theirs).
func unsafeConfig(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	lst, err := os.Lstat(abs)
	if err != nil {
		return ""
	}
	if why := foreignOwner(lst); why != "" {
		return fmt.Sprintf("%s (pass --config %s to use it anyway)", why, path)
	}
	real := abs
	if lst.Mode()&os.ModeSymlink != 0 {
		if real, err = filepath.EvalSymlinks(abs); err != nil {
			return ""
		}
		st, err := os.Stat(real)
		if err != nil {
			return ""
		}
		if why := foreignOwner(st); why != "" {
			return fmt.Sprintf("it links to %s: %s (pass --config %s to use it anyway)", real, why, path)
		}
		lst = st
	}
	if lst.Mode().Perm()&0o002 != 0 {
		return fmt.Sprintf("anyone may write it (chmod o-w %s, or pass --config %s)", path, path)
	}
	for _, p := range []string{abs, real} {
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			st, err := os.Lstat(dir)
			if err != nil {
				break
			}
			if why := foreignOwner(st); why != "" {
				return fmt.Sprintf("another user may replace it: on its way is %s, and %s (pass --config %s to use it anyway)", dir, why, path)
			}
			if st.IsDir() && st.Mode().Perm()&0o002 != 0 && st.Mode()&os.ModeSticky == 0 {
				return fmt.Sprintf("anyone may replace it: its folder %s is writable by all (pass --config %s to use it anyway)", dir, path)
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return ""
}

// foreignOwner says who owns fi when that is neither the user nor root.
func foreignOwner(fi os.FileInfo) string {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && !yours(int(sys.Uid)) {
		return fmt.Sprintf("it belongs to uid %d, not to you or root", sys.Uid)
	}
	return ""
}

// yours says whether uid is the user's own: theirs, root's, or, for root
// run through sudo, the user who ran sudo (SUDO_UID), as git judges a
// repository's owner: a CI job runs the scan under sudo over the
// checkout it owns.
func yours(uid int) bool {
	if uid == os.Geteuid() || uid == 0 {
		return true
	}
	if os.Geteuid() != 0 {
		return false
	}
	sudo, err := strconv.Atoi(os.Getenv("SUDO_UID"))
	return err == nil && sudo == uid
}

// maxConfig bounds a config file: one found in a scanned tree is
// untrusted, and no settings file is this large.
const maxConfig = 4 << 20

// readConfigFile reads a config file that is a regular file (a FIFO or a
// link to /dev/zero named pyproject.toml would hang or fill the scan)
// of at most maxConfig bytes.
func readConfigFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", usageErrorf("%s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", usageErrorf("%s is not a regular file; pass --no-config to scan without it", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return "", usageErrorf("%s: %v", path, err)
	}
	if len(data) > maxConfig {
		return "", usageErrorf("%s is larger than %d MiB; pass --no-config to scan without it", path, maxConfig>>20)
	}
	return string(data), nil
}

func hasTable(path string) (bool, error) {
	var doc struct {
		Tool map[string]toml.Primitive `toml:"tool"`
	}
	text, err := readConfigFile(path)
	if err != nil {
		return false, err
	}
	if _, err := toml.Decode(text, &doc); err != nil {
		return false, usageErrorf("%s: %v", path, err)
	}
	_, ok := doc.Tool["nondet-sandbox"]
	return ok, nil
}

// readConfig reads the [tool.nondet-sandbox] table of path, or the whole
// file when it is not a pyproject.toml and has no such table.
func readConfig(path string) (map[string]any, error) {
	var doc map[string]any
	text, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	if _, err := toml.Decode(text, &doc); err != nil {
		return nil, usageErrorf("%s: %v", path, err)
	}
	t, _ := doc["tool"].(map[string]any)
	table, ok := t["nondet-sandbox"].(map[string]any)
	if !ok && filepath.Base(path) != "pyproject.toml" {
		return doc, nil
	}
	return table, nil
}

// applyConfig sets the flags that the command line did not set (cmdline)
// from one config file. A project's file sets only what it may: a key
// that decides what runs here, or one that loosens a limit, is left out
// with a line on notes that says where it belongs. A key that is no key,
// or a value the flag refuses, is an error that says what to write. It
// returns the keys it set.
func applyConfig(fs *pflag.FlagSet, src configSource, cmdline map[string]bool, notes io.Writer) ([]string, error) {
	path := src.path
	table, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var set []string
	for _, name := range keys {
		key, ok := lookupKey(name)
		if !ok {
			all := keyNames(func(configKey) bool { return true })
			if near := nearest(name, strings.Split(all, ", ")); near != "" {
				return nil, usageErrorf("%s: [tool.nondet-sandbox] has no key %q; did you mean %q? The keys are: %s", path, name, near, all)
			}
			return nil, usageErrorf("%s: [tool.nondet-sandbox] has no key %q; the keys are: %s", path, name, all)
		}
		flag := fs.Lookup(name)
		if flag == nil || cmdline[name] {
			continue // not this command's, or the command line's
		}
		if src.project && key.trust == userOnly {
			fmt.Fprintf(notes, "nondet-sandbox: %s: %s ignored: a project's config may not choose what runs on this machine or how it is contained; give --%s, or set it in %s\n",
				path, name, name, userConfigPath())
			continue
		}
		values, err := configValues(path, name, table[name])
		if err != nil {
			return nil, err
		}
		var before float64
		if src.project && key.trust == tightens {
			before = key.strictness(fs)
		}
		old := flag.Value.String()
		for _, v := range values {
			if key.path && (strings.Contains(v, "/") || strings.Contains(v, string(filepath.Separator))) && !filepath.IsAbs(v) {
				v = filepath.Join(dir, v)
			}
			if err := fs.Set(name, v); err != nil {
				return nil, usageErrorf("%s: %s = %q: %s", path, name, v, valueError(flag, err))
			}
		}
		if src.project && key.trust == tightens && key.strictness(fs) > before {
			_ = flag.Value.Set(old)
			fmt.Fprintf(notes, "nondet-sandbox: %s: %s ignored: a project's config may tighten this limit, not loosen it (it is %s); give --%s, or set it in %s\n",
				path, name, old, name, userConfigPath())
			continue
		}
		set = append(set, name)
	}
	return set, nil
}

// configValues are a key's value as the strings its flag takes.
func configValues(path, key string, value any) ([]string, error) {
	switch v := value.(type) {
	case []any:
		var values []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, usageErrorf("%s: %s: give a list of strings", path, key)
			}
			values = append(values, s)
		}
		return values, nil
	case string:
		return []string{v}, nil
	case int64, bool, float64:
		return []string{fmt.Sprint(v)}, nil
	}
	return nil, usageErrorf("%s: %s: %v is not a value this key takes", path, key, value)
}

// commandLine is the set of flags the command line set.
func commandLine(fs *pflag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}

// applyUserConfig applies the user's own config file, when there is one,
// to the flags the command line left alone.
func applyUserConfig(fs *pflag.FlagSet, cmdline map[string]bool, notes io.Writer) error {
	path := userConfigPath()
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	if why := unsafeConfig(path); why != "" {
		fmt.Fprintf(notes, "nondet-sandbox: not reading %s: %s\n", path, why)
		return nil
	}
	_, err := applyConfig(fs, configSource{path: path}, cmdline, notes)
	return err
}

// configure applies the config files to the flags the command line left
// alone, unless --no-config: the user's own file, then --config FILE or
// else the project's pyproject.toml found from the first target (or the
// working directory) upward. It returns the folder of the file that
// include and exclude are relative to ("" for none). The keys a project
// outside the working directory set are said on notes: the user did not
// write them.
func (o *runOptions) configure(fs *pflag.FlagSet, args []string, notes io.Writer) (string, error) {
	if o.noConfig {
		return "", nil
	}
	cmdline := commandLine(fs)
	if err := applyUserConfig(fs, cmdline, notes); err != nil {
		return "", err
	}
	src := configSource{path: o.config}
	if src.path == "" {
		start := "."
		if len(args) > 0 {
			start, _ = report.SplitID(args[0])
		}
		abs, err := filepath.Abs(start)
		if err != nil {
			return "", nil
		}
		if st, err := os.Stat(abs); err == nil && !st.IsDir() {
			abs = filepath.Dir(abs)
		}
		if src.path, err = findConfig(abs, notes); err != nil || src.path == "" {
			return "", err
		}
		src.project = true
	} else if _, err := os.Stat(src.path); err != nil {
		return "", usageErrorf("--config: %v", err)
	}
	set, err := applyConfig(fs, src, cmdline, notes)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(src.path)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	if src.project && len(set) > 0 {
		if wd, err := os.Getwd(); err == nil && !within(wd, dir) {
			fmt.Fprintf(notes, "nondet-sandbox: settings from %s, a project outside the working directory: %s\n", src.path, strings.Join(set, ", "))
		}
	}
	return dir, nil
}

// within says whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// valueError says what a flag wanted instead of a value it could not
// parse, in words rather than as the parser's error.
func valueError(f *pflag.Flag, err error) string {
	if f.Value.Type() == "duration" {
		return "not a duration (5s, 2m, 1h30m)"
	}
	var num *strconv.NumError
	if !errors.As(err, &num) {
		return err.Error()
	}
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "not a whole number"
	case strings.HasPrefix(t, "float"):
		return "not a number"
	case t == "bool":
		return "not true or false"
	}
	return "not a " + f.Value.Type()
}

// nearest is the one of names closest to name in edits, when it is close
// enough to be a misspelling of it (at most a third of it), else "".
func nearest(name string, names []string) string {
	best, bestD := "", len(name)/3+1
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
