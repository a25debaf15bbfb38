package engine

import "errors"

// ErrUsage marks an input the user must fix: a path that does not exist, a
// file that is not Python, a function that is not there. Its message says
// what was wrong and what to do.
var ErrUsage = errors.New("usage")

// ErrRuntime marks a sandbox runtime that cannot start probes here.
var ErrRuntime = errors.New("runtime unavailable")

// usageError wraps ErrUsage with a message meant for the user.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }
