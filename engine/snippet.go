package engine

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Reproduction is a shell snippet that calls a report's function on its
// witness input in a plain interpreter, once as each witness run ran it,
// to be printed after Replay has checked that the witness's input is the
// one discovery shows today (a report is untrusted: its arguments must be
// the ladder's own before they are written as code for a person to run),
// under what an environment can set: the hash seed, the time zone, the
// locale, HOME, the umask and the working directory. What only a
// container sets (hostname, uid, CPU set, clock, pid) is named in a
// comment: replay sets those. Nothing is run; the snippet is for a
// person to read and paste, and it runs the function unsandboxed.
// projectRoot, when set, says where ids are relative to (see
// Options.ProjectRoot).
func Reproduction(rep *report.Report, id, root, python string, projectRoot func(string) string) (string, error) {
	f := rep.Function(id)
	if f == nil {
		return "", &usageError{fmt.Sprintf("no function %q in the report", id)}
	}
	w := f.Replayable()
	if w == nil {
		return "", &usageError{fmt.Sprintf("%s has no witness to write as Python (its verdict is %s)", f.ID, f.Verdict)}
	}
	target, name, err := locate(rep, f.ID, root, projectRoot)
	if err != nil {
		return "", err
	}
	importRoot, module := moduleName(target.Path)
	if abs, err := filepath.Abs(importRoot); err == nil {
		importRoot = abs
	}
	imports := map[string]bool{}
	var args []string
	for _, a := range w.Args {
		expr, ok := pythonExpr(a, imports)
		if !ok {
			return "", &usageError{fmt.Sprintf("the input %s of %s is the ladder's own object and cannot be written as Python here; use replay", a, f.ID)}
		}
		args = append(args, expr)
	}
	call := name + "(" + strings.Join(args, ", ") + ")"
	class, attr, isMethod := strings.Cut(name, ".")
	imported := name
	if isMethod {
		imported = class
		switch {
		case w.Receiver != "":
			if strings.Contains(w.Receiver, ":") || strings.Contains(w.Receiver, "pos=") {
				return "", &usageError{fmt.Sprintf("the receiver %s of %s cannot be written as Python here; use replay", w.Receiver, f.ID)}
			}
			call = w.Receiver + "." + attr
			if f.Kind != "property" {
				call += "(" + strings.Join(args, ", ") + ")"
			}
		default:
			call = class + "." + attr + "(" + strings.Join(args, ", ") + ")"
		}
	}
	var code strings.Builder
	code.WriteString("import sys\n")
	for _, m := range slices.Sorted(maps.Keys(imports)) {
		code.WriteString("import " + m + "\n")
	}
	fmt.Fprintf(&code, "sys.path.insert(0, %q)\n", importRoot)
	if module == "__init__" {
		return "", &usageError{fmt.Sprintf("%s is in an __init__.py whose folder is not importable as a package; use replay", f.ID)}
	}
	fmt.Fprintf(&code, "from %s import %s\n", module, imported)
	fmt.Fprintf(&code, "print(repr(%s))\n", call)

	var out strings.Builder
	fmt.Fprintf(&out, "# %s on %s, rung %d: the call as each witness run made it, unsandboxed.\n", f.ID, oneLine(w.Input()), w.Rung)
	if w.Breaker != "" {
		fmt.Fprintf(&out, "# The two answers came from one process (%s): the snippet calls once.\n", w.Breaker)
	}
	seen := map[int]bool{}
	for _, a := range w.Answers {
		if seen[a.Run] || a.Run < 0 || a.Run >= len(rep.RunsOf(f)) {
			continue
		}
		seen[a.Run] = true
		rc, err := checkRun(rep.RunOf(f, a.Run), true)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "\n# run %d answered %s\n", rc.ID, oneLine(a.Value))
		var env, before, unset []string
		for _, v := range sandbox.Varieds {
			switch {
			case v.Shell != nil:
				e, b := v.Shell(rc, shellQuote)
				env, before = append(env, e...), append(before, b)
			case v.By == sandbox.ByRuntime:
				if shown := v.Show(rc); shown != "" {
					unset = append(unset, fmt.Sprintf(v.Text, shown))
				}
			}
		}
		if len(unset) > 0 {
			fmt.Fprintf(&out, "# not set here (a container sets them; replay does): %s\n", strings.Join(unset, ", "))
		}
		fmt.Fprintf(&out, "(%senv %s %s -c %s)\n", strings.Join(before, ""), strings.Join(env, " "), shellQuote(python), shellQuote(code.String()))
	}
	return out.String(), nil
}

var (
	typedDisplay = regexp.MustCompile(`^([A-Za-z_][\w.]*)\.([A-Za-z_]\w*):(.*)$`)
	setDisplay   = regexp.MustCompile(`^(frozenset|set)\[(.*)\]$`)
	streamPos0   = regexp.MustCompile(`^(io\.(?:BytesIO|StringIO))\((.*), pos=0\)$`)
	// What the ladder builds and no literal is: function:, class: and
	// module: names, an instance by its attributes (Point(...), ast.Name{...}).
	opaqueDisplay = regexp.MustCompile(`^[A-Za-z_][\w.]*[:({]`)
)

// pythonExpr turns an argument as a report shows it (the worker's
// display: literals, "module.Type:repr", "set[...]", streams) back into
// Python, noting the modules it needs; false for what has no such form
// (the ladder's callback, classes, modules and instances it builds).
func pythonExpr(display string, imports map[string]bool) (string, bool) {
	switch display {
	case "nan", "inf", "-inf":
		return "float(" + fmt.Sprintf("%q", display) + ")", true
	}
	if m := streamPos0.FindStringSubmatch(display); m != nil {
		imports["io"] = true
		return m[1] + "(" + m[2] + ")", true
	}
	if m := setDisplay.FindStringSubmatch(display); m != nil {
		if m[2] == "" {
			return m[1] + "()", true
		}
		if m[1] == "set" {
			return "{" + m[2] + "}", true
		}
		return "frozenset({" + m[2] + "})", true
	}
	if m := typedDisplay.FindStringSubmatch(display); m != nil {
		mod, typ, repr := m[1], m[2], m[3]
		switch {
		case strings.HasPrefix(repr, mod+"."):
		case strings.HasPrefix(repr, typ+"("):
			repr = mod + "." + repr
		default:
			return "", false
		}
		imports[strings.SplitN(mod, ".", 2)[0]] = true
		if strings.Contains(mod, ".") {
			imports[mod] = true
		}
		return repr, true
	}
	if opaqueDisplay.MatchString(display) || strings.Contains(display, " at 0x") {
		return "", false
	}
	return display, true
}

// oneLine keeps a value from a report on one comment line.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(report.TerminalSafe(s))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
