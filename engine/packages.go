package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// packagesScript lists installed distributions from their metadata only:
// the interpreter starts isolated and without site (no .pth file of the
// environment runs), finds its site-packages itself, and imports nothing
// of any distribution.
//
// The metadata are untrusted input read on the host. So the script reads
// each file itself, bounded, and only when it is a regular file (a FIFO or
// a link to /dev/zero would hang it or fill its memory), never through
// importlib.metadata's readers; it enumerates the metadata folders itself
// too. A top is a single component that is a module name, whose real path
// lies in its site-packages. A distribution that fails any of this is
// reported with why and the rest are listed.
const packagesScript = venvPrelude + `import csv, io, json, posixpath, site, stat
SMALL, BIG = 1 << 20, 8 << 20  # bytes of a metadata file; RECORD may be long
MAX_ENTRIES, MAX_DISTS, MAX_NOTES = 1 << 20, 20000, 20
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")

class Broken(Exception):
    pass

def show(s):
    return repr(s if len(s) <= 80 else s[:80] + "...")

def kind(mode):
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"

def read(folder, name, limit):
    # lstat, then an open that neither follows a link nor blocks on a FIFO,
    # then fstat: a file swapped between the calls is refused all the same.
    path = os.path.join(folder, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Broken("%s cannot be read (%s)" % (name, e.strerror))
    if not stat.S_ISREG(st.st_mode):
        raise Broken("%s is %s, not a regular file" % (name, kind(st.st_mode)))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise Broken("%s cannot be opened (%s)" % (name, e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Broken("%s is %s, not a regular file" % (name, kind(st.st_mode)))
        over = Broken("%s is over the bound of %d bytes" % (name, limit))
        if st.st_size > limit:
            raise over
        chunks, n = [], 0
        while n <= limit:
            chunk = os.read(fd, limit + 1 - n)
            if not chunk:
                break
            chunks.append(chunk)
            n += len(chunk)
        if n > limit:
            raise over
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")

def metadata(site_dir, entry):
    # The folder holding the other metadata files (None for an egg-info
    # file, which is the PKG-INFO itself), the name and the version.
    path = os.path.join(site_dir, entry)
    if os.path.isdir(path):
        folder, base = path, "METADATA" if entry.lower().endswith(".dist-info") else "PKG-INFO"
    elif entry.lower().endswith(".egg-info"):
        folder, base = None, entry
    else:
        raise Broken("not a folder")
    text = read(folder or site_dir, base, SMALL)
    if text is None:
        raise Broken("no %s" % base)
    heads = {}
    for line in re.split(r"\r\n|\r|\n", text):  # RFC 822 headers, up to the body
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and line[0] not in " \t":
            heads.setdefault(key.strip().lower(), value.strip())
    name = heads.get("name", "")
    if not NAME.fullmatch(name):
        raise Broken("%s Name %s is not a distribution name" % (base, show(name)) if name else "%s has no Name" % base)
    return folder, name, heads.get("version", "")[:100]

def check(site_dir, top):
    # ("ok", ""), ("absent", "") or ("refused", why) for top as a module
    # (NAME.py, a regular file) or a package (a folder) of site_dir.
    module = top.endswith(".py")
    if not (top[:-3] if module else top).isidentifier():
        return "refused", "not a Python module name"
    real = os.path.realpath(os.path.join(site_dir, top))
    if real == site_dir or os.path.commonpath([site_dir, real]) != site_dir:
        return "refused", "resolves outside %s, to %s" % (site_dir, show(real))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return "absent", ""
    except OSError as e:
        return "refused", "cannot be read (%s)" % e.strerror
    if module and not stat.S_ISREG(st.st_mode):
        return "refused", "is %s, not a regular file" % kind(st.st_mode)
    return ("ok" if module or stat.S_ISDIR(st.st_mode) else "absent"), ""

def find_tops(site_dir, folder, entry, name):
    # The tops of a distribution and why each refused one was: from the
    # files it installed (RECORD, installed-files.txt), else top_level.txt,
    # else a guess from its name.
    tops, why = set(), {}
    paths = []
    if folder is not None:
        if entry.lower().endswith(".dist-info"):
            text = read(folder, "RECORD", BIG) or ""
            try:
                paths = [row[0] for row in csv.reader(io.StringIO(text, newline="")) if row]
            except csv.Error as e:
                raise Broken("RECORD is not CSV (%s)" % e)
        else:  # relative to the egg-info folder
            text = read(folder, "installed-files.txt", BIG) or ""
            paths = [posixpath.join(entry, p.strip()) for p in text.splitlines() if p.strip()]
    cands = set()
    outside = []
    for p in paths:
        p = posixpath.normpath(p)
        if not p.endswith(".py"):
            continue
        parts = p.split("/")
        if p.startswith("/") or parts[0] == "..":
            outside.append(p)
        elif parts[0] != "__pycache__" and not parts[0].lower().endswith((".dist-info", ".egg-info", ".data")):
            cands.add(parts[0])
    if outside:
        # One line for a distribution's scripts, however many.
        outside.sort()
        why.setdefault(outside[0], "a Python file outside site-packages" if len(outside) == 1 else
                       "%d Python files outside site-packages (this one and %d more)" % (len(outside), len(outside) - 1))
    for top in sorted(cands):
        state, reason = check(site_dir, top)
        if state == "ok":
            tops.add(top)
        elif reason:
            why.setdefault(top, reason)
    if not tops:
        text = read(folder, "top_level.txt", SMALL) if folder is not None else None
        names = [t.strip() for t in (text or "").splitlines() if t.strip()]
        guess = not names
        for t in dict.fromkeys(names or [re.sub(r"[-.]+", "_", name)]):
            for cand in dict.fromkeys((t, t + ".py", t.lower(), t.lower() + ".py")):
                state, reason = check(site_dir, cand)
                if state == "ok":
                    tops.add(cand)
                if state != "absent":
                    if reason and not guess:
                        why.setdefault(t, reason)
                    break
    return tops, why

def entries(site_dir):
    names, n = [], 0
    try:
        with os.scandir(site_dir) as it:
            for e in it:
                n += 1
                if n > MAX_ENTRIES or len(names) >= MAX_DISTS:
                    broken.append({"name": site_dir, "reason": "over %d entries or %d metadata folders: the rest were not read" % (MAX_ENTRIES, MAX_DISTS)})
                    break
                if e.name.lower().endswith((".dist-info", ".egg-info")):
                    names.append(e.name)
    except OSError as e:
        broken.append({"name": site_dir, "reason": "cannot be listed (%s)" % e.strerror})
    return sorted(names)

def failure(e):
    return str(e) if isinstance(e, Broken) else "%s: %s" % (type(e).__name__, e)

dirs = site.getsitepackages()
env = venv()
if env:
    dirs = env[1] + (dirs if env[2] else [])
sites = []
for d in dirs:
    d = os.path.realpath(d)
    if os.path.isdir(d) and d not in sites:
        sites.append(d)
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
want = {norm(n): n for n in json.loads(sys.argv[1])}
every = sys.argv[2] == "all"
found, broken, ignored, seen = [], [], [], set()
listing = [(site_dir, entries(site_dir)) for site_dir in sites]

def add(name, version, site_dir, tops, why):
    notes = sorted(why.items())
    ignored.extend({"name": name, "top": t, "reason": r} for t, r in notes[:MAX_NOTES])
    if len(notes) > MAX_NOTES:
        ignored.append({"name": name, "top": "...", "reason": "%d more refused" % (len(notes) - MAX_NOTES)})
    found.append({"name": name, "version": version, "site": site_dir, "tops": sorted(tops)})

for site_dir, names in listing:
    for entry in names:
        folder_key = norm(entry.rsplit(".", 1)[0].split("-")[0])
        try:
            folder, name, version = metadata(site_dir, entry)
        except Exception as e:
            if folder_key not in seen and (every or folder_key in want):
                seen.add(folder_key)
                broken.append({"name": entry, "reason": failure(e), "asked": folder_key in want})
            continue
        key = norm(name)
        if key in seen or not (every or key in want):
            continue
        seen.add(key)
        try:
            tops, why = find_tops(site_dir, folder, entry, name)
        except Exception as e:
            broken.append({"name": name, "reason": failure(e), "asked": key in want})
            continue
        add(name, version, site_dir, tops, why)
# A name no distribution has may be what one installs: "dateutil" is
# python-dateutil's package. Only then are the others' tops read.
imports = {n: k for k, n in want.items() if k not in seen and n.isidentifier()}
for site_dir, names in listing if imports and not every else ():
    for entry in names:
        try:
            folder, name, version = metadata(site_dir, entry)
            if norm(name) in seen:
                continue
            tops, why = find_tops(site_dir, folder, entry, name)
        except Exception:
            continue  # said above when asked for by name; not asked for here
        hits = [imports[m] for m in (t[:-3] if t.endswith(".py") else t for t in tops) if m in imports]
        if hits:
            seen.update(hits + [norm(name)])
            add(name, version, site_dir, tops, why)
print(json.dumps({"found": found, "broken": broken, "ignored": ignored,
                  "missing": [n for k, n in want.items() if k not in seen]}))
`

// Package is an installed distribution to scan: its name and version,
// the site-packages folder it lives in and its top-level modules and
// packages there.
type Package struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Site    string   `json:"site"`
	Tops    []string `json:"tops"`
}

// Packages is what FindPackages found: the distributions to scan, and
// what it left out and why, to be told to the user.
type Packages struct {
	Found   []Package
	Broken  []BrokenPackage
	Ignored []IgnoredTop
}

// BrokenPackage is a distribution whose metadata could not be read safely
// (named by its metadata folder when even its name could not be), and why;
// it is not scanned.
type BrokenPackage struct {
	Name   string
	Reason string
}

// IgnoredTop is a top-level name a distribution's metadata gives that is
// not scanned, because it is not a module or package inside its
// site-packages, and why.
type IgnoredTop struct {
	Name   string
	Top    string
	Reason string
}

// Notes are the lines telling what was left out, one per distribution or
// top.
func (p Packages) Notes() []string {
	var out []string
	for _, b := range p.Broken {
		out = append(out, fmt.Sprintf("skipped distribution %s: %s", b.Name, b.Reason))
	}
	for _, ig := range p.Ignored {
		out = append(out, fmt.Sprintf("distribution %s: not scanning %s: %s", ig.Name, ig.Top, ig.Reason))
	}
	return out
}

const (
	listTimeout = time.Minute
	listBound   = 64 << 20 // bytes of the lister's answer
	stderrBound = 64 << 10 // bytes of its stderr kept, the last ones
)

// FindPackages asks python's environment for the distributions named (or
// every one, with all) from their metadata. A name that is not installed,
// or whose metadata cannot be read safely, is an error that says so; with
// all, a broken distribution is only listed in the result's Broken. Notes
// are returned with an error too.
func FindPackages(ctx context.Context, python string, names []string, all bool) (Packages, error) {
	path, err := exec.LookPath(python)
	if err != nil {
		return Packages{}, &usageError{fmt.Sprintf("python interpreter %q not found; pass --python with the environment's interpreter (ENV/bin/python)", python)}
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	which := "named"
	if all {
		which = "all"
	}
	arg, _ := json.Marshal(append([]string{}, names...))
	cmd := exec.CommandContext(ctx, path, "-I", "-S", "-c", packagesScript, string(arg), which)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.WaitDelay = 5 * time.Second // a child left holding the pipes does not hold us
	stdout := &boundedBuffer{max: listBound}
	stderr := &tailBuffer{max: stderrBound}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		if stdout.over {
			return Packages{}, &usageError{fmt.Sprintf("%s listed over %d MiB of distributions; not read", path, listBound>>20)}
		}
		last := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		return Packages{}, &usageError{fmt.Sprintf("%s could not list its installed distributions (%v: %s)", path, err, printable(last))}
	}
	var res struct {
		Found  []Package `json:"found"`
		Broken []struct {
			Name   string `json:"name"`
			Reason string `json:"reason"`
			Asked  bool   `json:"asked"`
		} `json:"broken"`
		Ignored []struct {
			Name   string `json:"name"`
			Top    string `json:"top"`
			Reason string `json:"reason"`
		} `json:"ignored"`
		Missing []string `json:"missing"`
	}
	if err := json.Unmarshal(stdout.buf.Bytes(), &res); err != nil {
		return Packages{}, fmt.Errorf("listing distributions: %w", err)
	}
	var out Packages
	var asked []string
	for _, b := range res.Broken {
		out.Broken = append(out.Broken, BrokenPackage{Name: printable(b.Name), Reason: printable(b.Reason)})
		if b.Asked && !all {
			asked = append(asked, fmt.Sprintf("%s (%s)", printable(b.Name), printable(b.Reason)))
		}
	}
	for _, ig := range res.Ignored {
		out.Ignored = append(out.Ignored, IgnoredTop{Name: printable(ig.Name), Top: printable(ig.Top), Reason: printable(ig.Reason)})
	}
	// The lister checked every top already; this checks again what the
	// targets will be made of, in case its answer is not what it should be.
	for _, p := range res.Found {
		p.Name, p.Version = printable(p.Name), printable(p.Version)
		if !filepath.IsAbs(p.Site) || filepath.Clean(p.Site) != p.Site {
			out.Broken = append(out.Broken, BrokenPackage{Name: p.Name, Reason: fmt.Sprintf("its site-packages %s is not a clean absolute path", printable(p.Site))})
			continue
		}
		var tops []string
		for _, top := range p.Tops {
			if why := refuseTop(p.Site, top); why != "" {
				out.Ignored = append(out.Ignored, IgnoredTop{Name: p.Name, Top: printable(top), Reason: why})
				continue
			}
			tops = append(tops, top)
		}
		if len(tops) > 0 {
			p.Tops = tops
			out.Found = append(out.Found, p)
		}
	}
	if len(asked) > 0 {
		return out, &usageError{fmt.Sprintf("cannot read the metadata of %s, installed for %s", strings.Join(asked, ", "), path)}
	}
	if len(res.Missing) > 0 {
		return out, &usageError{fmt.Sprintf("%s is not installed for %s; install it there, or pass --python with the environment's interpreter (ENV/bin/python)", printable(strings.Join(res.Missing, ", ")), path)}
	}
	if len(out.Found) == 0 {
		return out, ErrNoSources
	}
	return out, nil
}

// refuseTop says why top is not a module or package of the site-packages
// folder site, or "" when it is one: it must be one path component whose
// real path stays inside site's.
func refuseTop(site, top string) string {
	if top == "" || top == "." || top == ".." || strings.ContainsAny(top, "/\\\x00") {
		return "not a single path component"
	}
	root, err := filepath.EvalSymlinks(site)
	if err != nil {
		return fmt.Sprintf("its site-packages cannot be resolved (%v)", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(site, top))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "not there"
		}
		return fmt.Sprintf("cannot be resolved (%v)", err)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Sprintf("resolves outside %s", site)
	}
	return ""
}

// printable is text from a distribution's metadata made safe to print,
// as every report field is (report.TerminalSafe), and bounded in length.
func printable(s string) string {
	const most = 300
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "..."
	}
	return report.TerminalSafe(s)
}

// boundedBuffer keeps up to max bytes and fails the write that would go
// over, which closes the pipe the child writes to.
type boundedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		w.over = true
		return 0, errors.New("output over its bound")
	}
	return w.buf.Write(p)
}

// PackageTargets are the targets that scan pkgs: each top-level module or
// package, with ids relative to its site-packages (the target's Arg is
// that folder, so replay finds the files again). A top that is not one
// path component inside its site-packages is dropped, as FindPackages
// drops it, whatever pkgs came from.
func PackageTargets(pkgs []Package) []Target {
	var out []Target
	for _, p := range pkgs {
		if !filepath.IsAbs(p.Site) {
			continue
		}
		for _, top := range p.Tops {
			if refuseTop(p.Site, top) != "" {
				continue
			}
			out = append(out, Target{Arg: p.Site, Base: p.Site, Path: filepath.Join(p.Site, top), Installed: true})
		}
	}
	return out
}

// ReportPackages are pkgs as the report lists them.
func ReportPackages(pkgs []Package) []report.Package {
	var out []report.Package
	for _, p := range pkgs {
		out = append(out, report.Package{Name: p.Name, Version: p.Version, Modules: p.Tops})
	}
	return out
}
