package conformance

import (
	"os"
	"path/filepath"
)

// Leftovers lists the container resources that exist now: the runtime's
// state directories under stateRoot and every scan's cgroups.
func Leftovers(stateRoot string) []string {
	var out []string
	states, _ := filepath.Glob(filepath.Join(stateRoot, "*"))
	out = append(out, states...)
	for _, pattern := range []string{"/sys/fs/cgroup/*/nondet-sandbox/*", "/sys/fs/cgroup/nondet-sandbox/*"} {
		cgs, _ := filepath.Glob(pattern)
		for _, c := range cgs {
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				out = append(out, c)
			}
		}
	}
	return out
}
