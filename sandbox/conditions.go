package sandbox

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Condition names one varied condition, as reports and causes name it.
type Condition string

// The varied conditions' names; Varied lists them in the one order
// everything shows them in.
const (
	HashSeed  Condition = "hash-seed"
	Timezone  Condition = "timezone"
	Locale    Condition = "locale"
	Hostname  Condition = "hostname"
	User      Condition = "user"
	Umask     Condition = "umask"
	Cwd       Condition = "cwd"
	Home      Condition = "home"
	CPUs      Condition = "cpus"
	Clock     Condition = "clock"
	Pid       Condition = "pid"
	CallOrder Condition = "call-order"
)

// RunConditions are one run's value of every varied condition: explicit,
// written into the report, and reproduced from the scan's seed.
type RunConditions struct {
	ID        int    `json:"id"`
	HashSeed  uint32 `json:"hash_seed"`
	TZ        string `json:"tz"`
	Locale    string `json:"locale"`
	CallOrder string `json:"call_order"` // "forward" or "reversed"
	Hostname  string `json:"hostname"`
	UID       int    `json:"uid"`
	GID       int    `json:"gid"`
	Umask     string `json:"umask"`
	Cwd       string `json:"cwd"`
	Home      string `json:"home"`
	CPUs      string `json:"cpus"`
	Clock     string `json:"clock_offset"`
	PidFloor  int    `json:"pid_floor,omitempty"` // the interpreter's pid is a little above this
	// Purpose is what the run is for: a report's runs are PurposeMain or
	// PurposeHashSeed; the others are the engine's lone runs.
	Purpose Purpose `json:"purpose"`
	// Flip is, for an attribution run that flips one condition to the
	// other run's (PurposeFlip), that condition.
	Flip Condition `json:"flip,omitempty"`
}

// Purpose is what a run is for.
type Purpose string

const (
	PurposeMain     Purpose = "main"      // the runs every function gets
	PurposeHashSeed Purpose = "hash-seed" // the extra runs of functions that smell: base conditions, a new seed
	PurposeDiscover Purpose = "discover"
	PurposeConfirm  Purpose = "confirm"
	PurposeBisect   Purpose = "bisect"
	PurposeDiverge  Purpose = "diverge"
	PurposeReplay   Purpose = "replay"
	// Attribution: the base run's conditions, again as controls, all of
	// the other run's, and one condition flipped to the other run's.
	PurposeBase    Purpose = "attribute-base"
	PurposeControl Purpose = "attribute-control"
	PurposeAll     Purpose = "attribute-all"
	PurposeFlip    Purpose = "attribute-flip"
)

// Applier says who varies a condition.
type Applier int

const (
	// ByEngine: the engine, on every runtime (the environment it builds, the
	// order of the calls it plans).
	ByEngine Applier = iota
	// ByRuntime: the runtime, which applies it to the job's process or says
	// in Applies why it cannot.
	ByRuntime
)

// Planning is what a run's planned values depend on besides its number.
type Planning struct {
	Run     int           // 0 is the base run: every later one moves every condition away from it
	Draw    func() uint32 // a hash seed, distinct for each run, drawn from the scan's seed
	Locales []string      // the locales this machine has, C.UTF-8 first
	NumCPU  int
	// Zones says whether the probes' interpreter finds IANA zone data
	// (/usr/share/zoneinfo); without it an IANA name is UTC, so none is
	// planned.
	Zones bool
}

// faketimeLibs are where Debian and others put libfaketime, which shifts
// the clock through LD_PRELOAD.
var faketimeLibs = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/lib64/faketime/libfaketime.so.1",
}

// imageFaketime is where the probe image keeps libfaketime, on every
// architecture (images/probe/Dockerfile).
const imageFaketime = "/usr/lib/faketime/libfaketime.so.1"

// Faketime is libfaketime's path as a probe sees it: the image's for a
// runtime whose probes run in its image, else the host's, or "" when the
// host has none (the clock is then not shifted).
func Faketime(inImage bool) string {
	if inImage {
		return imageFaketime
	}
	for _, p := range faketimeLibs {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Applying is what applying a run's conditions to a job depends on.
type Applying struct {
	// Faketime is libfaketime's path inside the sandbox, or "": the clock
	// is then not shifted.
	Faketime string
}

// Varied is one varied condition: its name, values, how it is planned,
// applied, checked, shown and attributed. Every consumer (the planner,
// the job builder, the runtimes' Applies, attribution, replay's checks,
// every renderer) reads these declarations; a new condition is a new
// entry here, the runtimes that apply it, and a fixture.
type Varied struct {
	Name Condition
	// Label names it in a table of conditions (the HTML report, doctor).
	Label string
	By    Applier
	// Values are the values a plan gives it, the base's first; empty when
	// they are drawn (hash seed) or numbered (cwd, home, pid).
	Values []string
	// Text shows a value in a sentence: a format with one %s. Empty
	// values are not shown.
	Text string
	// Fields are its fields in RunConditions, as pointers: attribution
	// takes and compares them, a runtime that cannot apply it blanks them.
	Fields func(*RunConditions) []any
	// Plan sets its value for one run.
	Plan func(*RunConditions, Planning)
	// Show is its value as text, "" when a run has none.
	Show func(RunConditions) string
	// Silent is a value a sentence leaves out (the unshifted clock).
	Silent string
	// Valid says whether a run's value is one a plan gives (replay reads
	// conditions from a report, which anyone could have written). A value
	// blanked because the runtime could not apply it is valid.
	Valid func(RunConditions) bool
	// Apply puts its value into the job: the environment, the working
	// directory, the container's conditions.
	Apply func(RunConditions, *Job, Applying)
	// Shell sets it for a command a person runs in a shell (replay's
	// snippet): variables for env, and a command to run before it (umask,
	// cd), each value through quote; nil where only a container can set
	// it (a runtime-applied condition without one is named, not set).
	Shell func(r RunConditions, quote func(string) string) (env []string, before string)
	// Seen reads it from inside a job, for a condition a runtime applies:
	// the contract suite runs it on every runtime that says it applies
	// the condition, so one that claims it without applying it fails.
	Seen *Seen
}

// Seen is how a job sees a condition's value from inside: a shell
// command that prints it, and whether what it printed is a run's value.
type Seen struct {
	Script string
	Want   func(r RunConditions, out string) bool
}

// PinnedClock starts the Clock of a run whose clock starts at a fixed
// instant (PinnedEpoch, shifted by the offset after it): attribution runs
// started a second apart then agree on a clock of one-second resolution.
const PinnedClock = "@"

// PinnedEpoch is where a pinned clock starts: noon UTC, so a date read in
// UTC and twelve hours west of it is the same day.
const PinnedEpoch = 1893499200 // 2030-01-01 12:00:00 UTC

// The planned values. The POSIX time zones are reprotest's, twelve hours
// west of UTC against fourteen east (POSIX counts west as positive), and
// need no zone data; the IANA names are what a local-zone library reads
// (it ignores a POSIX string): Pacific/Auckland, twelve or thirteen hours
// east since before the epoch, puts the default three runs' dates a day
// apart. (Pacific/Kiritimati, fourteen east today, was ten hours west
// until 1995: the epoch's year there is 1969.)
var (
	ianaZones = []string{"Pacific/Auckland", "America/New_York", "Europe/Berlin"}
	zones     = []string{"UTC0", "GMT+12", "Pacific/Auckland", "America/New_York", "GMT-14", "Europe/Berlin"}
	locales   = []string{"C.UTF-8", "de_DE.UTF-8"}
	hostnames = []string{"probe-a", "probe-b", "probe-c"}
	umasks    = []string{"022", "077", "002"}
	clocks    = []string{"0s", "+3d", "-400d"}
	orders    = []string{"forward", "reversed"}
)

// SecondLocale is the locale the runs vary to: it has a decimal comma, so
// number formatting moves with it.
const SecondLocale = "de_DE.UTF-8"

// IsIANAZone says whether a planned time zone needs zone data.
func IsIANAZone(tz string) bool { return slices.Contains(ianaZones, tz) }

// ProbeUIDs are the uids a run may take: far from any real user's, so that
// where there is no user namespace (Docker by default) a probe owns nothing
// of the host's and reads only what anyone may.
var ProbeUIDs = []int{61000, 61001, 61002}

// Varieds is every varied condition, in the order reports show them.
var Varieds = []Varied{
	{
		Name: HashSeed, Label: "hash seed", By: ByEngine, Text: "hash seed %s",
		Fields: func(r *RunConditions) []any { return []any{&r.HashSeed} },
		Plan:   func(r *RunConditions, p Planning) { r.HashSeed = p.Draw() },
		Show:   func(r RunConditions) string { return strconv.FormatUint(uint64(r.HashSeed), 10) },
		Valid:  func(RunConditions) bool { return true },
		Apply: func(r RunConditions, j *Job, _ Applying) {
			j.Env = append(j.Env, "PYTHONHASHSEED="+strconv.FormatUint(uint64(r.HashSeed), 10))
		},
		Shell: func(r RunConditions, _ func(string) string) ([]string, string) {
			return []string{"PYTHONHASHSEED=" + strconv.FormatUint(uint64(r.HashSeed), 10)}, ""
		},
	},
	{
		Name: Timezone, Label: "timezone", By: ByEngine, Values: zones, Text: "TZ=%s",
		Fields: func(r *RunConditions) []any { return []any{&r.TZ} },
		Plan: func(r *RunConditions, p Planning) {
			var varied []string
			for _, z := range zones[1:] {
				if p.Zones || !IsIANAZone(z) {
					varied = append(varied, z)
				}
			}
			r.TZ = later(zones[0], varied, p.Run)
		},
		Show:  func(r RunConditions) string { return r.TZ },
		Valid: func(r RunConditions) bool { return slices.Contains(zones, r.TZ) },
		Apply: func(r RunConditions, j *Job, _ Applying) { j.Env = append(j.Env, "TZ="+r.TZ) },
		Shell: func(r RunConditions, quote func(string) string) ([]string, string) {
			return nonEmpty("TZ=", r.TZ, quote), ""
		},
	},
	{
		Name: Locale, Label: "locale", By: ByEngine, Values: locales, Text: "locale %s",
		Fields: func(r *RunConditions) []any { return []any{&r.Locale} },
		Plan:   func(r *RunConditions, p Planning) { r.Locale = p.Locales[p.Run%len(p.Locales)] },
		Show:   func(r RunConditions) string { return r.Locale },
		Valid:  func(r RunConditions) bool { return slices.Contains(locales, r.Locale) || r.Locale == "de_DE.utf8" },
		Apply: func(r RunConditions, j *Job, _ Applying) {
			j.Env = append(j.Env, "LC_ALL="+r.Locale, "LANG="+r.Locale)
		},
		Shell: func(r RunConditions, quote func(string) string) ([]string, string) {
			return nonEmpty("LC_ALL=", r.Locale, quote), ""
		},
	},
	{
		Name: Hostname, Label: "hostname", By: ByRuntime, Values: hostnames, Text: "hostname %s",
		Fields: func(r *RunConditions) []any { return []any{&r.Hostname} },
		Plan:   func(r *RunConditions, p Planning) { r.Hostname = hostnames[p.Run%len(hostnames)] },
		Show:   func(r RunConditions) string { return r.Hostname },
		Valid:  func(r RunConditions) bool { return r.Hostname == "" || slices.Contains(hostnames, r.Hostname) },
		Apply:  func(r RunConditions, j *Job, _ Applying) { j.Cond.Hostname = r.Hostname },
		Seen:   &Seen{"cat /proc/sys/kernel/hostname", func(r RunConditions, out string) bool { return out == r.Hostname }},
	},
	{
		Name: User, Label: "user", By: ByRuntime, Text: "uid %s",
		Fields: func(r *RunConditions) []any { return []any{&r.UID, &r.GID} },
		Plan: func(r *RunConditions, p Planning) {
			r.UID = ProbeUIDs[p.Run%len(ProbeUIDs)]
			r.GID = r.UID
		},
		Show: func(r RunConditions) string {
			if r.UID == 0 {
				return ""
			}
			return strconv.Itoa(r.UID)
		},
		Valid: func(r RunConditions) bool {
			return r.UID == r.GID && (r.UID == 0 || slices.Contains(ProbeUIDs, r.UID))
		},
		Apply: func(r RunConditions, j *Job, _ Applying) { j.Cond.UID, j.Cond.GID = r.UID, r.GID },
		Seen:  &Seen{"echo $(id -u) $(id -g)", func(r RunConditions, out string) bool { return out == fmt.Sprintf("%d %d", r.UID, r.GID) }},
	},
	{
		Name: Umask, Label: "umask", By: ByRuntime, Values: umasks, Text: "umask %s",
		Fields: func(r *RunConditions) []any { return []any{&r.Umask} },
		Plan:   func(r *RunConditions, p Planning) { r.Umask = umasks[p.Run%len(umasks)] },
		Show:   func(r RunConditions) string { return r.Umask },
		Valid:  func(r RunConditions) bool { return slices.Contains(umasks, r.Umask) },
		Apply: func(r RunConditions, j *Job, _ Applying) {
			m, _ := strconv.ParseUint(r.Umask, 8, 32)
			j.Cond.Umask = uint32(m)
		},
		Shell: func(r RunConditions, _ func(string) string) ([]string, string) {
			if r.Umask == "" {
				return nil, ""
			}
			return nil, "umask " + r.Umask + " && "
		},
		Seen: &Seen{"umask", func(r RunConditions, out string) bool {
			a, errA := strconv.ParseUint(out, 8, 32)
			b, errB := strconv.ParseUint(r.Umask, 8, 32)
			return errA == nil && errB == nil && a == b
		}},
	},
	{
		Name: Cwd, Label: "cwd", By: ByRuntime, Text: "cwd %s",
		Fields: func(r *RunConditions) []any { return []any{&r.Cwd} },
		Plan:   func(r *RunConditions, p Planning) { r.Cwd = numbered("/tmp/work", "-", p.Run) },
		Show:   func(r RunConditions) string { return r.Cwd },
		Valid:  func(r RunConditions) bool { return isNumbered(r.Cwd, "/tmp/work", "-") },
		Apply:  func(r RunConditions, j *Job, _ Applying) { j.Dir = r.Cwd },
		Shell: func(r RunConditions, quote func(string) string) ([]string, string) {
			if r.Cwd == "" {
				return nil, ""
			}
			return nil, "mkdir -p " + quote(r.Cwd) + " && cd " + quote(r.Cwd) + " && "
		},
		// The host runtime puts a run's folders under its scratch space.
		Seen: &Seen{"pwd", func(r RunConditions, out string) bool {
			return strings.HasSuffix(out, strings.TrimPrefix(r.Cwd, ScratchVar))
		}},
	},
	{
		Name: Home, Label: "home", By: ByRuntime, Text: "home %s",
		Fields: func(r *RunConditions) []any { return []any{&r.Home} },
		Plan:   func(r *RunConditions, p Planning) { r.Home = numbered("/home/probe", "", p.Run) },
		Show:   func(r RunConditions) string { return r.Home },
		Valid:  func(r RunConditions) bool { return isNumbered(r.Home, "/home/probe", "") },
		Apply: func(r RunConditions, j *Job, _ Applying) {
			j.Env = append(j.Env, "HOME="+r.Home)
			j.Cond.Home = r.Home
		},
		Shell: func(r RunConditions, quote func(string) string) ([]string, string) {
			return nonEmpty("HOME=", r.Home, quote), ""
		},
		Seen: &Seen{`echo "$HOME"; test -d "$HOME" && test -w "$HOME" && echo writable`, func(r RunConditions, out string) bool {
			home, w, _ := strings.Cut(out, "\n")
			return strings.HasSuffix(home, strings.TrimPrefix(r.Home, ScratchVar)) && w == "writable"
		}},
	},
	{
		Name: CPUs, Label: "cpus", By: ByRuntime, Text: "cpus %s",
		Fields: func(r *RunConditions) []any { return []any{&r.CPUs} },
		Plan: func(r *RunConditions, p Planning) {
			switch {
			case p.NumCPU <= 1:
				r.CPUs = "0"
			case p.Run == 0:
				r.CPUs = fmt.Sprintf("0-%d", p.NumCPU-1)
			default:
				r.CPUs = "0"
			}
		},
		Show:  func(r RunConditions) string { return r.CPUs },
		Valid: func(r RunConditions) bool { return r.CPUs == "" || cpuList.MatchString(r.CPUs) },
		Apply: func(r RunConditions, j *Job, _ Applying) { j.Cond.CPUs = r.CPUs },
		// gVisor's /proc/self/status has no Cpus_allowed_list: there the
		// check cannot tell, and says nothing.
		Seen: &Seen{`sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status`, func(r RunConditions, out string) bool {
			return r.CPUs == "" || out == r.CPUs || out == ""
		}},
	},
	{
		Name: Clock, Label: "clock", By: ByRuntime, Values: clocks, Text: "clock %s",
		Fields: func(r *RunConditions) []any { return []any{&r.Clock} },
		Plan:   func(r *RunConditions, p Planning) { r.Clock = later(clocks[0], clocks[1:], p.Run) },
		Show:   func(r RunConditions) string { return r.Clock },
		Silent: clocks[0],
		Valid:  func(r RunConditions) bool { return r.Clock == "" || slices.Contains(clocks, r.Clock) },
		// libfaketime shifts the clock through LD_PRELOAD; a pinned clock
		// starts at one instant in every run. FAKE_UTIME=1 keeps "now" in
		// utime(path) the kernel's: left off, libfaketime writes the fake
		// time explicitly, which only a file's owner may, and touching a
		// file one may write but does not own raises PermissionError under
		// a shifted clock alone.
		Apply: func(r RunConditions, j *Job, a Applying) {
			switch {
			case r.Clock == "" || a.Faketime == "":
			case strings.HasPrefix(r.Clock, PinnedClock):
				start := PinnedEpoch + offsetSeconds(strings.TrimPrefix(r.Clock, PinnedClock))
				j.Env = append(j.Env, "LD_PRELOAD="+a.Faketime, "FAKE_UTIME=1", "FAKETIME_FMT=%s", fmt.Sprintf("FAKETIME=@%d", start))
			case r.Clock != clocks[0]:
				j.Env = append(j.Env, "LD_PRELOAD="+a.Faketime, "FAKE_UTIME=1", "FAKETIME="+r.Clock)
			}
		},
		// The clock's offset is days: an hour either way tells it from
		// the kernel's, on however busy a machine.
		Seen: &Seen{"date +%s", func(r RunConditions, out string) bool {
			got, err := strconv.ParseInt(out, 10, 64)
			if err != nil {
				return false
			}
			want := time.Now().Unix()
			switch {
			case strings.HasPrefix(r.Clock, PinnedClock):
				want = PinnedEpoch + offsetSeconds(strings.TrimPrefix(r.Clock, PinnedClock))
			case r.Clock != "":
				want += offsetSeconds(r.Clock)
			}
			return got > want-3600 && got < want+3600
		}},
	},
	{
		Name: Pid, Label: "pid floor", By: ByRuntime, Text: "pid above %s",
		Fields: func(r *RunConditions) []any { return []any{&r.PidFloor} },
		Plan:   func(r *RunConditions, p Planning) { r.PidFloor = 20 + 7*p.Run },
		Show: func(r RunConditions) string {
			if r.PidFloor == 0 {
				return ""
			}
			return strconv.Itoa(r.PidFloor)
		},
		Valid: func(r RunConditions) bool {
			f := r.PidFloor
			return f == 0 || (f >= 20 && (f-20)%7 == 0 && f <= 20+7*MaxRuns)
		},
		Apply: func(r RunConditions, j *Job, _ Applying) { j.Cond.PidFloor = r.PidFloor },
		Seen: &Seen{"echo $$", func(r RunConditions, out string) bool {
			pid, err := strconv.Atoi(out)
			return err == nil && pid > r.PidFloor
		}},
	},
	{
		Name: CallOrder, Label: "call order", By: ByEngine, Values: orders, Text: "%s order",
		Fields: func(r *RunConditions) []any { return []any{&r.CallOrder} },
		// Odd runs call each module's rungs reversed, so hidden global
		// state shows across processes; the engine orders the calls.
		Plan:  func(r *RunConditions, p Planning) { r.CallOrder = orders[p.Run%2] },
		Show:  func(r RunConditions) string { return r.CallOrder },
		Valid: func(r RunConditions) bool { return slices.Contains(orders, r.CallOrder) },
		Apply: func(RunConditions, *Job, Applying) {},
	},
}

// MaxRuns bounds the runs a plan may number: beyond it no scan plans a
// run, so a report naming a pid floor or folder number past it is forged.
const MaxRuns = 1000

// Applied lists the conditions by applies, in order.
func Applied(by Applier) []Condition {
	var out []Condition
	for _, v := range Varieds {
		if v.By == by {
			out = append(out, v.Name)
		}
	}
	return out
}

// AppliesAll says a runtime applies each of cs: what its Applies lists. A
// condition a runtime does not list is not applied (Supported).
func AppliesAll(cs ...Condition) []Support {
	out := make([]Support, len(cs))
	for i, c := range cs {
		out[i] = Support{Condition: c, Applied: true}
	}
	return out
}

// Supported is every runtime-applied condition as rt supports it: what
// its Applies says, and each condition it does not name, not applied. So
// a condition added to the table is applied by no runtime until one says
// it applies it, and the contract suite checks that one from inside.
func Supported(rt Runtime) []Support {
	sup := rt.Applies()
	for _, c := range Applied(ByRuntime) {
		if !slices.ContainsFunc(sup, func(s Support) bool { return s.Condition == c }) {
			sup = append(sup, Support{Condition: c, Reason: "the " + rt.Name() + " runtime does not apply it"})
		}
	}
	return sup
}

// VariedCondition is the declaration of c.
func VariedCondition(c Condition) (Varied, bool) {
	for _, v := range Varieds {
		if v.Name == c {
			return v, true
		}
	}
	return Varied{}, false
}

// nonEmpty is the variable assignment name+value for a shell, or none.
func nonEmpty(name, value string, quote func(string) string) []string {
	if value == "" {
		return nil
	}
	return []string{name + quote(value)}
}

// Same says whether two runs have the same value of the condition.
func (v Varied) Same(a, b RunConditions) bool {
	fa, fb := v.Fields(&a), v.Fields(&b)
	for i := range fa {
		if reflect.ValueOf(fa[i]).Elem().Interface() != reflect.ValueOf(fb[i]).Elem().Interface() {
			return false
		}
	}
	return true
}

// Take gives to the condition's value in from.
func (v Varied) Take(to *RunConditions, from RunConditions) {
	ft, ff := v.Fields(to), v.Fields(&from)
	for i := range ft {
		reflect.ValueOf(ft[i]).Elem().Set(reflect.ValueOf(ff[i]).Elem())
	}
}

// Recorded is the condition as a report records it: its JSON fields'
// names and values, joined with "/" (uid/gid "0/61000"), so an error about
// a report names what the report says.
func (v Varied) Recorded(r RunConditions) (fields, values string) {
	base := reflect.ValueOf(&r).Pointer()
	typ := reflect.TypeOf(r)
	var names, vals []string
	for _, f := range v.Fields(&r) {
		p := reflect.ValueOf(f)
		for i := 0; i < typ.NumField(); i++ {
			if typ.Field(i).Offset == p.Pointer()-base {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
				names = append(names, name)
			}
		}
		vals = append(vals, fmt.Sprint(p.Elem().Interface()))
	}
	return strings.Join(names, "/"), strings.Join(vals, "/")
}

// Blank clears the condition in a run whose runtime cannot apply it, so
// neither the probe nor the report claims it.
func (v Varied) Blank(r *RunConditions) {
	for _, f := range v.Fields(r) {
		reflect.ValueOf(f).Elem().SetZero()
	}
}

// Describe is a run's conditions in one line of text.
func (r RunConditions) Describe() string {
	var parts []string
	for _, v := range Varieds {
		if s := v.Show(r); s != "" && s != v.Silent {
			parts = append(parts, fmt.Sprintf(v.Text, s))
		}
	}
	return strings.Join(parts, ", ")
}

// Apply puts the run's conditions into job: its environment, working
// directory and container conditions.
func (r RunConditions) Apply(j *Job, a Applying) {
	for _, v := range Varieds {
		v.Apply(r, j, a)
	}
}

// later is run i's value of a condition whose later runs never take the
// base's: the base for run 0, else the varied values in turn.
func later(base string, varied []string, run int) string {
	if run == 0 || len(varied) == 0 {
		return base
	}
	return varied[(run-1)%len(varied)]
}

// numbered is a run's own folder: base for run 0, else base+sep+run.
func numbered(base, sep string, run int) string {
	if run == 0 {
		return base
	}
	return fmt.Sprintf("%s%s%d", base, sep, run)
}

// isNumbered says whether path is one of numbered's folders, under the
// host runtime's scratch prefix or not.
func isNumbered(path, base, sep string) bool {
	path = strings.TrimPrefix(path, ScratchVar)
	if path == base {
		return true
	}
	n, ok := strings.CutPrefix(path, base+sep)
	return ok && n != "" && len(n) <= 4 && strings.Trim(n, "0123456789") == "" && (len(n) == 1 || n[0] != '0')
}

// cpuList is a CPU set as a plan writes one (0, 0-3, 0,2-3).
var cpuList = regexp.MustCompile(`^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?){0,63}$`)

// offsetSeconds is a clock offset ("+3d", "-400d", "0s") in seconds.
func offsetSeconds(offset string) int64 {
	var n int64
	var unit string
	if _, err := fmt.Sscanf(offset, "%d%s", &n, &unit); err != nil {
		return 0
	}
	switch unit {
	case "d":
		n *= 86400
	case "h":
		n *= 3600
	case "m":
		n *= 60
	}
	return n
}
