package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

//go:embed report.html.tmpl
var htmlTemplate string

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"join": strings.Join,
	"add":  func(a, b int) int { return a + b },
}).Parse(htmlTemplate))

// htmlFinding is a finding as the page shows it: its witness side by
// side, each answer with the conditions of the run that gave it.
type htmlFinding struct {
	*Function
	Where    string
	Sides    []htmlSide
	Breaker  string
	Diverged *htmlDivergence
}

// htmlDivergence is where a finding's runs parted: the line, the source
// around it in the scanned tree, and what each run held or did there.
type htmlDivergence struct {
	Where, What string
	Lines       []htmlLine
	Values      []string
}

type htmlLine struct {
	N    int
	Text string
	Here bool
}

func newHTMLDivergence(d *Divergence) *htmlDivergence {
	hd := &htmlDivergence{Where: fmt.Sprintf("%s:%d", d.File, d.Line), Values: d.Values}
	switch d.Kind {
	case "control":
		hd.What = "the runs went on at other lines"
	case "return":
		hd.What = "it returned"
	default:
		hd.What = d.Local + " was set to"
	}
	if d.Under != nil {
		hd.Where += fmt.Sprintf(" (in a library, under %s:%d)", d.Under.File, d.Under.Line)
	}
	if d.Library != nil {
		hd.Where += fmt.Sprintf(" (from %s:%d)", d.Library.File, d.Library.Line)
	}
	at := d
	if d.Outside && d.Under != nil {
		at = d.Under
	}
	if ex := at.Excerpt; ex != nil {
		for i, text := range ex.Lines {
			hd.Lines = append(hd.Lines, htmlLine{N: ex.First + i, Text: text, Here: ex.First+i == at.Line})
		}
	}
	return hd
}

type htmlSide struct {
	Run   int
	Value string
	// Pre, Mid and Post are Value cut where the two answers part: Mid is
	// what differs from the other side (marked), Pre and Post what both
	// share, so two long answers show where they differ.
	Pre, Mid, Post string
	// Moving are the conditions the finding's causes name, shown; Others
	// the rest, collapsed.
	Moving, Others []htmlCondition
}

type htmlCondition struct {
	Name, Value string
	Differs     bool
}

// htmlGroup is functions that share a verdict and a reason.
type htmlGroup struct {
	Reason string
	IDs    []string
}

type htmlData struct {
	*Report
	Total      int
	Bars       []htmlBar
	Findings   []htmlFinding
	Failing    int
	Ignored    []*Function
	Sensitive  []htmlSensitive // order-sensitive: beside the verdicts
	Moved      []*Function     // moved only by what another function left
	Looks      []htmlGroup
	NotProbed  []htmlGroup
	BadModules []Module
	// Open says whether each finding's answers are shown open: with many
	// findings they are collapsed, so the page stays a list one can read.
	Open     bool
	Packages []Package
}

// htmlSensitive is an order-sensitive function: the input, its answer,
// and its answer with every dict's keys reversed.
type htmlSensitive struct {
	ID, Input, First, Second string
}

// openFindings is how many findings a page shows open.
const openFindings = 30

// htmlBar is one verdict's bar of the census chart, laid out here.
type htmlBar struct {
	Label, Class string
	N            int
	Y            int     // top of the bar
	Width        float64 // of barWidth, by share of the functions
	CountX       float64 // where the count is written, after the bar
}

const barWidth = 340

// WriteHTML writes the report as one self-contained page: the census as
// a chart, each finding with its two answers and the conditions of both
// runs side by side, looks and functions not probed grouped by reason. It
// fetches nothing: no font, no script, no style from anywhere else.
func WriteHTML(w io.Writer, r *Report) error {
	where := r.locator()
	c := r.Census
	d := htmlData{Report: r, Total: len(r.Functions), Bars: []htmlBar{
		{Label: "nondeterministic", Class: "nondet", N: c.Nondeterministic},
		{Label: "deterministic", Class: "det", N: c.Deterministic},
		{Label: "look", Class: "look", N: c.Look},
		{Label: "not probed", Class: "notprobed", N: c.NotProbed},
	}}
	for i := range d.Bars {
		d.Bars[i].Y = 8 + 32*i
		if d.Total > 0 {
			d.Bars[i].Width = float64(barWidth*d.Bars[i].N) / float64(d.Total)
		}
		d.Bars[i].CountX = 138 + d.Bars[i].Width
	}
	findings := r.Findings()
	d.Failing, d.Open = len(r.Failing()), len(findings) <= openFindings
	d.Packages = append([]Package(nil), r.Packages...)
	sort.SliceStable(d.Packages, func(i, j int) bool {
		a, b := d.Packages[i], d.Packages[j]
		if a.Census.Nondeterministic != b.Census.Nondeterministic {
			return a.Census.Nondeterministic > b.Census.Nondeterministic
		}
		return strings.ToLower(a.Name) < strings.ToLower(b.Name)
	})
	for _, f := range findings {
		hf := htmlFinding{Function: f, Where: where(f.ID)}
		var answers []Answer
		if f.Witness != nil {
			hf.Breaker, answers = f.Witness.Breaker, f.Witness.Answers
			if d := f.Witness.DivergedAt; d != nil && len(d.Values) == 2 {
				hf.Diverged = newHTMLDivergence(d)
			}
		}
		var runs []sandbox.RunConditions
		for _, a := range answers {
			runs = append(runs, r.RunOf(f, a.Run))
			hf.Sides = append(hf.Sides, htmlSide{Run: a.Run, Value: a.Value})
		}
		for i := range hf.Sides {
			other := runs[len(runs)-1-i]
			hf.Sides[i].Moving, hf.Sides[i].Others = conditionRows(runs[i], other, f.Causes)
		}
		if len(hf.Sides) == 2 {
			a, b := &hf.Sides[0], &hf.Sides[1]
			pre, post := commonEnds(a.Value, b.Value)
			for _, sd := range []*htmlSide{a, b} {
				sd.Pre, sd.Mid, sd.Post = sd.Value[:pre], sd.Value[pre:len(sd.Value)-post], sd.Value[len(sd.Value)-post:]
			}
		}
		d.Findings = append(d.Findings, hf)
	}
	for _, f := range r.Functions {
		if f.IsSuppressed() {
			d.Ignored = append(d.Ignored, f)
		}
		if w := f.OrderSensitive; w != nil {
			hs := htmlSensitive{ID: f.ID, Input: w.Input()}
			if len(w.Answers) == 2 {
				hs.First, hs.Second = w.Answers[0].Value, w.Answers[1].Value
			}
			d.Sensitive = append(d.Sensitive, hs)
		}
	}
	for _, f := range r.Functions {
		if f.MovedBy != nil {
			d.Moved = append(d.Moved, f)
		}
	}
	d.Looks = groupByReason(r.Functions, VerdictLook)
	d.NotProbed = groupByReason(r.Functions, VerdictNotProbed)
	for _, m := range r.Modules {
		if m.Status != "ok" {
			d.BadModules = append(d.BadModules, m)
		}
	}
	return htmlPage.Execute(w, d)
}

// conditionRows lists a run's conditions, each marked when the other run
// had another value: those the causes name (moving), and the rest.
func conditionRows(rc, other sandbox.RunConditions, causes []string) (moving, others []htmlCondition) {
	for _, v := range sandbox.Varieds {
		val, o := v.Show(rc), v.Show(other)
		if val == "" && o == "" {
			continue // not varied on this runtime
		}
		row := htmlCondition{v.Label, val, val != o}
		if slices.Contains(causes, string(v.Name)) {
			moving = append(moving, row)
		} else {
			others = append(others, row)
		}
	}
	return moving, others
}

// groupByReason groups the functions with verdict by their reason, the
// largest group first.
func groupByReason(fs []*Function, verdict string) []htmlGroup {
	index := map[string]int{}
	var out []htmlGroup
	for _, f := range fs {
		if f.Verdict != verdict {
			continue
		}
		reason := f.Reason
		if i := strings.Index(reason, " ("); i > 0 {
			reason = reason[:i] // "(12 of 37 rungs)" differs from function to function
		}
		i, ok := index[reason]
		if !ok {
			i = len(out)
			index[reason] = i
			out = append(out, htmlGroup{Reason: reason})
		}
		out[i].IDs = append(out[i].IDs, f.ID)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].IDs) > len(out[j].IDs) })
	return out
}

// commonEnds is how many bytes a and b share at their start and at their
// end (not overlapping, on character boundaries).
func commonEnds(a, b string) (pre, post int) {
	n := min(len(a), len(b))
	for pre < n && a[pre] == b[pre] {
		pre++
	}
	for pre > 0 && pre < len(a) && !utf8.RuneStart(a[pre]) {
		pre--
	}
	for post < n-pre && a[len(a)-1-post] == b[len(b)-1-post] {
		post++
	}
	for post > 0 && !utf8.RuneStart(a[len(a)-post]) {
		post--
	}
	return pre, post
}
