package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeSynthTree writes bench's synthetic tree under dir: a package synth
// of modules modules with perModule small pure functions each. One in ten
// returns a list built from a set of strings (nondeterministic under the
// hash seed), one in ten takes two arguments, the rest one; ids are
// synth/mNNNN.py::fK. It says how many functions are nondeterministic.
// Unlike the reference generator's sorted(str(x)), the one-argument
// functions sort the characters of the argument's type name: str of the
// ladder's callback holds its address, which would make nine in ten
// functions (truly) nondeterministic and the benchmark one of confirmation.
func writeSynthTree(dir string, modules, perModule int) (int, error) {
	pkg := filepath.Join(dir, "synth")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return 0, err
	}
	files := map[string]string{
		"__init__.py": "",
		"_base.py":    "def scale(v, k):\n    return v * (k % 7) if isinstance(v, (int, float)) else len(str(v)) * k\n",
	}
	nondet := 0
	for i := range modules {
		var b strings.Builder
		b.WriteString("from ._base import scale\n\n")
		for j := range perModule {
			k := i*perModule + j
			switch k % 10 {
			case 3:
				nondet++
				fmt.Fprintf(&b, "def f%d(words):\n    return list({str(w) + '%d' for w in words})\n\n", k, k)
			case 5:
				fmt.Fprintf(&b, "def f%d(a, b):\n    return scale(a, %d) + scale(b, %d)\n\n", k, k, k)
			default:
				fmt.Fprintf(&b, "def f%d(x):\n    return sorted(type(x).__name__ * (%d %% 3 + 1))\n\n", k, k)
			}
		}
		files[fmt.Sprintf("m%04d.py", i)] = b.String()
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(src), 0o644); err != nil {
			return 0, err
		}
	}
	return nondet, nil
}
