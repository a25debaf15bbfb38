package report

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// ErrParts says the reports given to Merge are not the parts of one split
// scan.
var ErrParts = errors.New("not the parts of one scan")

// Merge joins the reports of the parts of one split scan (run --shard
// K/N with one seed) into the report one scan of the whole would have
// written: every part's modules and functions, the census counted again,
// the calls summed. Processes are summed too: how many interpreters the
// parts started together, which depends on the split. It refuses parts of
// different scans (tool version, runtime, interpreter, seed, targets, runs
// or conditions differ), a part given twice, a missing part, a function
// in two parts, and a part that is malformed (see Validate): parts are
// read from elsewhere, and the report of the whole is rendered.
func Merge(parts []*Report) (*Report, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no report given", ErrParts)
	}
	of := 0
	seen := map[int]bool{}
	for i, p := range parts {
		if p == nil || p.Part == nil {
			return nil, fmt.Errorf("%w: report %d is not a part (it was written without --shard)", ErrParts, i+1)
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%w: report %d (part %d of %d): %w", ErrParts, i+1, p.Part.Index, p.Part.Of, err)
		}
		if of == 0 {
			of = p.Part.Of
		}
		if p.Part.Of != of {
			return nil, fmt.Errorf("%w: report %d is part %d of %d, another is of %d", ErrParts, i+1, p.Part.Index, p.Part.Of, of)
		}
		if seen[p.Part.Index] {
			return nil, fmt.Errorf("%w: part %d of %d is given twice", ErrParts, p.Part.Index, of)
		}
		if p.Partial {
			return nil, fmt.Errorf("%w: part %d of %d is partial (its scan was interrupted): run that part again", ErrParts, p.Part.Index, of)
		}
		seen[p.Part.Index] = true
	}
	// Every index seen is in 1..of, so this stops after at most
	// len(parts) + 10 steps however large a part says of is.
	var missing []string
	for k := 1; k <= of && len(missing) < 10; k++ {
		if !seen[k] {
			missing = append(missing, fmt.Sprint(k))
		}
	}
	if n := of - len(seen); n > len(missing) {
		missing = append(missing, fmt.Sprintf("and %d more", n-len(missing)))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: part %s of %d is missing", ErrParts, strings.Join(missing, ", "), of)
	}
	sorted := append([]*Report{}, parts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Part.Index < sorted[j].Part.Index })
	// A part with no module ran no sandbox: it says nothing of the runs.
	var first *Report
	for _, p := range sorted {
		if len(p.Modules) == 0 {
			continue
		}
		if first == nil {
			first = p
			continue
		}
		if what := differs(first, p); what != "" {
			return nil, fmt.Errorf("%w: part %d and part %d differ in %s (run every part with the same tool, options and --seed)", ErrParts, first.Part.Index, p.Part.Index, what)
		}
	}
	if first == nil {
		first = sorted[0]
	}
	// The whole has first's runs: a part with no module was not compared
	// with it, so its witnesses are checked against them here; and a
	// function is in one part only.
	where := map[string]int{}
	for _, p := range sorted {
		if err := checkFunctions(p.Functions, len(first.Runs)); err != nil {
			return nil, fmt.Errorf("%w: part %d of %d: %w", ErrParts, p.Part.Index, of, err)
		}
		for _, f := range p.Functions {
			if k, ok := where[f.ID]; ok {
				return nil, fmt.Errorf("%w: function %q is in part %d and in part %d", ErrParts, f.ID, k, p.Part.Index)
			}
			where[f.ID] = p.Part.Index
		}
	}
	out := *first
	out.Part, out.Modules, out.Functions, out.Processes, out.Calls, out.Measurements = nil, nil, nil, 0, 0, nil
	out.UnusedSuppressions = nil // each part's files' own
	for _, p := range sorted {
		out.UnusedSuppressions = append(out.UnusedSuppressions, p.UnusedSuppressions...)
		out.Modules = append(out.Modules, p.Modules...)
		out.Functions = append(out.Functions, p.Functions...)
		out.Processes += p.Processes
		out.Calls += p.Calls
		if p.Measurements != nil {
			if out.Measurements == nil {
				out.Measurements = &Measurements{}
			}
			out.Measurements.Workers = append(out.Measurements.Workers, p.Measurements.Workers...)
		}
	}
	if out.Modules == nil {
		out.Modules = []Module{}
	}
	if out.Functions == nil {
		out.Functions = []*Function{}
	}
	out.Packages = append([]Package{}, first.Packages...)
	out.Finish()
	return &out, nil
}

// differs names the first scan-wide field in which two parts differ.
func differs(a, b *Report) string {
	switch {
	case a.Tool != b.Tool:
		return "tool version"
	case a.Runtime != b.Runtime:
		return "runtime"
	case a.Python != b.Python:
		return "interpreter"
	case a.Seed != b.Seed:
		return "seed"
	case !reflect.DeepEqual(a.Targets, b.Targets):
		return "targets"
	case a.CallerHashSeed != b.CallerHashSeed:
		return "caller's PYTHONHASHSEED"
	case !reflect.DeepEqual(a.Runs, b.Runs):
		return "runs"
	case !reflect.DeepEqual(a.Skipped, b.Skipped):
		return "conditions not varied"
	}
	if len(a.Packages) != len(b.Packages) {
		return "packages"
	}
	for i := range a.Packages {
		pa, pb := a.Packages[i], b.Packages[i]
		if pa.Name != pb.Name || pa.Version != pb.Version || !reflect.DeepEqual(pa.Modules, pb.Modules) {
			return "packages"
		}
	}
	return ""
}
