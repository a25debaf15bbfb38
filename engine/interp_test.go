package engine

import (
	"os"
	"slices"
	"testing"
)

func TestInterpreterUnderHomeMountsItsPrefixOnly(t *testing.T) {
	dir := t.TempDir() // stands in for /root/.pyenv/versions/3.11.7
	mk := func(p string) string {
		full := dir + p
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		return full
	}
	in := &interpreter{
		Executable: mk("/bin") + "/python3.11",
		Dirs:       []string{dir, mk("/lib/python3.11"), mk("/lib/python3.11/site-packages"), "/usr/lib/python3/dist-packages"},
	}
	got := in.mounts([]string{"/usr"})
	if !slices.Equal(got, []string{dir}) {
		t.Fatalf("want only the prefix %s, got %v", dir, got)
	}
}
