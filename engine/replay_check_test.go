package engine

import (
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// TestCheckRunTakesOnlyThePlansForms: every run a plan makes passes as it
// is, on isolated runtimes and the host's; a value no plan makes (a
// folder outside the scratch space, uid 0 beside another gid, a host uid,
// a TZ naming a file, a pid floor that would fork for ever) is refused;
// a user that was not varied (0) runs as the base probe user.
func TestCheckRunTakesOnlyThePlansForms(t *testing.T) {
	loc := locales{names: []string{"C.UTF-8", sandbox.SecondLocale}}
	for _, isolated := range []bool{true, false} {
		for _, rc := range planRuns(7, 5, 3, loc, isolated, true) {
			got, err := checkRun(rc, isolated)
			if err != nil || got != rc {
				t.Errorf("isolated %v: a planned run %+v: %v, %+v", isolated, rc, err, got)
			}
		}
	}
	base := planRuns(7, 3, 0, loc, true, true)[1]
	// Each is refused naming the report's field, as the report spells it.
	for field, edit := range map[string]func(*sandbox.RunConditions){
		"home":         func(r *sandbox.RunConditions) { r.Home = "/../../tmp/x" },
		"home ":        func(r *sandbox.RunConditions) { r.Home = "/home/probe/../../etc" },
		"cwd":          func(r *sandbox.RunConditions) { r.Cwd = "$SCRATCH/../../tmp/x" },
		"cwd ":         func(r *sandbox.RunConditions) { r.Cwd = "/tmp/work-1/.." },
		"uid/gid":      func(r *sandbox.RunConditions) { r.UID, r.GID = 0, 61000 },
		"uid/gid ":     func(r *sandbox.RunConditions) { r.UID, r.GID = 1000, 1000 },
		"tz":           func(r *sandbox.RunConditions) { r.TZ = ":/etc/shadow" },
		"locale":       func(r *sandbox.RunConditions) { r.Locale = "../../x" },
		"hostname":     func(r *sandbox.RunConditions) { r.Hostname = "host\nname" },
		"umask":        func(r *sandbox.RunConditions) { r.Umask = "000" },
		"cpus":         func(r *sandbox.RunConditions) { r.CPUs = "0-3;rm" },
		"clock_offset": func(r *sandbox.RunConditions) { r.Clock = "-99999d" },
		"pid_floor":    func(r *sandbox.RunConditions) { r.PidFloor = 4000000 },
		"call_order":   func(r *sandbox.RunConditions) { r.CallOrder = "sideways" },
		"id":           func(r *sandbox.RunConditions) { r.ID = -1 },
	} {
		rc := base
		edit(&rc)
		want := "has " + strings.TrimSpace(field) + " "
		if _, err := checkRun(rc, true); err == nil || !strings.Contains(err.Error(), "which no scan gives a run") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %+v: want a refusal saying %q, got %v", field, rc, want, err)
		}
	}
	rc := base
	rc.UID, rc.GID = 0, 0
	got, err := checkRun(rc, true)
	if err != nil || got.UID != sandbox.ProbeUIDs[0] || got.GID != sandbox.ProbeUIDs[0] {
		t.Errorf("a user not varied: %+v, %v", got, err)
	}
	got, err = checkRun(base, false)
	if err != nil || got.Home != sandbox.ScratchVar+base.Home || got.Cwd != sandbox.ScratchVar+base.Cwd {
		t.Errorf("an isolated run on the host: %+v, %v", got, err)
	}
}

// TestCheckIDStaysInTheTree: an id read from a report names a .py file
// inside its target and a function name, or it is refused.
func TestCheckIDStaysInTheTree(t *testing.T) {
	for id, ok := range map[string]bool{
		"known.py::f":                         true,
		"pkg/sub/mod.py::f_2":                 true,
		"a::b.py::f":                          true,
		"../../..tmp/x/settings.py::password": false,
		"../settings.py::password":            false,
		"/etc/x.py::f":                        false,
		"pkg/../../x.py::f":                   false,
		"pkg//x.py::f":                        false,
		"x.txt::f":                            false,
		"x.py::f.__globals__":                 false,
		"x.py::Token.issue":                   true,
		"x.py::Token.issue.more":              false,
		"x.py::.issue":                        false,
		"x.py::":                              false,
		"x.py":                                false,
		"pkg\\..\\x.py::f":                    false,
		"./x.py::f":                           false,
	} {
		_, _, err := checkID(id)
		if (err == nil) != ok {
			t.Errorf("%q: %v", id, err)
		}
	}
}
