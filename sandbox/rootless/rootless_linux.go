package rootless

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
)

// Runtime is the rootless backend: the embedded runtime in its rootless
// mode.
type Runtime = embedded.Runtime

var _ sandbox.Runtime = (*Runtime)(nil)

// Options configure the runtime.
type Options struct {
	// StateRoot holds libcontainer's state, one directory per scan, in a
	// directory only the caller owns.
	StateRoot string
	// Seccomp applies the Docker-like profile.
	Seccomp bool
}

// DefaultOptions keep the state in the user's runtime directory
// ($XDG_RUNTIME_DIR), or else under the user's cache directory: never in a
// shared /tmp, where another user could have made the path first.
func DefaultOptions() Options {
	root := os.Getenv("XDG_RUNTIME_DIR")
	if root == "" {
		if cache, err := os.UserCacheDir(); err == nil {
			root = cache
		} else {
			root = filepath.Join(os.TempDir(), "nondet-sandbox-"+strconv.Itoa(os.Getuid()))
		}
	}
	return Options{StateRoot: filepath.Join(root, "nondet-sandbox", "rootless"), Seccomp: true}
}

// New returns the rootless runtime, or an error that says why this kernel
// does not allow it.
func New(opts Options) (*Runtime, error) {
	return embedded.New(embedded.Options{StateRoot: opts.StateRoot, Seccomp: opts.Seccomp, UserNS: true, Rootless: true})
}
