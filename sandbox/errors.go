package sandbox

import "errors"

// Why a runtime cannot run here. A runtime's constructor returns an error
// that says in one line what was wrong and what to do, and that
// errors.Is one of these.
var (
	ErrNeedsRoot    = errors.New("the runtime needs root")
	ErrNotInstalled = errors.New("a program or library the runtime needs is missing")
	ErrNoEngine     = errors.New("the container engine cannot be reached")
	ErrNoImage      = errors.New("the probe image is missing")
	ErrNetwork      = errors.New("the probe can reach a network")
)

// unavailable is a user-facing message that unwraps to its sentinel.
type unavailable struct {
	kind error
	msg  string
}

func (e *unavailable) Error() string { return e.msg }
func (e *unavailable) Unwrap() error { return e.kind }

// Unavailable is the error of a runtime that cannot run here: msg for the
// user, kind (one of the sentinels above) for code that decides.
func Unavailable(kind error, msg string) error { return &unavailable{kind: kind, msg: msg} }
