// Package scanlock tells live scans from dead ones. Every scan holds an
// exclusive (open file description) lock on a file named after its id for as long as it runs; the
// kernel drops the lock when the process dies, however it dies, so a later
// scan can tell which leftovers (containers, cgroups, directories) belong to
// a scan that no longer runs and sweep them.
package scanlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is where the lock files live: one directory for every user (sticky
// and world-writable, like /tmp), because a scan must see every other live
// scan before it sweeps: a Docker engine is shared between users. It is
// fixed, never under $TMPDIR: a scan started with another $TMPDIR would
// otherwise take every running scan for dead and sweep its containers.
func Dir() string {
	return "/tmp/nondet-sandbox-locks"
}

func ensureDir() (string, error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	if st.Mode().Perm() != 0o777 || st.Mode()&os.ModeSticky == 0 {
		_ = os.Chmod(dir, 0o777|os.ModeSticky) // only its owner can; others use it as it is
	}
	return dir, nil
}

// Lock is a held scan lock.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the lock of scan id. The lock file appears under its name
// only once it is locked (it is locked under a temporary name, then
// renamed), so no one ever sees the file of a live scan unlocked.
func Acquire(id string) (*Lock, error) {
	dir, err := ensureDir()
	if err != nil {
		return nil, fmt.Errorf("scan lock: %w", err)
	}
	f, err := os.CreateTemp(dir, ".acquire-")
	if err != nil {
		return nil, fmt.Errorf("scan lock: %w", err)
	}
	// Readable by everyone: other users' scans test it before sweeping.
	_ = f.Chmod(0o644)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("scan lock %s: %w", id, err)
	}
	path := filepath.Join(dir, id+".lock")
	if err := os.Rename(f.Name(), path); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("scan lock: %w", err)
	}
	return &Lock{f: f, path: path}, nil
}

// Release drops the lock and removes its file.
func (l *Lock) Release() {
	os.Remove(l.path)
	l.f.Close()
}

// Alive reports whether scan id still runs, without disturbing it: the
// lock is tested, never taken. A scan with no lock file is dead.
func Alive(id string) bool {
	return locked(filepath.Join(Dir(), id+".lock"))
}

func locked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return true // cannot tell: treat as alive, never sweep a live scan
	}
	return lk.Type != unix.F_UNLCK
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
		if strings.HasPrefix(e.Name(), ".acquire-") {
			// Left by a scan that died between making and naming its
			// lock; a young one may be a scan doing that right now.
			info, err := e.Info()
			if err == nil && time.Since(info.ModTime()) > 10*time.Minute && !locked(filepath.Join(Dir(), e.Name())) {
				os.Remove(filepath.Join(Dir(), e.Name()))
			}
			continue
		}
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
