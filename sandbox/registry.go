package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Settings are what the command line says of the runtimes; each runtime
// reads the fields it uses.
type Settings struct {
	Seccomp      bool   // the Docker-like seccomp profile
	UserNS       bool   // container users mapped to unprivileged host uids
	OCIBinary    string // --oci-runtime: runc, crun, runsc, or a path
	Image        string // --image, for runtimes that run one ("" for ProbeImage)
	Kubeconfig   string
	Namespace    string
	RuntimeClass string
	Unsafe       bool // --unsafe: the host runtime runs its probes unconfined
	Baked        bool // --baked: the image already holds the scan's files
}

// Registration is one runtime as the command line knows it: its name,
// its place in the list and in --runtime auto's order, what it is, and
// how to make one. A new runtime is its package plus one Register call;
// --runtime's choices, auto, completion and the tests' lists read these.
type Registration struct {
	// Name is the value of --runtime that selects it.
	Name string
	// Rank orders the list that help and completion show.
	Rank int
	// Help is the few words --runtime's help says of it.
	Help string
	// Auto is its place in --runtime auto's order (1 first); 0: auto never
	// takes it.
	Auto int
	// RootOnly: auto tries it only when the caller is root.
	RootOnly bool
	// ImageInterpreter: its probes run the interpreter of its image, so
	// --python names one there and the host's environment (--package)
	// is not what runs.
	ImageInterpreter bool
	// Flags are the settings flags it reads beside --runtime: the command
	// line's help says which runtimes read each, and each is a config key
	// that only the user may set.
	Flags []Flag
	// Variant is what a report records beside the name to say which
	// flavour ran (the OCI runtime binary); nil for none.
	Variant func(Settings) string
	// New makes one; an error says why it cannot run here.
	New func(ctx context.Context, s Settings) (Runtime, error)
}

// Flag is a settings flag a runtime reads: its name, which is also its
// config key, and whether its value is a path (relative to the config
// file that gives it).
type Flag struct {
	Name string
	Path bool
}

var (
	registryMu sync.Mutex
	registry   []Registration
)

// Register adds a runtime; a name registered twice is a programming error.
func Register(r Registration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, have := range registry {
		if have.Name == r.Name {
			panic(fmt.Sprintf("sandbox: runtime %q registered twice", r.Name))
		}
	}
	registry = append(registry, r)
}

// Registrations are every registered runtime, by Rank.
func Registrations() []Registration {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b Registration) int { return a.Rank - b.Rank })
	return out
}

// Lookup finds a registered runtime by name.
func Lookup(name string) (Registration, bool) {
	for _, r := range Registrations() {
		if r.Name == name {
			return r, true
		}
	}
	return Registration{}, false
}

// AutoOrder is what --runtime auto tries, in order, for a caller who is
// root or not.
func AutoOrder(root bool) []Registration {
	var out []Registration
	for _, r := range Registrations() {
		if r.Auto > 0 && (root || !r.RootOnly) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Registration) int { return a.Auto - b.Auto })
	return out
}

// Made is a backend's New as a Registration's: a nil Runtime, not a nil
// pointer in one, when there is an error.
func Made[R Runtime](rt R, err error) (Runtime, error) {
	if err != nil {
		return nil, err
	}
	return rt, nil
}
