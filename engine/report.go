package engine

import (
	"path/filepath"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Verdicts and breakers, as package report names them.
const (
	VerdictNondeterministic = report.VerdictNondeterministic
	VerdictDeterministic    = report.VerdictDeterministic
	VerdictLook             = report.VerdictLook
	VerdictNotProbed        = report.VerdictNotProbed
	BreakerRepeat           = report.BreakerRepeat
	BreakerDictOrder        = report.BreakerDictOrder
	BreakerOrderFree        = report.BreakerOrderFree
)

func (s *scan) newReport(files []sourceFile, disc *discovery, loc locales) *report.Report {
	rep := &report.Report{
		Tool:           report.Tool{Name: "nondet-sandbox", Version: s.ex.opts.Version},
		Runtime:        s.ex.opts.Runtime.Name(),
		Python:         s.ex.opts.Python,
		Seed:           s.ex.opts.Seed,
		CallerHashSeed: s.ex.opts.CallerHashSeed,
		Modules:        []report.Module{},
		Targets:        []string{},
		Functions:      []*report.Function{},
		Skipped:        []sandbox.Support{},
	}
	rep.Runs = append(rep.Runs, s.runs...)
	rep.Skipped = append(rep.Skipped, s.skipped...)
	if loc.note != "" {
		rep.Skipped = append(rep.Skipped, sandbox.Support{Condition: sandbox.Locale, Reason: loc.note})
	}
	for _, f := range files {
		m := disc.modules[f.Rel]
		mod := report.Module{Path: f.Rel, Status: "unreadable", Error: "discovery did not report this file"}
		if m != nil {
			mod = report.Module{Path: f.Rel, Status: m.Status, Error: m.Error}
		}
		if base := s.ex.opts.LocationBase; base != "" {
			// Only inside the base: code scanning cannot place a file
			// outside it, and the report names no path outside it.
			if rel, err := filepath.Rel(base, f.Path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				mod.Location = filepath.ToSlash(rel)
			}
		}
		rep.Modules = append(rep.Modules, mod)
	}
	return rep
}
