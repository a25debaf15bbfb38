package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// label names a run in job and file names: r<id>, or the purpose of an
// attribution run.
func runLabel(rc sandbox.RunConditions) string {
	if rc.ID >= 0 {
		return fmt.Sprintf("r%d", rc.ID)
	}
	if rc.Flip != "" {
		return string(rc.Purpose) + "-" + string(rc.Flip)
	}
	return string(rc.Purpose)
}

// baseConditions are run 0's, and discovery's.
func baseConditions(loc locales, zones bool) sandbox.RunConditions {
	rc := sandbox.RunConditions{}
	p := sandbox.Planning{Run: 0, Draw: func() uint32 { return 0 }, Locales: loc.names, NumCPU: runtime.NumCPU(), Zones: zones}
	for _, v := range sandbox.Varieds {
		v.Plan(&rc, p)
	}
	return rc
}

// discoveryConditions are the base, with hash seed 0: parsing does not
// depend on them, and the ladder's displays must not.
func discoveryConditions() sandbox.RunConditions {
	rc := baseConditions(locales{names: []string{"C.UTF-8"}}, false)
	rc.ID, rc.Purpose = -1, sandbox.PurposeDiscover
	return rc
}

// zoneData says whether the host's interpreter finds the IANA time zones
// the plan may give a run (the host's /usr is bound into every sandbox).
func zoneData() bool {
	tz, _ := sandbox.VariedCondition(sandbox.Timezone)
	for _, v := range tz.Values {
		if sandbox.IsIANAZone(v) {
			if _, err := os.Stat(filepath.Join("/usr/share/zoneinfo", v)); err != nil {
				return false
			}
		}
	}
	return true
}

// planRuns gives every run an explicit, distinct hash seed drawn from the
// scan's seed, and varies every other condition between runs as
// sandbox.Varieds plans it: run 0 is the base, each later run moves every
// condition away from it, and odd runs call the rungs in reversed order so
// hidden global state shows across processes. The extra runs after the n
// main ones repeat the base with a new hash seed each, for the functions
// that smell: a hash-order defect on a 3-key dict is missed by 3 seeds
// 2.8% of the time, by 6 seeds 0.013%.
func planRuns(seed uint64, n, extra int, loc locales, isolated, zones bool) []sandbox.RunConditions {
	rng := rand.New(rand.NewPCG(seed, 0x6e6f6e646574))
	used := map[uint32]bool{}
	draw := func() uint32 {
		for {
			h := rng.Uint32N(4294967294) + 1
			if !used[h] {
				used[h] = true
				return h
			}
		}
	}
	runs := make([]sandbox.RunConditions, n+extra)
	for i := range runs {
		rc := sandbox.RunConditions{ID: i, Purpose: sandbox.PurposeMain}
		p := sandbox.Planning{Run: i, Draw: draw, Locales: loc.names, NumCPU: runtime.NumCPU(), Zones: zones}
		if i >= n {
			rc.Purpose, p.Run = sandbox.PurposeHashSeed, 0
		}
		for _, v := range sandbox.Varieds {
			v.Plan(&rc, p)
		}
		if !isolated {
			// The host runtime makes HOME and the working directory under
			// the scan's scratch directory, at the paths a container would
			// use; the report shows them relative to it ($SCRATCH) rather
			// than as a temporary path.
			rc.Cwd, rc.Home = sandbox.ScratchVar+rc.Cwd, sandbox.ScratchVar+rc.Home
		}
		runs[i] = rc
	}
	return runs
}

// applySupport blanks in every run the conditions the runtime cannot
// apply, so neither the probes nor the report claim a variation that did
// not happen, and returns what was skipped and why.
func applySupport(runs []sandbox.RunConditions, sup []sandbox.Support, faketime string) []sandbox.Support {
	var skipped []sandbox.Support
	for _, su := range sup {
		if su.Condition == sandbox.Clock && su.Applied && faketime == "" {
			su = sandbox.Support{Condition: sandbox.Clock, Reason: "libfaketime is not installed (Debian: apt-get install libfaketime)"}
		}
		if su.Applied {
			continue
		}
		skipped = append(skipped, su)
		if v, ok := sandbox.VariedCondition(su.Condition); ok {
			for i := range runs {
				v.Blank(&runs[i])
			}
		}
	}
	return skipped
}

// locales is what the runs can vary the locale between.
type locales struct {
	names []string
	dir   string // LOCPATH for generated ones, or ""
	note  string // why only one locale is used, when so
}

// ensureLocales finds a second locale beside C.UTF-8: one the system has,
// or one generated with localedef into the cache (a few seconds, once).
func ensureLocales(ctx context.Context, cacheDir string) locales {
	have := locales{names: []string{"C.UTF-8"}}
	if out, err := exec.CommandContext(ctx, "locale", "-a").Output(); err == nil {
		for _, l := range strings.Fields(string(out)) {
			// Named as SecondLocale whatever the listing's spelling (glibc
			// lists de_DE.utf8 and takes either): a report's conditions
			// are the seed's, not the machine's, so parts of a split scan
			// made on other machines still merge.
			if strings.EqualFold(l, "de_DE.utf8") || l == sandbox.SecondLocale {
				have.names = append(have.names, sandbox.SecondLocale)
				return have
			}
		}
	}
	if cacheDir == "" {
		have.note = "only C.UTF-8 exists here and no cache directory was given to generate " + sandbox.SecondLocale
		return have
	}
	dir := filepath.Join(cacheDir, "locale")
	if _, err := os.Stat(filepath.Join(dir, sandbox.SecondLocale, "LC_NUMERIC")); err == nil {
		have.names, have.dir = append(have.names, sandbox.SecondLocale), dir
		return have
	}
	// The cache is the user's (XDG_CACHE_HOME, else HOME/.cache): a HOME
	// one may not write (a service account's) needs telling where.
	const hint = " (set XDG_CACHE_HOME to a folder you may write, or install the locale: localedef -i de_DE -f UTF-8 de_DE.UTF-8)"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		have.note = "cannot make the locale cache: " + err.Error() + hint
		return have
	}
	tmp, err := os.MkdirTemp(dir, ".gen-")
	if err != nil {
		have.note = "cannot make the locale cache: " + err.Error() + hint
		return have
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "localedef", "-i", "de_DE", "-f", "UTF-8", filepath.Join(tmp, sandbox.SecondLocale))
	if out, err := cmd.CombinedOutput(); err != nil {
		have.note = fmt.Sprintf("only C.UTF-8 exists here and localedef could not generate %s (%v: %s); install the locales package", sandbox.SecondLocale, err, strings.TrimSpace(string(out)))
		return have
	}
	if err := os.Rename(filepath.Join(tmp, sandbox.SecondLocale), filepath.Join(dir, sandbox.SecondLocale)); err != nil && !os.IsExist(err) {
		if _, statErr := os.Stat(filepath.Join(dir, sandbox.SecondLocale)); statErr != nil {
			have.note = "cannot store the generated locale: " + err.Error()
			return have
		}
	}
	have.names, have.dir = append(have.names, sandbox.SecondLocale), dir
	return have
}

// shard is a set of modules one interpreter imports together.
type shard struct {
	ID     int
	Probes []*probe
	// upTo, when set, ends each probe's calls at this rung (by probe
	// index): attribution needs the witness rung and the calls before it,
	// in the run's order, and nothing after.
	upTo map[int]int
	// calls, when set, is the exact list of calls (function in Probes,
	// rung) in order: bisection replays part of a run.
	calls [][2]int
	// segments, with calls, are where each lone run in calls starts.
	segments []int
	// alone runs each function in a lone run of its own: a child of the
	// worker that imports only its module and calls only it.
	alone bool
	// trace is how many calls of each function's last rung (its upTo
	// rung) are made traced line by line: 1, or 2 for a repeat (the call
	// and its second call in one interpreter); 0 traces none.
	trace int
}

// shardCalls is about how many calls make a shard worth an interpreter of
// its own: an interpreter (a container) costs about as much to start as a
// few thousand trivial calls, so a small scan is not split into more starts
// than its calls pay for.
const shardCalls = 4000

// shardsFor is how many shards probes are worth: one per shardCalls of
// their calls (calls says how many each makes in one run), at least one,
// at most what the options allow.
func (x *executor) shardsFor(probes []*probe, calls func(*probe) int) int {
	total := 0
	for _, p := range probes {
		total += calls(p)
	}
	return min(x.opts.shards(), max(1, (total+shardCalls-1)/shardCalls))
}

// planShards packs modules into at most want shards balanced by function
// count, keeping whole modules together and never putting modules of two
// import roots into one interpreter: each root goes first on sys.path, and a
// sibling import of one root's module would find the other root's.
func planShards(probes []*probe, want int) []*shard {
	byModule := map[int][]*probe{}
	var order []int
	for _, p := range probes {
		if _, ok := byModule[p.Module]; !ok {
			order = append(order, p.Module)
		}
		byModule[p.Module] = append(byModule[p.Module], p)
	}
	if len(order) == 0 {
		return nil
	}
	n := min(len(order), max(want, 1))
	shards := make([]*shard, n)
	roots := make([]string, n)
	for i := range shards {
		shards[i] = &shard{ID: i}
	}
	sort.SliceStable(order, func(a, b int) bool { return len(byModule[order[a]]) > len(byModule[order[b]]) })
	for _, m := range order {
		ps := byModule[m]
		root := ps[0].File.Root
		best := -1
		for i, sh := range shards {
			if len(sh.Probes) > 0 && roots[i] != root {
				continue
			}
			if best < 0 || len(sh.Probes) < len(shards[best].Probes) {
				best = i
			}
		}
		if best < 0 {
			shards = append(shards, &shard{ID: len(shards)})
			roots = append(roots, root)
			best = len(shards) - 1
		}
		roots[best] = root
		shards[best].Probes = append(shards[best].Probes, ps...)
	}
	var out []*shard
	for _, sh := range shards {
		if len(sh.Probes) > 0 {
			sort.SliceStable(sh.Probes, func(a, b int) bool { return sh.Probes[a].Index < sh.Probes[b].Index })
			sh.ID = len(out)
			out = append(out, sh)
		}
	}
	return out
}

// checkRun says whether rc has only the values planRuns and applySupport
// give a run, so that conditions read from a report (replay) can be
// applied as the engine's own: anything else, a folder outside the
// sandbox's scratch space or uid 0, is refused. It returns rc made ready
// for a runtime that is isolated or not (the scratch prefix of the host
// runtime's paths) and with a user that was not varied (uid 0) given the
// base run's.
func checkRun(rc sandbox.RunConditions, isolated bool) (sandbox.RunConditions, error) {
	if rc.ID < 0 || rc.ID >= sandbox.MaxRuns {
		return rc, badRun(rc, "id", fmt.Sprint(rc.ID))
	}
	for _, v := range sandbox.Varieds {
		if !v.Valid(rc) {
			field, value := v.Recorded(rc)
			return rc, badRun(rc, field, value)
		}
	}
	rc.Cwd = strings.TrimPrefix(rc.Cwd, sandbox.ScratchVar)
	rc.Home = strings.TrimPrefix(rc.Home, sandbox.ScratchVar)
	if !isolated {
		rc.Cwd, rc.Home = sandbox.ScratchVar+rc.Cwd, sandbox.ScratchVar+rc.Home
	}
	if rc.UID == 0 {
		// Not varied where it was recorded; a container never runs as root.
		rc.UID, rc.GID = sandbox.ProbeUIDs[0], sandbox.ProbeUIDs[0]
	}
	return rc, nil
}

func badRun(rc sandbox.RunConditions, field, value string) error {
	return &usageError{fmt.Sprintf("the report's run %d has %s %q, which no scan gives a run; the report was changed or is not from this tool", rc.ID, field, value)}
}
