package scanlock

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestAliveUntilReleased(t *testing.T) {
	l, err := Acquire("0badc0de")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // testing must not take or disturb the lock
		if !Alive("0badc0de") {
			t.Fatal("a held lock reads as dead")
		}
	}
	Forget("0badc0de")
	if _, err := os.Stat(filepath.Join(Dir(), "0badc0de.lock")); err != nil {
		t.Fatal("Forget removed a live scan's lock")
	}
	l.Release()
	if Alive("0badc0de") {
		t.Fatal("a released lock reads as alive")
	}
}

func TestConcurrentAcquireAndSweep(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		id := "cafe00" + string(rune('a'+i/16)) + string("0123456789abcdef"[i%16])
		go func() {
			defer wg.Done()
			l, err := Acquire(id)
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Release()
			if !Alive(id) {
				t.Errorf("%s dead while held", id)
			}
		}()
		go func() {
			defer wg.Done()
			for _, d := range Dead() {
				Forget(d)
			}
		}()
	}
	wg.Wait()
}

func TestScanID(t *testing.T) {
	for name, want := range map[string]string{
		"nondet-sandbox-0123abcd-s0-r1-3": "0123abcd",
		"nondet-sandbox-test-cache":       "",
		"other":                           "",
	} {
		if got := ScanID(name); got != want {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// TestDirIgnoresTMPDIR: two scans started with different $TMPDIR see each
// other's locks, so neither takes the other for dead and sweeps it.
func TestDirIgnoresTMPDIR(t *testing.T) {
	before := Dir()
	t.Setenv("TMPDIR", t.TempDir())
	if Dir() != before {
		t.Fatalf("the lock directory moved with $TMPDIR: %s, then %s", before, Dir())
	}
	l, err := Acquire("tmpdir01")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	t.Setenv("TMPDIR", t.TempDir())
	if !Alive("tmpdir01") {
		t.Fatal("a scan's lock is not seen under another $TMPDIR")
	}
}
