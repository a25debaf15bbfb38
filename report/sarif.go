package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"
)

// WriteSARIF writes the findings and looks as SARIF 2.1.0, for code
// scanning in CI: a nondeterministic function is a warning at the line
// where its runs parted (its def a related location), else at its def,
// with its witness and causes in the message and the properties; a look
// is a note. Paths are relative to the folder the scan ran in when
// the scan had one target.
func WriteSARIF(w io.Writer, r *Report) error {
	report, err := sarif.New(sarif.Version210)
	if err != nil {
		return err
	}
	run := sarif.NewRunWithInformationURI(r.Tool.Name, "https://github.com/nondet-sandbox/nondet-sandbox")
	run.Tool.Driver.Version = &r.Tool.Version
	run.AddRule("nondeterministic").
		WithShortDescription(sarif.NewMultiformatMessageString("A function gave two answers to one input")).
		WithFullDescription(sarif.NewMultiformatMessageString("Fresh interpreters under varied conditions (hash seed, timezone, locale, user, clock, ...) disagreed on the canonical answer to one input: a witness, not a suspicion."))
	run.AddRule("look").
		WithShortDescription(sarif.NewMultiformatMessageString("The input ladder never reached the function's body")).
		WithFullDescription(sarif.NewMultiformatMessageString("Every rung raised, or no answer had a canonical form: the function was not judged."))
	where, locate := r.locator(), r.fileLocator()
	for _, f := range r.Functions {
		var rule, level, text string
		switch f.Verdict {
		case VerdictNondeterministic:
			rule, level, text = "nondeterministic", "warning", findingText(f)
		case VerdictLook:
			rule, level, text = "look", "note", f.ID+": "+f.Reason
		default:
			continue
		}
		uri := where(f.ID)
		def := sarif.NewPhysicalLocation().
			WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri)).
			WithRegion(sarif.NewRegion().WithStartLine(max(f.Line, 1)))
		res := run.CreateResultForRule(rule).WithLevel(level).WithMessage(sarif.NewTextMessage(text))
		if at, line := annotationAt(f, where, locate); line != max(f.Line, 1) || at != uri {
			// Where the runs parted is the result; the def, related.
			loc := sarif.NewPhysicalLocation().
				WithArtifactLocation(sarif.NewSimpleArtifactLocation(at)).
				WithRegion(sarif.NewRegion().WithStartLine(line))
			res.WithLocations([]*sarif.Location{sarif.NewLocationWithPhysicalLocation(loc)})
			res.AddRelatedLocation(sarif.NewLocationWithPhysicalLocation(def).WithId(1).
				WithMessage(sarif.NewTextMessage("the def of " + f.ID)))
		} else {
			res.WithLocations([]*sarif.Location{sarif.NewLocationWithPhysicalLocation(def)})
		}
		// Code scanning tracks a finding across commits by this: the
		// function's location and name and the rule, never its line.
		_, name := SplitID(f.ID)
		sum := sha256.Sum256([]byte(rule + "\x00" + uri + "\x00" + name))
		res.WithPartialFingerPrints(map[string]interface{}{"nondetSandboxFunction/v1": hex.EncodeToString(sum[:16])})
		if f.IsSuppressed() {
			if f.Suppressed != nil {
				res.WithSuppression([]*sarif.Suppression{sarif.NewSuppression("inSource").WithJustifcation("# nondet: ignore on the def line")})
			} else {
				res.WithSuppression([]*sarif.Suppression{sarif.NewSuppression("external").WithJustifcation("causes ignored by the configuration: " + strings.Join(f.Ignored, ", "))})
			}
		}
		props := sarif.NewPropertyBag()
		props.Add("id", f.ID)
		props.Add("causes", f.Causes)
		if f.InBaseline {
			props.Add("inBaseline", true)
		}
		if r.Baseline && f.Verdict == VerdictNondeterministic {
			res.WithBaselineState(map[bool]string{true: "unchanged", false: "new"}[f.InBaseline])
		}
		if f.Witness != nil {
			props.Add("witness", f.Witness)
		}
		res.AttachPropertyBag(props)
	}
	// What the scan could not do, for whoever reads the run: each condition
	// that was not varied and each module that could not be read.
	inv := run.AddInvocation(true)
	for _, sk := range r.Skipped {
		inv.AddToolConfigurationNotification(sarif.NewNotification().WithLevel("note").
			WithTextMessage(fmt.Sprintf("%s not varied: %s", sk.Condition, sk.Reason)))
	}
	for _, m := range r.Modules {
		if m.Status == "ok" {
			continue
		}
		uri := locate(m.Path)
		n := sarif.NewNotification().WithLevel("warning").WithTextMessage(fmt.Sprintf("%s: %s: %s", m.Path, m.Status, m.Error))
		n.AddLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri))))
		inv.AddTToolExecutionNotification(n)
	}
	if len(r.Packages) > 0 {
		props := sarif.NewPropertyBag()
		props.Add("packages", r.Packages)
		run.AttachPropertyBag(props)
	}
	report.AddRun(run)
	var buf bytes.Buffer
	if err := report.PrettyWrite(&buf); err != nil {
		return err
	}
	_, err = w.Write(dropNulls(buf.Bytes()))
	return err
}

// dropNulls removes the members whose value is null from indented JSON
// (one member per line): the SARIF library writes some optional fields
// (a suppression's status, location and guid) as null, which the 2.1.0
// schema does not allow where it wants an enum, an object or a string.
func dropNulls(indented []byte) []byte {
	lines := strings.SplitAfter(string(indented), "\n")
	var out []string
	for _, line := range lines {
		trimmed := strings.TrimRight(line, "\n")
		if nullMember.MatchString(trimmed) {
			if !strings.HasSuffix(trimmed, ",") && len(out) > 0 {
				// It was the last member: the one before it ends the object.
				prev := strings.TrimRight(out[len(out)-1], "\n")
				out[len(out)-1] = strings.TrimSuffix(prev, ",") + "\n"
			}
			continue
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, ""))
}

var nullMember = regexp.MustCompile(`^\s*"(?:[^"\\]|\\.)*": null,?$`)

// locator gives the file of a function id as code scanning and editors
// want it: from the repository root (or the working directory) the scan
// ran in, else relative to the folder of a single target.
func (r *Report) locator() func(id string) string {
	file := r.fileLocator()
	return func(id string) string {
		f, _ := SplitID(id)
		return file(f)
	}
}

// fileLocator is locator for a module's path, which is never split: a
// file may be named a::b.py.
func (r *Report) fileLocator() func(file string) string {
	prefix := sarifPrefix(r.Targets)
	located := map[string]string{}
	for _, m := range r.Modules {
		if m.Location != "" {
			located[m.Path] = m.Location
		}
	}
	return func(file string) string {
		if l, ok := located[file]; ok {
			return l
		}
		return path.Join(prefix, file)
	}
}

// sarifPrefix makes ids relative to the folder the scan ran in, when the
// scan had a single target: ids are relative to the target's folder.
func sarifPrefix(targets []string) string {
	if len(targets) != 1 {
		return ""
	}
	t, _ := SplitID(targets[0]) // FILE::function splits as an id does
	t = path.Clean(strings.ReplaceAll(t, "\\", "/"))
	if strings.HasSuffix(t, ".py") {
		t = path.Dir(t)
	}
	if t == "." || path.IsAbs(t) || strings.HasPrefix(t, "..") {
		return ""
	}
	return t
}
