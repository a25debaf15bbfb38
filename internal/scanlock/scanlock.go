// Package scanlock tells live scans from dead ones. Every scan holds an
// exclusive lock on a file named after its id for as long as it runs; the
// kernel drops the lock when the process dies, however it dies, so a later
// scan can tell which leftovers (containers, cgroups, directories) belong to
// a scan that no longer runs and sweep them.
package scanlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Dir is where the lock files live: /run/nondet-sandbox for root, a
// per-user directory under the temporary directory otherwise.
func Dir() string {
	if os.Geteuid() == 0 {
		return "/run/nondet-sandbox"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("nondet-sandbox-locks-%d", os.Geteuid()))
}

// Lock is a held scan lock.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the lock of scan id.
func Acquire(id string) (*Lock, error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("scan lock: %w", err)
	}
	path := filepath.Join(dir, id+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("scan lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("scan lock %s: %w", id, err)
	}
	return &Lock{f: f, path: path}, nil
}

// Release drops the lock and removes its file.
func (l *Lock) Release() {
	os.Remove(l.path)
	l.f.Close()
}

// Alive reports whether scan id still runs. A scan with no lock file at all
// is dead: the lock is taken before anything else is made.
func Alive(id string) bool {
	path := filepath.Join(Dir(), id+".lock")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// Forget removes the lock file of a dead scan.
func Forget(id string) {
	if !Alive(id) {
		os.Remove(filepath.Join(Dir(), id+".lock"))
	}
}

// Dead lists the scans that left a lock file behind and no longer run.
func Dead() []string {
	entries, _ := os.ReadDir(Dir())
	var out []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if ok && !Alive(id) {
			out = append(out, id)
		}
	}
	return out
}

// ScanID extracts the scan id from a resource name made by NameOf, or "".
func ScanID(name string) string {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok || len(rest) < 8 {
		return ""
	}
	for _, c := range rest[:8] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return rest[:8]
}

// Prefix starts the name of every resource a scan makes.
const Prefix = "nondet-sandbox-"
