package report

import (
	"io"
	"strings"
)

// Format is one way to write a report: its name (the value of a
// command's --format), what it is for, the extension its files take,
// and its writer. Text options reach the writers that read them.
type Format struct {
	Name  string
	Help  string // a few words, shown after the name in the flag's help
	Ext   string
	Write func(w io.Writer, r *Report, text TextOptions) error
}

// Formats are every format a report is written in, the default first.
var Formats = []Format{
	{Name: "text", Ext: ".txt", Write: WriteTextWith},
	{Name: "concise", Help: "one line per finding", Ext: ".txt", Write: WriteConcise},
	{Name: "json", Help: "everything; merge and render read it", Ext: ".json",
		Write: func(w io.Writer, r *Report, _ TextOptions) error { return WriteJSON(w, r) }},
	{Name: "sarif", Help: "code scanning", Ext: ".sarif",
		Write: func(w io.Writer, r *Report, _ TextOptions) error { return WriteSARIF(w, r) }},
	{Name: "github", Help: "workflow annotations", Ext: ".txt", Write: WriteGitHub},
	{Name: "junit", Help: "test reports", Ext: ".xml",
		Write: func(w io.Writer, r *Report, _ TextOptions) error { return WriteJUnit(w, r) }},
	{Name: "html", Help: "one self-contained page", Ext: ".html",
		Write: func(w io.Writer, r *Report, _ TextOptions) error { return WriteHTML(w, r) }},
}

// FormatNamed is the format of that name.
func FormatNamed(name string) (Format, bool) {
	for _, f := range Formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// FormatNames are the formats' names, the default first.
func FormatNames() []string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = f.Name
	}
	return names
}

// FormatsHelp is the formats as a flag's help lists them: "text, concise
// (one line per finding), ... or html (one self-contained page)".
func FormatsHelp() string {
	var parts []string
	for _, f := range Formats {
		p := f.Name
		if f.Help != "" {
			p += " (" + f.Help + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
