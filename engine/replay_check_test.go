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
	loc := locales{names: []string{"C.UTF-8", secondLocale}}
	for _, isolated := range []bool{true, false} {
		for _, rc := range planRuns(7, 5, 3, loc, isolated) {
			got, err := checkRun(rc, isolated)
			if err != nil || got != rc {
				t.Errorf("isolated %v: a planned run %+v: %v, %+v", isolated, rc, err, got)
			}
		}
	}
	base := planRuns(7, 3, 0, loc, true)[1]
	bad := map[string]func(*RunConditions){
		"home":         func(r *RunConditions) { r.Home = "/../../tmp/x" },
		"home prefix":  func(r *RunConditions) { r.Home = "/home/probe/../../etc" },
		"cwd":          func(r *RunConditions) { r.Cwd = "$SCRATCH/../../tmp/x" },
		"cwd number":   func(r *RunConditions) { r.Cwd = "/tmp/work-1/.." },
		"uid/gid":      func(r *RunConditions) { r.UID, r.GID = 0, 61000 },
		"host uid":     func(r *RunConditions) { r.UID, r.GID = 1000, 1000 },
		"tz":           func(r *RunConditions) { r.TZ = ":/etc/shadow" },
		"locale":       func(r *RunConditions) { r.Locale = "../../x" },
		"hostname":     func(r *RunConditions) { r.Hostname = "host\nname" },
		"umask":        func(r *RunConditions) { r.Umask = "000" },
		"cpus":         func(r *RunConditions) { r.CPUs = "0-3;rm" },
		"clock":        func(r *RunConditions) { r.Clock = "-99999d" },
		"pid floor":    func(r *RunConditions) { r.PidFloor = 4000000 },
		"call order":   func(r *RunConditions) { r.CallOrder = "sideways" },
		"negative run": func(r *RunConditions) { r.ID = -1 },
	}
	for name, edit := range bad {
		rc := base
		edit(&rc)
		if _, err := checkRun(rc, true); err == nil || !strings.Contains(err.Error(), "which no scan gives a run") {
			t.Errorf("%s: %+v passed: %v", name, rc, err)
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
