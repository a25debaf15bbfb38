package engine_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/report"
)

// cachedTree is three modules: b imports a, c stands alone; a holds a
// finding, so a reused finding must keep its witness's runs.
func cachedTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"a.py": "import random\n\ndef token(n):\n    return random.random()\n\ndef double(n):\n    return n * 2\n",
		"b.py": "from a import double\n\ndef quad(n):\n    return double(double(n))\n",
		"c.py": "def upper(s):\n    return str(s).upper()\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// cachedScan scans dir with the verdict cache in cache, with seed, and
// what the scan said beside the report.
func cachedScan(t *testing.T, dir, cache string, seed uint64, mutate func(*engine.Options)) (*report.Report, string) {
	t.Helper()
	var notes, why bytes.Buffer
	rep := scan(t, func(o *engine.Options) {
		o.VerdictCache, o.Seed, o.Notes, o.CacheLog = cache, seed, &notes, &why
		o.CacheSecret = []byte("the user's own secret, 32 bytes")
		if mutate != nil {
			mutate(o)
		}
	}, dir)
	return rep, notes.String() + why.String()
}

func verdicts(rep *report.Report) map[string]string {
	out := map[string]string{}
	for _, f := range rep.Functions {
		out[f.ID] = f.Verdict + " " + strings.Join(f.Causes, ",")
	}
	return out
}

// TestVerdictCacheReusesWhatDidNotChange: a second scan of an unchanged
// tree reuses every module and starts no probe; editing a module scans it
// and the module that imported it again; another setting scans all.
func TestVerdictCacheReusesWhatDidNotChange(t *testing.T) {
	dir, cache := cachedTree(t), filepath.Join(t.TempDir(), "cache")
	first, _ := cachedScan(t, dir, cache, 3, nil)
	if first.Cache == nil || first.Cache.Modules != 3 || first.Cache.Reused != 0 {
		t.Fatalf("first scan's cache use: %+v", first.Cache)
	}
	if v := fn(t, first, "a.py::token").Verdict; v != report.VerdictNondeterministic {
		t.Fatalf("token: %s", v)
	}
	if b, err := os.ReadFile(filepath.Join(cache, ".gitignore")); err != nil || !strings.Contains(string(b), "*") {
		t.Errorf("the cache's .gitignore: %q %v", b, err)
	}

	second, log := cachedScan(t, dir, cache, 4, nil)
	if second.Cache == nil || second.Cache.Reused != 3 {
		t.Fatalf("second scan reused %+v\n%s", second.Cache, log)
	}
	if second.Calls != 0 {
		t.Errorf("the second scan made %d calls", second.Calls)
	}
	if got, want := verdicts(second), verdicts(first); !equalMaps(got, want) {
		t.Errorf("reused verdicts %v, first %v", got, want)
	}
	tok := fn(t, second, "a.py::token")
	if tok.Cached == nil || tok.Cached.Seed != 3 || len(tok.Cached.Runs) != len(first.Runs) {
		t.Fatalf("a reused finding names its scan and runs: %+v", tok.Cached)
	}
	if err := second.Validate(); err != nil {
		t.Error(err)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, second); err != nil || !strings.Contains(text.String(), "cache: 3 of 3 modules unchanged") ||
		!strings.Contains(text.String(), "seed 3, whose verdict the cache kept") {
		t.Errorf("the text says:\n%s", text.String())
	}

	// a.py changes: a and b (which imported it) are scanned again.
	if err := os.WriteFile(filepath.Join(dir, "a.py"), []byte("import random\n\ndef token(n):\n    return random.random()\n\ndef double(n):\n    return n + n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third, log := cachedScan(t, dir, cache, 5, nil)
	if third.Cache.Reused != 1 || fn(t, third, "c.py::upper").Cached == nil || fn(t, third, "b.py::quad").Cached != nil {
		t.Fatalf("after a.py changed: %+v\n%s", third.Cache, log)
	}
	if !strings.Contains(log, "scanning b.py again: "+filepath.Join(dir, "a.py")+" changed") {
		t.Errorf("--verbose does not say why b.py was scanned again:\n%s", log)
	}

	// Another setting: nothing is reused.
	fourth, _ := cachedScan(t, dir, cache, 5, func(o *engine.Options) { o.Runs = 4 })
	if fourth.Cache.Reused != 0 {
		t.Errorf("with another --runs: %+v", fourth.Cache)
	}
	// Another version of the tool (or of its ladder, which is the
	// worker's): nothing is reused either.
	fifth, _ := cachedScan(t, dir, cache, 5, func(o *engine.Options) { o.Version = "v0.0.0-other" })
	if fifth.Cache.Reused != 0 {
		t.Errorf("with another tool version: %+v", fifth.Cache)
	}
	// Without the cache, nothing says cache.
	if rep := scan(t, nil, dir); rep.Cache != nil {
		t.Errorf("no cache asked for: %+v", rep.Cache)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestVerdictCacheIgnoresWhatItCannotTrust: an entry that is corrupt,
// forged (another module's, a verdict no scan gives), huge or another
// user's is ignored with a line and its module scanned again; a folder
// others may write is not used at all.
func TestVerdictCacheIgnoresWhatItCannotTrust(t *testing.T) {
	dir, cache := cachedTree(t), filepath.Join(t.TempDir(), "cache")
	first, _ := cachedScan(t, dir, cache, 3, nil)
	entries, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	if len(entries) != 3 {
		t.Fatalf("%d entries for 3 modules", len(entries))
	}
	entryOf := func(module string) string {
		for _, e := range entries {
			b, _ := os.ReadFile(e)
			if strings.Contains(string(b), `"path":"`+module+`"`) {
				return e
			}
		}
		t.Fatalf("no entry for %s", module)
		return ""
	}
	aEntry := entryOf("a.py")
	good, _ := os.ReadFile(aEntry)
	var forged map[string]any
	if _, body, _ := bytes.Cut(good, []byte("\n")); json.Unmarshal(body, &forged) != nil {
		t.Fatal("an entry is a seal line and JSON")
	}
	for _, f := range forged["functions"].([]any) {
		f.(map[string]any)["verdict"] = "trusted"
	}
	forgedJSON, _ := json.Marshal(forged)
	cases := []struct {
		name, want string
		set        func() error
	}{
		{"corrupt", "it was not written by a scan of yours", func() error { return os.WriteFile(aEntry, []byte("{not json"), 0o644) }},
		{"forged", "it was not written by a scan of yours", func() error { return os.WriteFile(aEntry, forgedJSON, 0o644) }},
		{"resealed", "it was not written by a scan of yours", func() error {
			seal, _, _ := bytes.Cut(good, []byte("\n"))
			return os.WriteFile(aEntry, append(append(seal, '\n'), forgedJSON...), 0o644)
		}},
		{"another module's", "its key is another module's", func() error {
			b, _ := os.ReadFile(entryOf("c.py"))
			return os.WriteFile(aEntry, b, 0o644)
		}},
		{"huge", "larger than 32 MiB", func() error {
			if err := os.WriteFile(aEntry, good, 0o644); err != nil {
				return err
			}
			return os.Truncate(aEntry, 40<<20)
		}},
		{"a link", "ignoring the verdict cache's entry", func() error {
			os.Remove(aEntry)
			return os.Symlink(entryOf("c.py"), aEntry)
		}},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name, want string
			set        func() error
		}{"another user's", "it belongs to uid 12345", func() error {
			if err := os.WriteFile(aEntry, good, 0o644); err != nil {
				return err
			}
			return os.Chown(aEntry, 12345, 12345)
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(aEntry)
			if err := c.set(); err != nil {
				t.Fatal(err)
			}
			rep, log := cachedScan(t, dir, cache, 4, nil)
			if !strings.Contains(log, c.want) || !strings.Contains(log, "scanning it again") {
				t.Errorf("not said (%q):\n%s", c.want, log)
			}
			if tok := fn(t, rep, "a.py::token"); tok.Cached != nil || tok.Verdict != report.VerdictNondeterministic {
				t.Errorf("a.py was not scanned again: %+v", tok)
			}
			if rep.Cache.Reused != 2 {
				t.Errorf("reused %+v", rep.Cache)
			}
		})
	}
	_ = first
	// A folder others may write is not read.
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	rep, log := cachedScan(t, dir, cache, 4, nil)
	if rep.Cache != nil || !strings.Contains(log, "not using the verdict cache "+cache+": others may write it") {
		t.Errorf("a world-writable cache: %+v\n%s", rep.Cache, log)
	}
	testenv.Integration(t)
}
