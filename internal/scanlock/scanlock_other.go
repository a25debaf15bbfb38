//go:build !linux

package scanlock

import "strings"

// Prefix starts the name of every resource a scan makes.
const Prefix = "nondet-sandbox-"

// Lock is a no-op where the sandbox does not run.
type Lock struct{}

func Acquire(string) (*Lock, error) { return &Lock{}, nil }
func (*Lock) Release()              {}
func Alive(string) bool             { return true } // never sweep what cannot be told
func Forget(string)                 {}
func Dead() []string                { return nil }

// ScanID extracts the scan id from a resource name, or "".
func ScanID(name string) string {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok || len(rest) < 8 {
		return ""
	}
	return rest[:8]
}
