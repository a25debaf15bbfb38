// Command nondet-sandbox finds Python functions that answer differently
// from one run to the next, and proves it with a witness.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0"

// Exit statuses, mapped in exactly one place: exitCode.
const (
	exitClean    = 0 // no findings
	exitFindings = 1 // at least one nondeterministic function
	exitUsage    = 2 // bad usage or unusable input
	exitUnjudged = 3 // no findings, but a module could not be read or parsed, or a named function was not probed
	exitEmpty    = 5 // no Python file under the targets (as pytest's "no tests collected")
	exitSignal   = 130
)

// errFindings is returned by a scan that found something: not a failure,
// but the exit status says so.
var errFindings = errors.New("findings")

// errUnjudged is returned by a scan with no findings that could not judge
// all it was given: a clean report would overstate what was checked.
var errUnjudged = errors.New("a clean report would overstate what was checked")

func main() {
	reexec()
	os.Exit(run())
}

// run is the whole command, returning its exit status.
func run() int {
	// Not dumpable: a probe of the host runtime, running as the same user,
	// cannot read this process's memory or /proc/<pid>/environ.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCommand().ExecuteContext(ctx)
	return exitCode(ctx, err)
}

func exitCode(ctx context.Context, err error) int {
	switch {
	case err == nil:
		return exitClean
	case errors.Is(err, errFindings):
		return exitFindings
	case errors.Is(err, errUnjudged):
		fmt.Fprintln(os.Stderr, "nondet-sandbox: "+err.Error())
		return exitUnjudged
	case errors.Is(err, engine.ErrNoSources):
		fmt.Fprintln(os.Stderr, "nondet-sandbox: "+err.Error())
		return exitEmpty
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "nondet-sandbox: interrupted; every probe process was stopped")
		return exitSignal
	case errors.Is(err, engine.ErrUsage):
		fmt.Fprintln(os.Stderr, "nondet-sandbox: "+err.Error())
		return exitUsage
	default:
		fmt.Fprintln(os.Stderr, "nondet-sandbox: "+err.Error())
		return exitUsage
	}
}
