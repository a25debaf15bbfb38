package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestFormatsTable: each format has one name, a writer that writes the
// synthetic report, and a place in the flag's help.
func TestFormatsTable(t *testing.T) {
	seen := map[string]bool{}
	help := FormatsHelp()
	for _, f := range Formats {
		if seen[f.Name] || f.Name == "" || f.Write == nil || !strings.HasPrefix(f.Ext, ".") {
			t.Errorf("format %+v: a name of its own, a writer and an extension", f)
		}
		seen[f.Name] = true
		if !strings.Contains(help, f.Name) {
			t.Errorf("the help %q leaves out %s", help, f.Name)
		}
		var b bytes.Buffer
		if err := f.Write(&b, synthetic(), TextOptions{}); err != nil || b.Len() == 0 {
			t.Errorf("%s: wrote %d bytes: %v", f.Name, b.Len(), err)
		}
		if g, ok := FormatNamed(f.Name); !ok || g.Name != f.Name {
			t.Errorf("FormatNamed(%q) = %+v, %v", f.Name, g, ok)
		}
	}
	if _, ok := FormatNamed("yaml"); ok {
		t.Error("a format nobody wrote is named")
	}
	if got := FormatNames(); len(got) != len(Formats) || got[0] != "text" {
		t.Errorf("names %v: text first, every format once", got)
	}
}
