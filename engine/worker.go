package engine

import (
	"context"
	"embed"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// workerFiles is the Python side of every probe: discovery by ast, the
// ladder, canonical answers and the record channel. It is a package of
// real files in the tree (engine/worker), tested as Python too; its tests
// (engine/worker/tests) are not embedded.
//
//go:embed worker/*.py
var workerFiles embed.FS

// workerPackage is the worker's folder in a scan's shared folder, and so
// its package's name in every probe: one that no scanned tree gives a
// module or a package (this tree's own is "worker"), as the package is in
// sys.modules under it before anything scanned is imported.
//
// A folder rather than a zip application: each module keeps a real path,
// where linecache and inspect find its source (a function handed the
// ladder's callback may read it), and the bytecode compiled once per scan
// (compileWorker) sits where import looks for it; a zip's modules would be
// compiled by every interpreter unless the zip were built again, with
// their bytecode, after that compile. Running a folder puts it first on
// sys.path even under PYTHONSAFEPATH; its __main__.py takes it off before
// anything else is imported.
const workerPackage = "_nondet_worker"

// WriteWorker writes the worker's package into dir (made if missing):
// `python -s DIR discover|probe|posture` runs it, and with dir's parent on
// sys.path it imports as a package under dir's name (bench's floor calls
// exactly the worker's rungs: worker.rungs).
func WriteWorker(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names, err := fs.Glob(workerFiles, "worker/*.py")
	if err != nil {
		return err
	}
	for _, name := range names {
		data, err := workerFiles.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(name)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// compileWorker compiles the worker's modules in dir once for the scan,
// with the interpreter that runs them (isolated, without site: nothing of
// the scanned environment runs on the host), to where the scan's
// interpreters, started with env, look for their bytecode: under the
// pycache prefix env gives them (on the host), else in __pycache__ beside
// each module, which they read under -B too. So no interpreter of the scan
// compiles them again: about 10 ms of each start. Where it fails, each
// interpreter compiles them as it starts.
//
// The code is named after each module's path where the interpreter sees it
// (inside, the folder there): what looks at a worker function's source
// (inspect.getsource of the ladder's callback) finds it there, as when the
// source runs.
func compileWorker(ctx context.Context, python, dir, inside string, env []string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The entry's imports run too (its guarded parts do not), so the
	// standard library the worker loads before anything scanned is cached
	// with it: on the host, probes cannot write the worker's cache.
	const script = `import importlib.util, os, py_compile, runpy, sys
folder, inside = sys.argv[1:3]
for name in sorted(os.listdir(folder)):
    if name.endswith(".py"):
        src = os.path.join(folder, name)
        py_compile.compile(src, cfile=importlib.util.cache_from_source(src), dfile=os.path.join(inside, name), doraise=True)
runpy.run_path(os.path.join(folder, "__main__.py"), run_name="_nondet_compile")
`
	args := []string{"-I", "-S"}
	for _, kv := range env {
		if prefix, ok := strings.CutPrefix(kv, "PYTHONPYCACHEPREFIX="); ok {
			args = append(args, "-X", "pycache_prefix="+prefix)
		}
	}
	cmd := exec.CommandContext(ctx, python, append(args, "-c", script, dir, inside)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	_ = cmd.Run()
}
