package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

func TestShardsNeverMixImportRoots(t *testing.T) {
	var probes []*probe
	files := []*sourceFile{
		{Root: "/a", Name: "utils"}, {Root: "/a", Name: "main"},
		{Root: "/b", Name: "utils"}, {Root: "/b", Name: "other"},
		{Root: "/c", Name: "solo"},
	}
	for m, f := range files {
		for k := 0; k < 3; k++ {
			probes = append(probes, &probe{Index: len(probes), File: f, Module: m})
		}
	}
	shards := planShards(probes, 2) // at most 2 shards wanted, 3 roots: one more is made
	seen := 0
	for _, sh := range shards {
		root := sh.Probes[0].File.Root
		for _, p := range sh.Probes {
			if p.File.Root != root {
				t.Fatalf("shard %d mixes %s and %s", sh.ID, root, p.File.Root)
			}
			seen++
		}
	}
	if seen != len(probes) || len(shards) < 3 {
		t.Fatalf("%d probes in %d shards", seen, len(shards))
	}
	one := planShards(probes[:6], 4) // one root, two modules: split for parallelism
	if len(one) != 2 {
		t.Fatalf("one root's two modules: %d shards", len(one))
	}
}

func TestSameRelativePathUnderTwoTargets(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "util.py"), []byte("def f():\n    return 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ta, _ := ParseTarget(filepath.Join(dir, "a"))
	tb, _ := ParseTarget(filepath.Join(dir, "b"))
	files, _, _, err := findSources([]Target{ta, tb}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Rel != "a/util.py" || files[1].Rel != "b/util.py" {
		t.Fatalf("ids collide: %+v", files)
	}
}

// TestPlanVariesEveryCondition: run 1 moves every condition away from the
// base (the CPU set only where there are two), every later main run at
// least the hash seed and the clock (conditions with fewer values than runs
// come back round), the extra runs only the hash seed; without zone data no
// run is given an IANA time zone.
func TestPlanVariesEveryCondition(t *testing.T) {
	loc := locales{names: []string{"C.UTF-8", sandbox.SecondLocale}}
	for _, zones := range []bool{true, false} {
		runs := planRuns(3, 4, 2, loc, true, zones)
		for _, rc := range runs[1:] {
			for _, v := range sandbox.Varieds {
				moved := !v.Same(runs[0], rc)
				want := rc.Purpose == sandbox.PurposeMain || v.Name == sandbox.HashSeed
				cycles := rc.ID > 1 && v.Name != sandbox.HashSeed && v.Name != sandbox.Clock
				switch {
				case rc.Purpose == sandbox.PurposeMain && cycles:
				case v.Name == sandbox.CPUs && runtime.NumCPU() == 1:
				case v.Name == sandbox.CallOrder && rc.ID%2 == 0:
				case moved != want:
					t.Errorf("zones %v: run %d (%s) moved %s: %v", zones, rc.ID, rc.Purpose, v.Name, moved)
				}
			}
			if !zones && sandbox.IsIANAZone(rc.TZ) {
				t.Errorf("no zone data, yet run %d has TZ %s", rc.ID, rc.TZ)
			}
		}
		if zones && !sandbox.IsIANAZone(runs[2].TZ) {
			t.Errorf("the default three runs have no IANA zone: %s", runs[2].TZ)
		}
	}
}

// TestShardsBySize: a scan is split into no more shards than its calls pay
// an interpreter start for, and never into more than the options allow.
func TestShardsBySize(t *testing.T) {
	s := &executor{opts: Options{Jobs: 2}}
	probes := make([]*probe, 100)
	for i := range probes {
		probes[i] = &probe{}
	}
	for _, c := range []struct {
		perProbe, want int
	}{
		{1, 1},               // 100 calls: one interpreter
		{shardCalls / 50, 2}, // 2 shards' worth
		{shardCalls, 4},      // 100 shards' worth, capped at twice the jobs
	} {
		if got := s.shardsFor(probes, func(*probe) int { return c.perProbe }); got != c.want {
			t.Errorf("%d calls per probe: %d shards, want %d", c.perProbe, got, c.want)
		}
	}
	s.opts.Shards = 1
	if got := s.shardsFor(probes, func(*probe) int { return shardCalls }); got != 1 {
		t.Errorf("with Shards 1: %d shards", got)
	}
}

// TestFilterIncludeExclude: globs relative to the base; a pattern without
// a slash matches a name at any depth; an excluded folder excludes what it
// holds; include narrows first.
func TestFilterIncludeExclude(t *testing.T) {
	base := "/p"
	for _, c := range []struct {
		include, exclude []string
		path             string
		want             bool
	}{
		{nil, nil, "/p/src/a.py", true},
		{nil, []string{"tests"}, "/p/src/tests/test_a.py", false},
		{nil, []string{"test_*.py"}, "/p/src/test_a.py", false},
		{nil, []string{"test_*.py"}, "/p/src/a.py", true},
		{nil, []string{"src/vendor"}, "/p/src/vendor/x/y.py", false},
		{nil, []string{"src/vendor/"}, "/p/src/vendored.py", true},
		{[]string{"src/**/*.py"}, nil, "/p/src/a/b.py", true},
		{[]string{"src/**/*.py"}, nil, "/p/tools/b.py", false},
		{[]string{"src/**"}, []string{"**/_*.py"}, "/p/src/_private.py", false},
	} {
		f := Filter{Base: base, Include: c.include, Exclude: c.exclude}
		if got := f.keeps(c.path); got != c.want {
			t.Errorf("include %v exclude %v: %s kept %v, want %v", c.include, c.exclude, c.path, got, c.want)
		}
	}
	if err := (Filter{Exclude: []string{"src/[a"}}).check(); err == nil || !errors.Is(err, ErrUsage) {
		t.Errorf("a bad pattern: %v", err)
	}
}

// TestLocaleCacheUnwritableSaysWhatToDo: where the second locale must be
// generated and the cache cannot be made (a service account's HOME), the
// note says how to give it one.
func TestLocaleCacheUnwritableSaysWhatToDo(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	loc := ensureLocales(context.Background(), filepath.Join(file, "cache")) // under a file: mkdir fails
	if out, err := exec.Command("locale", "-a").Output(); err == nil && strings.Contains(strings.ToLower(string(out)), "de_de.utf") {
		// The system has the second locale: no cache is needed.
		if len(loc.names) != 2 || loc.note != "" {
			t.Errorf("with the system's de_DE: locales %v, note %q", loc.names, loc.note)
		}
		return
	}
	if len(loc.names) != 1 || !strings.Contains(loc.note, "XDG_CACHE_HOME") {
		t.Errorf("locales %v, note %q: want one locale and a note naming XDG_CACHE_HOME", loc.names, loc.note)
	}
}
