package engine

import (
	"context"
	"encoding/json"
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
const packagesScript = venvPrelude + `import json, site, importlib.metadata as md
dirs = site.getsitepackages()
env = venv()
if env:
    dirs = env[1] + (dirs if env[2] else [])
dirs = [d for d in dirs if os.path.isdir(d)]
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
want = {norm(n): n for n in json.loads(sys.argv[1])}
every = sys.argv[2] == "all"
out, seen = [], set()
for dist in md.distributions(path=dirs):
    name = dist.metadata["Name"] or ""
    key = norm(name)
    if not name or key in seen or not (every or key in want):
        continue
    seen.add(key)
    site_dir = os.path.realpath(str(dist.locate_file("")))
    tops = set()
    for f in dist.files or []:
        parts = f.parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".egg-info", ".data")):
            continue
        if len(parts) == 1 and not parts[0].endswith(".py"):
            continue
        if len(parts) > 1 and not f.name.endswith(".py"):
            continue
        tops.add(parts[0])
    if not tops:  # no RECORD (a distribution packaged by the system): its top_level.txt, else its name
        names = (dist.read_text("top_level.txt") or "").split() or [re.sub(r"[-.]+", "_", name)]
        for t in names:
            for cand in (t, t + ".py", t.lower(), t.lower() + ".py"):
                if os.path.exists(os.path.join(site_dir, cand)):
                    tops.add(cand)
                    break
    out.append({"name": name, "version": dist.version, "site": site_dir, "tops": sorted(tops)})
print(json.dumps({"found": out, "missing": [n for k, n in want.items() if k not in seen]}))
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

// FindPackages asks python's environment for the distributions named (or
// every one, with all) from their metadata; a name that is not installed
// is an error that names the interpreter asked.
func FindPackages(ctx context.Context, python string, names []string, all bool) ([]Package, error) {
	path, err := exec.LookPath(python)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("python interpreter %q not found; pass --python with the environment's interpreter (ENV/bin/python)", python)}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	which := "named"
	if all {
		which = "all"
	}
	arg, _ := json.Marshal(append([]string{}, names...))
	cmd := exec.CommandContext(ctx, path, "-I", "-S", "-c", packagesScript, string(arg), which)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		last := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		return nil, &usageError{fmt.Sprintf("%s could not list its installed distributions (%v: %s)", path, err, last)}
	}
	var res struct {
		Found   []Package `json:"found"`
		Missing []string  `json:"missing"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("listing distributions: %w", err)
	}
	if len(res.Missing) > 0 {
		return nil, &usageError{fmt.Sprintf("%s is not installed for %s; install it there, or pass --python with the environment's interpreter (ENV/bin/python)", strings.Join(res.Missing, ", "), path)}
	}
	var pkgs []Package
	for _, p := range res.Found {
		if len(p.Tops) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return nil, ErrNoSources
	}
	return pkgs, nil
}

// PackageTargets are the targets that scan pkgs: each top-level module or
// package, with ids relative to its site-packages (the target's Arg is
// that folder, so replay finds the files again).
func PackageTargets(pkgs []Package) []Target {
	var out []Target
	for _, p := range pkgs {
		for _, top := range p.Tops {
			path := filepath.Join(p.Site, top)
			if _, err := os.Stat(path); err != nil {
				continue
			}
			out = append(out, Target{Arg: p.Site, Base: p.Site, Path: path})
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
