package engine

import (
	"context"
	_ "embed"
	"os/exec"
	"path/filepath"
	"time"
)

// workerSource is the Python side of every probe: discovery by ast, the
// ladder, canonical answers and the record channel. It is a real file in the
// tree (engine/worker.py), tested as Python too.
//
//go:embed worker.py
var workerSource []byte

// WorkerSource is the worker, for tools that measure against it (bench's
// floor calls exactly the worker's rungs).
func WorkerSource() []byte { return workerSource }

// compileWorker compiles the worker once for the scan, with the
// interpreter that runs it (isolated, without site: nothing of the
// scanned environment runs on the host), into dir/worker.pyc, so no
// interpreter of the scan compiles it again: about 10 ms of each start.
// It returns the file's name in dir, or "" to run the source.
//
// The code is named after the source's path where the interpreter sees it
// (inside): what looks at a worker function's source (inspect.getsource of
// the ladder's callback) finds it there, as when the source runs.
func compileWorker(ctx context.Context, python, dir, inside string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const script = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile=sys.argv[3], doraise=True)"
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", script, filepath.Join(dir, "worker.py"), filepath.Join(dir, "worker.pyc"), inside)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if err := cmd.Run(); err != nil {
		return ""
	}
	return "worker.pyc"
}
