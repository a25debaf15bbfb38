package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// interpreter is what the sandbox must show of a Python installation.
type interpreter struct {
	Executable string   `json:"executable"` // the real binary, not a shim
	Dirs       []string `json:"dirs"`       // prefix, stdlib, site-packages
	Venv       bool     `json:"venv"`
}

// venvPrelude defines venv() for an interpreter started without site: the
// virtual environment it belongs to, found as site finds it, from the
// pyvenv.cfg beside or above it: (prefix, its own site-packages, whether
// it includes the system's), or None.
const venvPrelude = `import glob, os, re, sys
def venv():
    exe = os.path.abspath(sys.executable)
    for cfg in (os.path.join(os.path.dirname(exe), "pyvenv.cfg"), os.path.join(os.path.dirname(os.path.dirname(exe)), "pyvenv.cfg")):
        if os.path.isfile(cfg):
            prefix = os.path.dirname(cfg)
            own = [d for pat in ("lib/python3*/site-packages", "lib64/python3*/site-packages", "lib/python3*/dist-packages")
                   for d in sorted(glob.glob(os.path.join(prefix, pat)))]
            with open(cfg) as fh:
                system = bool(re.search(r"include-system-site-packages\s*=\s*true", fh.read(), re.I))
            return prefix, own, system
    return None
`

// probeInterpreter asks the interpreter itself (isolated, without site)
// where it lives. A version manager's shim such as pyenv's resolves to the
// real binary here, so the sandbox can mount just that installation.
func probeInterpreter(ctx context.Context, python string) (*interpreter, error) {
	// Without site (-S): site runs the environment's .pth files, which are
	// code of the packages to be scanned, here on the host. So a virtual
	// environment is found as site would find it, from its pyvenv.cfg.
	const script = venvPrelude + `import json, site, sysconfig
paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
paths += [v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib")]
paths += site.getsitepackages()
env = venv()
if env:
    paths = [env[0]] + env[1] + paths
print(json.dumps({"executable": sys.executable, "dirs": paths, "venv": env is not None}))`
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if home := os.Getenv("HOME"); home != "" {
		cmd.Env = append(cmd.Env, "HOME="+home) // version-manager shims find their root through it
	}
	if root := os.Getenv("PYENV_ROOT"); root != "" {
		cmd.Env = append(cmd.Env, "PYENV_ROOT="+root)
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, &usageError{fmt.Sprintf("python interpreter %q does not run (%v); pass --python with a path to python3", python, err)}
	}
	var in interpreter
	if err := json.Unmarshal(out, &in); err != nil || in.Executable == "" {
		return nil, &usageError{fmt.Sprintf("python interpreter %q did not say where it lives; pass --python with a path to python3", python)}
	}
	// A virtual environment is found from where its interpreter is
	// started: keep that path (its link's target is mounted with the base
	// prefix). Anything else runs as the real binary, not a shim.
	if real, err := filepath.EvalSymlinks(in.Executable); err == nil && !in.Venv {
		in.Executable = real
	}
	return &in, nil
}

// mounts are the directories to bind for the interpreter, outside the
// system directories the policy binds anyway: for an interpreter under a
// home directory, its own prefix and nothing beside it.
func (in *interpreter) mounts(system []string) []string {
	if !filepath.IsAbs(in.Executable) {
		return nil // the image's own interpreter: nothing of the host to mount
	}
	var dirs []string
	for _, d := range append([]string{filepath.Dir(in.Executable)}, in.Dirs...) {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		covered := false
		for _, s := range system {
			covered = covered || within(real, s)
		}
		if !covered {
			dirs = append(dirs, real)
		}
	}
	out := outermost(dirs)
	// A bin directory beside lib/ under one prefix: bind the prefix.
	for i, d := range out {
		if strings.HasSuffix(d, "/bin") {
			prefix := filepath.Dir(d)
			for _, other := range out {
				if other != d && within(other, prefix) {
					out[i] = prefix
				}
			}
		}
	}
	sort.Strings(out)
	var merged []string
	for _, d := range out {
		if len(merged) > 0 && within(d, merged[len(merged)-1]) {
			continue
		}
		merged = append(merged, d)
	}
	return merged
}
