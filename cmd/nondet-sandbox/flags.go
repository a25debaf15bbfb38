package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
)

// The flags come in groups, and each command takes only the groups it
// uses: run all of them, replay the sandbox and the call's limits,
// doctor the sandbox.

// runtimeNames are --runtime's values: auto and every registered runtime.
func runtimeNames() []string {
	names := []string{"auto"}
	for _, r := range sandbox.Registrations() {
		names = append(names, r.Name)
	}
	return names
}

// runtimeFlags are the settings flags the registered runtimes read, each
// once, in the registry's order.
func runtimeFlags() []sandbox.Flag {
	var out []sandbox.Flag
	for _, r := range sandbox.Registrations() {
		for _, f := range r.Flags {
			if !slices.ContainsFunc(out, func(g sandbox.Flag) bool { return g.Name == f.Name }) {
				out = append(out, f)
			}
		}
	}
	return out
}

// forRuntimes is a runtime flag's help, saying which runtimes read it.
func forRuntimes(flag, help string) string {
	var which []string
	for _, r := range sandbox.Registrations() {
		if slices.ContainsFunc(r.Flags, func(f sandbox.Flag) bool { return f.Name == flag }) {
			which = append(which, r.Name)
		}
	}
	switch len(which) {
	case 0:
		return help
	case 1:
		return "with --runtime " + which[0] + ": " + help
	}
	return "with --runtime " + strings.Join(which[:len(which)-1], ", ") + " or " + which[len(which)-1] + ": " + help
}

// runtimeHelp is --runtime's help, from the registrations.
func runtimeHelp() string {
	var each []string
	for _, r := range sandbox.Registrations() {
		each = append(each, fmt.Sprintf("%s (%s)", r.Name, r.Help))
	}
	var auto []string
	for _, r := range sandbox.AutoOrder(true) {
		if r.RootOnly {
			auto = append(auto, r.Name+" for root")
		} else {
			auto = append(auto, r.Name)
		}
	}
	return fmt.Sprintf("where probes run: %s, or auto: %s, the first that runs (never host)", strings.Join(each, ", "), strings.Join(auto, ", then "))
}

// settings are what the runtimes read of these options.
func (o *sandboxOptions) settings() sandbox.Settings {
	return sandbox.Settings{Seccomp: o.seccomp, UserNS: o.userns, OCIBinary: o.ociRuntime, Image: o.image,
		Kubeconfig: o.kubeconfig, Namespace: o.namespace, RuntimeClass: o.runtimeCls, Baked: o.baked, Unsafe: o.unconfined}
}

// sandboxOptions say where probes run and under which limits.
type sandboxOptions struct {
	runtimeName string
	python      string
	ociRuntime  string
	image       string
	kubeconfig  string
	namespace   string
	runtimeCls  string
	baked       bool
	seccomp     bool
	userns      bool
	memory      int64
	pids        int64
	cpus        float64
	notes       io.Writer // where --runtime auto says what it chose instead (standard error)
	unconfined  bool      // --unsafe, of the commands that have it: the host runtime's probes run unconfined
}

func (o *sandboxOptions) AddFlags(fs *pflag.FlagSet) {
	d := engine.DefaultOptions()
	fs.Var(newChoice(&o.runtimeName, "runtime", "auto", runtimeNames()), "runtime", runtimeHelp())
	fs.StringVar(&o.python, "python", d.Python, "the Python interpreter to probe with: a name on PATH or a path")
	fs.StringVar(&o.ociRuntime, "oci-runtime", "runc", forRuntimes("oci-runtime", "the OCI runtime binary (runc, crun, runsc), a name on PATH or a path"))
	fs.StringVar(&o.image, "image", docker.DefaultImage, forRuntimes("image", "the probe image (make image builds it)"))
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", forRuntimes("kubeconfig", "the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)"))
	fs.StringVar(&o.namespace, "namespace", "", forRuntimes("namespace", "where the probe pods run (default: the kubeconfig context's, else default)"))
	fs.StringVar(&o.runtimeCls, "runtime-class", "", forRuntimes("runtime-class", "the pods' RuntimeClass (gvisor where the cluster has it)"))
	fs.BoolVar(&o.baked, "baked", false, forRuntimes("baked", "the image already holds this scan's files (image bake): nothing is sent to each pod"))
	fs.BoolVar(&o.seccomp, "seccomp", true, forRuntimes("seccomp", "apply the Docker-like seccomp profile"))
	fs.BoolVar(&o.userns, "userns", true, forRuntimes("userns", "map container users to unprivileged host uids (user namespace)"))
	fs.Var(newSize(&o.memory, d.Limits.MemoryBytes), "memory", "memory limit of each interpreter (512MiB, 2GiB; a plain number is bytes)")
	fs.Int64Var(&o.pids, "pids", d.Limits.Pids, "process limit of each interpreter")
	fs.Float64Var(&o.cpus, "cpus", 0, "CPU time of each interpreter in a container, in cores (0.5: half of one); 0: no quota")
}

// minMemory and minPids are the least an interpreter running the worker
// needs: below them every probe fails, and the message should say so first.
const (
	minMemory = 32 << 20
	minPids   = 8
)

// check says what is wrong with a limit the user gave, and what to write.
func (o *sandboxOptions) check() error {
	switch {
	case o.memory < minMemory:
		return usageErrorf("--memory %d: %d bytes is too little for an interpreter (at least 32MiB); write it with a unit: 512MiB, 2GiB", o.memory, o.memory)
	case o.pids < minPids:
		return usageErrorf("--pids %d: at least %d (an interpreter, the worker's child per module, and their threads)", o.pids, minPids)
	case o.cpus < 0:
		return usageErrorf("--cpus %g: 0 for no quota, or a positive number of cores (0.5: half of one)", o.cpus)
	}
	return nil
}

// check says what is wrong with a call setting the user gave.
func (o *callOptions) check() error {
	switch {
	case o.jobs < 1:
		return usageErrorf("--jobs %d: at least 1", o.jobs)
	case o.callTimeout <= 0:
		return usageErrorf("--call-timeout %v: a positive duration (10s, 1m)", o.callTimeout)
	case o.idleTimeout <= 0:
		return usageErrorf("--idle-timeout %v: a positive duration (2s; the call timeout or more turns it off)", o.idleTimeout)
	case o.functionBudget < 0:
		return usageErrorf("--function-budget %v: 0 for none, or a positive duration (5s)", o.functionBudget)
	}
	return nil
}

// limits are the per-interpreter limits the flags ask for.
func (o *sandboxOptions) limits() sandbox.Limits {
	return sandbox.Limits{MemoryBytes: o.memory, Pids: o.pids, CPUs: o.cpus}
}

// callOptions say how each call is made.
type callOptions struct {
	jobs        int
	unsafe      bool
	callTimeout time.Duration
	idleTimeout time.Duration
	// functionBudget is the flag's value: 0 is none.
	functionBudget time.Duration
}

// budget maps the flag (0 is none) to the engine's option (0 is the
// default, negative none).
func (o *callOptions) budget() time.Duration {
	if o.functionBudget == 0 {
		return -1
	}
	return o.functionBudget
}

func (o *callOptions) AddFlags(fs *pflag.FlagSet) {
	d := engine.DefaultOptions()
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "interpreters running at once")
	fs.BoolVar(&o.unsafe, "unsafe", false, "lift the static gate and the guard on the host runtime: run functions that could change the world, unconfined")
	fs.DurationVar(&o.callTimeout, "call-timeout", d.CallTimeout, "how long one call may run before it is named and stopped")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", d.IdleTimeout, "how long a call may wait using no CPU (on input, a lock, a socket, a sleep) before it is named and stopped as past its limit; the call timeout or more turns it off")
	fs.DurationVar(&o.functionBudget, "function-budget", d.FunctionBudget, "how long one function's calls may take together in one run before its later rungs there are skipped, and said (0 for none)")
}

// completeChoices offers a choice flag's values to shell completion.
func completeChoices(cmd *cobra.Command, names ...string) {
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		c, ok := f.Value.(*choice)
		if !ok {
			continue
		}
		_ = cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return c.choices, cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// choice is a string flag with a fixed set of values, checked when the
// flag is parsed.
type choice struct {
	p       *string
	kind    string // what help calls the value
	choices []string
}

func newChoice(p *string, kind, def string, choices []string) *choice {
	*p = def
	return &choice{p: p, kind: kind, choices: choices}
}

func (c *choice) String() string { return *c.p }
func (c *choice) Type() string   { return c.kind }
func (c *choice) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(c.choices, ", "))
	}
	*c.p = s
	return nil
}

// size is a byte count written as people write them: 512MiB, 2GiB, 2g.
type size struct{ p *int64 }

func newSize(p *int64, def int64) *size {
	*p = def
	return &size{p}
}

// String is exact, so that setting it again gives the same size.
func (s *size) String() string {
	if pretty := units.BytesSize(float64(*s.p)); mustRAM(pretty) == *s.p {
		return pretty
	}
	return fmt.Sprint(*s.p)
}

func mustRAM(s string) int64 {
	n, _ := units.RAMInBytes(s)
	return n
}
func (s *size) Type() string { return "size" }
func (s *size) Set(v string) error {
	n, err := units.RAMInBytes(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a size: write it as 512MiB or 2GiB", v)
	}
	*s.p = n
	return nil
}
