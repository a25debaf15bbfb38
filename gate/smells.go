package gate

import (
	"sort"
	"strings"
)

// Smell is a suspicion from a function's own body: a source of
// nondeterminism it calls. Smells are printed beside a verdict and never
// are one: a seeded RNG smells and is deterministic, and a nondeterministic
// callee in another module does not smell at all.
type Smell struct {
	Kind string `json:"kind"` // clock, rng, urandom, uuid, secrets, id, hash, set-iteration
	Call string `json:"call"`
	Line int    `json:"line"`
}

var smellPrefixes = []struct{ prefix, kind string }{
	{"time.time", "clock"}, {"time.monotonic", "clock"}, {"time.perf_counter", "clock"},
	{"time.process_time", "clock"}, {"time.localtime", "clock"}, {"time.gmtime", "clock"},
	{"time.ctime", "clock"}, {"time.asctime", "clock"}, {"time.strftime", "clock"},
	{"datetime.datetime.now", "clock"}, {"datetime.datetime.today", "clock"},
	{"datetime.datetime.utcnow", "clock"}, {"datetime.date.today", "clock"},
	{"datetime.now", "clock"}, {"datetime.today", "clock"}, {"datetime.utcnow", "clock"},
	{"date.today", "clock"},
	{"random.", "rng"}, {"numpy.random.", "rng"},
	{"os.urandom", "urandom"}, {"os.getrandom", "urandom"},
	{"uuid.uuid1", "uuid"}, {"uuid.uuid4", "uuid"},
	{"secrets.", "secrets"},
}

// MovingCalls are the prefixes of the calls whose answer moves between
// any two runs (a clock, an RNG, fresh randomness): discovery builds no
// receiver with a callee that makes them, or every method called on it
// would answer what its constructor read.
func MovingCalls() []string {
	out := make([]string, 0, len(smellPrefixes))
	for _, p := range smellPrefixes {
		out = append(out, p.prefix)
	}
	return out
}

// Smells lists the suspicions in a body, in line order.
func Smells(f Facts) []Smell {
	var out []Smell
	for _, c := range f.Calls {
		if k := smellOf(c); k != "" {
			out = append(out, Smell{Kind: k, Call: c.Name, Line: c.Line})
		}
	}
	for _, l := range f.SetIters {
		out = append(out, Smell{Kind: "set-iteration", Call: "iteration over a set", Line: l})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// clockWithArgs read the clock only when called with at most this many
// arguments: time.gmtime(seconds) converts a number it was given.
var clockWithArgs = map[string]int{
	"time.gmtime": 0, "time.localtime": 0, "time.ctime": 0, "time.asctime": 0, "time.strftime": 1,
}

func smellOf(c Call) string {
	if n, ok := clockWithArgs[c.Name]; ok && c.Args > n {
		return ""
	}
	switch c.Name {
	case "id":
		return "id"
	case "hash":
		return "hash"
	case "random.Random", "random.seed":
		// A seeded generator is the false positive a grep for "random"
		// produces; an unseeded one (no arguments) still smells.
		if c.Args > 0 {
			return ""
		}
	}
	for _, s := range smellPrefixes {
		if c.Name == s.prefix || strings.HasSuffix(s.prefix, ".") && strings.HasPrefix(c.Name, s.prefix) {
			return s.kind
		}
	}
	return ""
}
