package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

// TestEveryConditionIsOneDeclaration: each field of RunConditions but the
// run's id and purpose belongs to exactly one varied condition, each name
// is declared once, and each declaration's facets agree: what Take copies
// Same sees, what Blank clears Show no longer shows, and every value a plan
// gives is Valid and shown in the run's description.
func TestEveryConditionIsOneDeclaration(t *testing.T) {
	owner := map[uintptr]Condition{}
	names := map[Condition]bool{}
	var rc RunConditions
	base := reflect.ValueOf(&rc).Pointer()
	for _, v := range Varieds {
		if names[v.Name] {
			t.Errorf("%s is declared twice", v.Name)
		}
		names[v.Name] = true
		if v.Label == "" || v.Text == "" || v.Fields == nil || v.Plan == nil || v.Show == nil || v.Valid == nil || v.Apply == nil {
			t.Errorf("%s lacks a facet", v.Name)
			continue
		}
		if v.By == ByRuntime && (v.Seen == nil || v.Seen.Script == "" || v.Seen.Want == nil) {
			t.Errorf("%s is applied by runtimes and has no check from inside (Seen): the contract cannot hold a runtime to it", v.Name)
		}
		for _, f := range v.Fields(&rc) {
			off := reflect.ValueOf(f).Pointer() - base
			if o, ok := owner[off]; ok {
				t.Errorf("%s and %s share a field", o, v.Name)
			}
			owner[off] = v.Name
		}
	}
	typ := reflect.TypeOf(rc)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if _, ok := owner[f.Offset]; !ok && f.Name != "ID" && f.Name != "Purpose" && f.Name != "Flip" {
			t.Errorf("RunConditions.%s belongs to no varied condition", f.Name)
		}
	}

	seeds := uint32(7)
	plan := func(run int) RunConditions {
		r := RunConditions{ID: run}
		p := Planning{Run: run, Draw: func() uint32 { seeds++; return seeds }, Locales: []string{"C.UTF-8", SecondLocale}, NumCPU: 2, Zones: true}
		for _, v := range Varieds {
			v.Plan(&r, p)
		}
		return r
	}
	a, b := plan(0), plan(1)
	for _, v := range Varieds {
		for _, r := range []RunConditions{a, b, plan(7)} {
			if !v.Valid(r) {
				t.Errorf("%s: planned value %q is not valid", v.Name, v.Show(r))
			}
			if s := v.Show(r); s != v.Silent && !strings.Contains(r.Describe(), s) {
				t.Errorf("%s: %q is not in %q", v.Name, s, r.Describe())
			}
		}
		if v.Same(a, b) && v.Name != CallOrder {
			t.Errorf("%s: run 1 keeps the base's value %q", v.Name, v.Show(a))
		}
		to := a
		v.Take(&to, b)
		if !v.Same(to, b) {
			t.Errorf("%s: Take did not copy it", v.Name)
		}
		if v.By == ByRuntime {
			v.Blank(&to)
			if v.Show(to) != "" && v.Show(to) != v.Silent && v.Name != Cwd && v.Name != Home && v.Name != Umask {
				t.Errorf("%s: blanked, yet shown as %q", v.Name, v.Show(to))
			}
		}
	}
}

// TestApplyPutsEachConditionWhereItActs: the environment carries the
// engine's conditions and the clock, the job its working directory, the
// container's conditions the rest.
func TestApplyPutsEachConditionWhereItActs(t *testing.T) {
	rc := RunConditions{HashSeed: 42, TZ: "Europe/Berlin", Locale: SecondLocale, CallOrder: "reversed", Hostname: "probe-b",
		UID: 61001, GID: 61001, Umask: "077", Cwd: "/tmp/work-1", Home: "/home/probe1", CPUs: "0", Clock: PinnedClock + "+3d", PidFloor: 27}
	var j Job
	rc.Apply(&j, Applying{Faketime: "/lib/faketime.so"})
	env := strings.Join(j.Env, " ")
	for _, want := range []string{"PYTHONHASHSEED=42", "TZ=Europe/Berlin", "LC_ALL=" + SecondLocale, "HOME=/home/probe1",
		"LD_PRELOAD=/lib/faketime.so", "FAKETIME=@1893758400"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment %q lacks %s", env, want)
		}
	}
	want := Conditions{Hostname: "probe-b", UID: 61001, GID: 61001, Umask: 0o077, Home: "/home/probe1", CPUs: "0", PidFloor: 27}
	if j.Cond != want || j.Dir != "/tmp/work-1" {
		t.Errorf("job conditions %+v in %s, want %+v in /tmp/work-1", j.Cond, j.Dir, want)
	}
	j = Job{}
	rc.Clock = "+3d"
	rc.Apply(&j, Applying{})
	if strings.Contains(strings.Join(j.Env, " "), "FAKETIME") {
		t.Errorf("without libfaketime the clock was set: %v", j.Env)
	}
}
