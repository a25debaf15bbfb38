package engine

import (
	"errors"
	"fmt"
)

// ErrUsage marks an input the user must fix: a path that does not exist, a
// file that is not Python, a function that is not there. Its message says
// what was wrong and what to do.
var ErrUsage = errors.New("usage")

// ErrNoSources is a scan whose targets hold no Python file: most likely a
// wrong path.
var ErrNoSources = errors.New("no Python file under the given paths: nothing was scanned")

// ErrAllExcluded is a scan with Filter.Force whose named files were all
// excluded: a hook's commit that touches none of the project's sources,
// nothing to judge and nothing wrong.
var ErrAllExcluded = errors.New("nothing to scan")

// ErrInterrupted is a scan stopped before it ended (its context was
// cancelled: Ctrl-C, SIGTERM) after some runs were made: it comes with
// the report of what ran, marked partial.
var ErrInterrupted = errors.New("interrupted")

// ErrRuntime marks a sandbox runtime that cannot start probes here.
var ErrRuntime = errors.New("runtime unavailable")

// usageError wraps ErrUsage with a message meant for the user.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }

// Usagef makes an error about the user's input; its message is the whole
// of what is printed.
func Usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// runtimeError says why a runtime cannot run here, and what to do.
type runtimeError struct{ err error }

func (e *runtimeError) Error() string   { return e.err.Error() }
func (e *runtimeError) Unwrap() []error { return []error{ErrRuntime, e.err} }

// Unavailable marks err as a runtime that cannot run here.
func Unavailable(err error) error { return &runtimeError{err} }
