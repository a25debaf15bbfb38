package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// pinned starts the Clock of a run whose clock starts at a fixed instant
// (pinnedEpoch, shifted by the offset after it), so that attribution runs
// started a second apart do not disagree on a clock of one-second
// resolution: the causes of a clock finding are then the same from scan to
// scan. Only attribution runs, never reported, are pinned.
const pinned = "@"

// pinnedEpoch is where a pinned clock starts: noon UTC, so a date read in
// UTC and twelve hours west of it is the same day.
const pinnedEpoch = 1893499200 // 2030-01-01 12:00:00 UTC

// clockStart is the pinned clock's start for a Clock offset ("+3d",
// "-400d", "0s"), in seconds since the epoch.
func clockStart(offset string) int64 {
	var n int64
	var unit string
	if _, err := fmt.Sscanf(offset, "%d%s", &n, &unit); err != nil {
		return pinnedEpoch
	}
	switch unit {
	case "d":
		n *= 86400
	case "h":
		n *= 3600
	case "m":
		n *= 60
	}
	return pinnedEpoch + n
}

// label names a run in job and file names: r<id>, or the purpose of an
// attribution run.
func runLabel(rc RunConditions) string {
	if rc.ID >= 0 {
		return fmt.Sprintf("r%d", rc.ID)
	}
	return strings.ReplaceAll(rc.Purpose, ":", "-")
}

func containerConditions(rc RunConditions) sandbox.Conditions {
	var umask uint32
	fmt.Sscanf(rc.Umask, "%o", &umask)
	return sandbox.Conditions{Hostname: rc.Hostname, UID: rc.UID, GID: rc.GID, Umask: umask, Home: rc.Home,
		CPUs: rc.CPUs, PidFloor: rc.PidFloor}
}

// Condition values. The timezones are reprotest's: twelve hours west of
// UTC against fourteen east (POSIX TZ strings count west as positive, and
// need no tzdata).
var (
	timezones = []string{"UTC0", "GMT+12", "GMT-14"}
	hostnames = []string{"probe-a", "probe-b", "probe-c"}
	umasks    = []string{"022", "077", "002"}
	uids      = sandbox.ProbeUIDs
	clocks    = []string{"0s", "+3d", "-400d"}
)

// faketimeLibs are where Debian and others put libfaketime, which shifts
// the clock through LD_PRELOAD.
var faketimeLibs = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/lib64/faketime/libfaketime.so.1",
}

// imageFaketime is where the probe image keeps libfaketime.
const imageFaketime = "/usr/lib/faketime/libfaketime.so.1"

func findFaketime() string {
	for _, p := range faketimeLibs {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// baseConditions are run 0's, and discovery's.
func baseConditions() RunConditions {
	return RunConditions{
		TZ: timezones[0], Locale: "C.UTF-8", CallOrder: "forward", Hostname: hostnames[0],
		UID: uids[0], GID: uids[0], Umask: umasks[0], Cwd: "/tmp/work", Home: "/home/probe", CPUs: allCPUs(),
		Clock: clocks[0], PidFloor: 20,
	}
}

// discoveryConditions are the base, with hash seed 0: parsing does not
// depend on them, and the ladder's displays must not.
func discoveryConditions() RunConditions {
	rc := baseConditions()
	rc.ID, rc.Purpose = -1, "discover"
	return rc
}

// planRuns gives every run an explicit, distinct hash seed drawn from the
// scan's seed, and varies every other condition between runs: run 0 is the
// base, each later run moves every condition away from it, and odd runs
// call the rungs in reversed order so hidden global state shows across
// processes. The extra runs after the n main ones repeat the base with a
// new hash seed each, for the functions that smell: a hash-order defect on
// a 3-key dict is missed by 3 seeds 2.8% of the time, by 6 seeds 0.013%.
func planRuns(seed uint64, n, extra int, loc locales, isolated bool) []RunConditions {
	rng := rand.New(rand.NewPCG(seed, 0x6e6f6e646574))
	used := map[uint32]bool{}
	runs := make([]RunConditions, n+extra)
	for i := range runs {
		rc := baseConditions()
		rc.ID = i
		rc.Purpose = "main"
		for {
			rc.HashSeed = rng.Uint32N(4294967294) + 1
			if !used[rc.HashSeed] {
				used[rc.HashSeed] = true
				break
			}
		}
		if i >= n {
			rc.Purpose = "hash-seed"
		} else if i > 0 {
			rc.TZ = timezones[1+(i-1)%(len(timezones)-1)]
			rc.Locale = loc.names[i%len(loc.names)]
			rc.Hostname = hostnames[i%len(hostnames)]
			rc.UID, rc.GID = uids[i%len(uids)], uids[i%len(uids)]
			rc.Umask = umasks[i%len(umasks)]
			rc.Cwd = fmt.Sprintf("/tmp/work-%d", i)
			rc.Home = fmt.Sprintf("/home/probe%d", i)
			rc.Clock = clocks[1+(i-1)%(len(clocks)-1)]
			rc.PidFloor = 20 + 7*i
			if runtime.NumCPU() > 1 {
				rc.CPUs = "0"
			}
		}
		if i%2 == 1 && i < n {
			rc.CallOrder = "reversed"
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

func allCPUs() string {
	if n := runtime.NumCPU(); n > 1 {
		return fmt.Sprintf("0-%d", n-1)
	}
	return "0"
}

// applySupport blanks in every run the conditions the runtime cannot
// apply, so neither the probes nor the report claim a variation that did
// not happen, and returns what was skipped and why.
func applySupport(runs []RunConditions, sup []sandbox.Support, faketime string) []sandbox.Support {
	var skipped []sandbox.Support
	for _, su := range sup {
		if su.Condition == sandbox.Clock && su.Applied && faketime == "" {
			su = sandbox.Support{Condition: sandbox.Clock, Reason: "libfaketime is not installed (Debian: apt-get install libfaketime)"}
		}
		if su.Applied {
			continue
		}
		skipped = append(skipped, su)
		for i := range runs {
			rc := &runs[i]
			switch su.Condition {
			case sandbox.Hostname:
				rc.Hostname = ""
			case sandbox.User:
				rc.UID, rc.GID = 0, 0
			case sandbox.CPUs:
				rc.CPUs = ""
			case sandbox.Clock:
				rc.Clock = ""
			case sandbox.Pid:
				rc.PidFloor = 0
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

// secondLocale has a decimal comma, so number formatting moves with it.
const secondLocale = "de_DE.UTF-8"

// ensureLocales finds a second locale beside C.UTF-8: one the system has,
// or one generated with localedef into the cache (a few seconds, once).
func ensureLocales(ctx context.Context, cacheDir string) locales {
	have := locales{names: []string{"C.UTF-8"}}
	if out, err := exec.CommandContext(ctx, "locale", "-a").Output(); err == nil {
		for _, l := range strings.Fields(string(out)) {
			if strings.EqualFold(l, "de_DE.utf8") || l == secondLocale {
				have.names = append(have.names, l)
				return have
			}
		}
	}
	if cacheDir == "" {
		have.note = "only C.UTF-8 exists here and no cache directory was given to generate " + secondLocale
		return have
	}
	dir := filepath.Join(cacheDir, "locale")
	if _, err := os.Stat(filepath.Join(dir, secondLocale, "LC_NUMERIC")); err == nil {
		have.names, have.dir = append(have.names, secondLocale), dir
		return have
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		have.note = "cannot make the locale cache: " + err.Error()
		return have
	}
	tmp, err := os.MkdirTemp(dir, ".gen-")
	if err != nil {
		have.note = "cannot make the locale cache: " + err.Error()
		return have
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "localedef", "-i", "de_DE", "-f", "UTF-8", filepath.Join(tmp, secondLocale))
	if out, err := cmd.CombinedOutput(); err != nil {
		have.note = fmt.Sprintf("only C.UTF-8 exists here and localedef could not generate %s (%v: %s); install the locales package", secondLocale, err, strings.TrimSpace(string(out)))
		return have
	}
	if err := os.Rename(filepath.Join(tmp, secondLocale), filepath.Join(dir, secondLocale)); err != nil && !os.IsExist(err) {
		if _, statErr := os.Stat(filepath.Join(dir, secondLocale)); statErr != nil {
			have.note = "cannot store the generated locale: " + err.Error()
			return have
		}
	}
	have.names, have.dir = append(have.names, secondLocale), dir
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
}

// shardCalls is about how many calls make a shard worth an interpreter of
// its own: an interpreter (a container) costs about as much to start as a
// few thousand trivial calls, so a small scan is not split into more starts
// than its calls pay for.
const shardCalls = 4000

// shardsFor is how many shards probes are worth: one per shardCalls of
// their calls (calls says how many each makes in one run), at least one,
// at most what the options allow.
func (s *scan) shardsFor(probes []*probe, calls func(*probe) int) int {
	total := 0
	for _, p := range probes {
		total += calls(p)
	}
	return min(s.opts.shards(), max(1, (total+shardCalls-1)/shardCalls))
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

// cpuList is a CPU set as the plan writes one (0, 0-3, 0,2-3).
var cpuList = regexp.MustCompile(`^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?){0,63}$`)

// maxReplayRuns bounds the run numbers a report may name: beyond it no
// scan plans a run, so a pid floor or folder number past it is forged.
const maxReplayRuns = 1000

// checkRun says whether rc has only the values planRuns and applySupport
// give a run, so that conditions read from a report (replay) can be
// applied as the engine's own: anything else, a folder outside the
// sandbox's scratch space or uid 0, is refused. It returns rc made ready
// for a runtime that is isolated or not (the scratch prefix of the host
// runtime's paths) and with a user that was not varied (uid 0) given the
// base run's.
func checkRun(rc RunConditions, isolated bool) (RunConditions, error) {
	bad := func(field, value string) (RunConditions, error) {
		return rc, &usageError{fmt.Sprintf("the report's run %d has %s %q, which no scan gives a run; the report was changed or is not from this tool", rc.ID, field, value)}
	}
	oneOf := func(v string, values ...string) bool { return slices.Contains(values, v) }
	switch {
	case rc.ID < 0 || rc.ID >= maxReplayRuns:
		return bad("id", fmt.Sprint(rc.ID))
	case !oneOf(rc.TZ, timezones...):
		return bad("tz", rc.TZ)
	case !oneOf(rc.Locale, "C.UTF-8", secondLocale):
		return bad("locale", rc.Locale)
	case !oneOf(rc.CallOrder, "forward", "reversed"):
		return bad("call_order", rc.CallOrder)
	case !oneOf(rc.Hostname, append([]string{""}, hostnames...)...):
		return bad("hostname", rc.Hostname)
	case rc.UID != rc.GID || (rc.UID != 0 && !slices.Contains(uids, rc.UID)):
		return bad("uid/gid", fmt.Sprintf("%d/%d", rc.UID, rc.GID))
	case !oneOf(rc.Umask, umasks...):
		return bad("umask", rc.Umask)
	case rc.CPUs != "" && !cpuList.MatchString(rc.CPUs):
		return bad("cpus", rc.CPUs)
	case !oneOf(rc.Clock, append([]string{""}, clocks...)...):
		return bad("clock_offset", rc.Clock)
	case rc.PidFloor != 0 && (rc.PidFloor < 20 || (rc.PidFloor-20)%7 != 0 || rc.PidFloor > 20+7*maxReplayRuns):
		return bad("pid_floor", fmt.Sprint(rc.PidFloor))
	}
	cwd, okCwd := numbered(rc.Cwd, "/tmp/work", "-")
	home, okHome := numbered(rc.Home, "/home/probe", "")
	if !okCwd {
		return bad("cwd", rc.Cwd)
	}
	if !okHome {
		return bad("home", rc.Home)
	}
	rc.Cwd, rc.Home = cwd, home
	if !isolated {
		rc.Cwd, rc.Home = sandbox.ScratchVar+rc.Cwd, sandbox.ScratchVar+rc.Home
	}
	if rc.UID == 0 {
		// Not varied where it was recorded; a container never runs as root.
		rc.UID, rc.GID = uids[0], uids[0]
	}
	return rc, nil
}

// numbered checks a folder of the plan's: base, or base+sep+N, under the
// scratch prefix or not; it returns the folder without the prefix.
func numbered(path, base, sep string) (string, bool) {
	path = strings.TrimPrefix(path, sandbox.ScratchVar)
	if path == base {
		return path, true
	}
	n, ok := strings.CutPrefix(path, base+sep)
	if !ok || n == "" || len(n) > 4 || strings.Trim(n, "0123456789") != "" || (len(n) > 1 && n[0] == '0') {
		return "", false
	}
	return path, true
}
