package report

import (
	_ "embed"
	"html/template"
	"io"
	"sort"
	"strings"

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
	Where   string
	Sides   []htmlSide
	Breaker string
}

type htmlSide struct {
	Run        int
	Value      string
	Conditions []htmlCondition
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
	Ignored    []*Function
	Looks      []htmlGroup
	NotProbed  []htmlGroup
	BadModules []Module
}

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
	for _, f := range r.Findings() {
		hf := htmlFinding{Function: f, Where: where(f.ID)}
		var answers []Answer
		if f.Witness != nil {
			hf.Breaker, answers = f.Witness.Breaker, f.Witness.Answers
		}
		var runs []sandbox.RunConditions
		for _, a := range answers {
			runs = append(runs, r.run(a.Run))
			hf.Sides = append(hf.Sides, htmlSide{Run: a.Run, Value: a.Value})
		}
		for i := range hf.Sides {
			other := runs[len(runs)-1-i]
			hf.Sides[i].Conditions = conditionRows(runs[i], other)
		}
		d.Findings = append(d.Findings, hf)
	}
	for _, f := range r.Functions {
		if f.IsSuppressed() {
			d.Ignored = append(d.Ignored, f)
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
// had another value.
func conditionRows(rc, other sandbox.RunConditions) []htmlCondition {
	var rows []htmlCondition
	for _, v := range sandbox.Varieds {
		val, o := v.Show(rc), v.Show(other)
		if val == "" && o == "" {
			continue // not varied on this runtime
		}
		rows = append(rows, htmlCondition{v.Label, val, val != o})
	}
	return rows
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
