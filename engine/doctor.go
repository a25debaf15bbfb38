package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// Diagnosis is what `nondet-sandbox doctor` reports: which conditions the
// runtime can vary here, and the sandbox's posture as a probe sees it.
type Diagnosis struct {
	Runtime    string            `json:"runtime"`
	Conditions []sandbox.Support `json:"conditions"`
	Posture    Posture           `json:"posture"`
	Limits     sandbox.Limits    `json:"limits_configured"`
	// Guard: on a runtime that is not isolated, what else keeps its probes
	// from the machine (the posture's writable list is then permission
	// bits only).
	Guard string `json:"guard,omitempty"`
}

// Posture is read from inside a probe container by the worker.
type Posture struct {
	CapEffective string           `json:"cap_effective"`
	CapBounding  string           `json:"cap_bounding"`
	CapPermitted string           `json:"cap_permitted"`
	Seccomp      string           `json:"seccomp"`
	NoNewPrivs   string           `json:"no_new_privs"`
	UID          int              `json:"uid"`
	GID          int              `json:"gid"`
	Pid          int              `json:"pid"`
	Hostname     string           `json:"hostname"`
	UIDMap       string           `json:"uid_map"`
	Interfaces   []string         `json:"interfaces"`
	Writable     []string         `json:"writable"`
	Readonly     []string         `json:"readonly"`
	Rlimits      map[string]int64 `json:"rlimits"`
	CPUShare     float64          `json:"cpu_share"`      // CPU seconds a busy thread got per second
	IOUringErrno int              `json:"io_uring_errno"` // 1 (EPERM): refused by the seccomp profile
	Env          []string         `json:"env"`
}

// Doctor runs the posture probe in one sandboxed interpreter under run 0's
// conditions.
func Doctor(ctx context.Context, opts Options) (*Diagnosis, error) {
	s, closeScan, err := openScan(ctx, opts, nil)
	if err != nil {
		return nil, err
	}
	defer closeScan()
	d := &Diagnosis{Runtime: s.ex.opts.Runtime.Name(), Limits: s.ex.opts.Limits, Guard: s.ex.opts.Runtime.Capabilities().Guard}
	for _, c := range sandbox.Applied(sandbox.ByEngine) {
		d.Conditions = append(d.Conditions, sandbox.Support{Condition: c, Applied: true})
	}
	skipped := map[sandbox.Condition]sandbox.Support{}
	for _, sk := range s.skipped {
		skipped[sk.Condition] = sk
	}
	for _, sup := range sandbox.Supported(s.ex.opts.Runtime) {
		if sk, ok := skipped[sup.Condition]; ok {
			sup = sk
		}
		d.Conditions = append(d.Conditions, sup)
	}
	if s.ex.loc.note != "" {
		for i := range d.Conditions {
			if d.Conditions[i].Condition == sandbox.Locale {
				d.Conditions[i] = sandbox.Support{Condition: sandbox.Locale, Reason: s.ex.loc.note}
			}
		}
	}
	nonce := newScanID() + newScanID()
	// On the host runtime the mount points are the host's: the probe
	// must not write a file to each to see whether it could.
	var got bool
	handle := func(line []byte) {
		var head struct {
			N string     `json:"n"`
			K recordKind `json:"k"`
		}
		if json.Unmarshal(line, &head) != nil || head.N != nonce || head.K != kindPosture {
			return
		}
		got = json.Unmarshal(line, &d.Posture) == nil
	}
	req := &postureRequest{envelope: envelope{Nonce: nonce}, WriteTest: s.ex.opts.Runtime.Isolated()}
	out, err := s.ex.runJob(ctx, "posture", s.runs[0], "posture", req, time.Minute, handle)
	if err != nil {
		return nil, err
	}
	if !got {
		return nil, fmt.Errorf("%w: the posture probe %s%s", ErrRuntime, out.describe(), out.stderrTail())
	}
	return d, nil
}

// WriteDiagnosis prints a diagnosis for people.
func WriteDiagnosis(w io.Writer, d *Diagnosis) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "runtime %s\n\nconditions varied between runs:\n", d.Runtime)
	for _, c := range d.Conditions {
		state := "varied"
		if !c.Applied {
			state = "skipped: " + c.Reason
		}
		fmt.Fprintf(tw, "  %s\t%s\n", c.Condition, state)
	}
	p := d.Posture
	fmt.Fprintf(tw, "\nposture, seen from inside a probe:\n")
	fmt.Fprintf(tw, "  capabilities\teffective %s, bounding %s, permitted %s\n", p.CapEffective, p.CapBounding, p.CapPermitted)
	fmt.Fprintf(tw, "  seccomp\tmode %s%s\n", p.Seccomp, map[string]string{"0": " (none)", "1": " (strict)", "2": " (filter)"}[p.Seccomp])
	fmt.Fprintf(tw, "  no_new_privs\t%s\n", p.NoNewPrivs)
	fmt.Fprintf(tw, "  network\tinterfaces: %s\n", strings.Join(p.Interfaces, ", "))
	fmt.Fprintf(tw, "  writable\t%s\n", strings.Join(p.Writable, ", "))
	fmt.Fprintf(tw, "  read-only\t%s\n", strings.Join(p.Readonly, ", "))
	fmt.Fprintf(tw, "  user\tuid %d, gid %d; uid map %q\n", p.UID, p.GID, p.UIDMap)
	fmt.Fprintf(tw, "  process\tpid %d, hostname %q\n", p.Pid, p.Hostname)
	fmt.Fprintf(tw, "  environment\t%s\n", strings.Join(p.Env, " "))
	if d.Guard != "" {
		fmt.Fprintf(tw, "  guard\t%s\n", d.Guard)
	}
	fmt.Fprintf(tw, "  limits\tmemory %d bytes, pids %d, tmpfs %d bytes, CPU %g cores (configured, 0: none); open files %d, processes %d, address space %d, CPU %.2f s per s busy (seen)\n",
		d.Limits.MemoryBytes, d.Limits.Pids, d.Limits.TmpfsBytes, d.Limits.CPUs, p.Rlimits["RLIMIT_NOFILE"], p.Rlimits["RLIMIT_NPROC"], p.Rlimits["RLIMIT_AS"], p.CPUShare)
	return tw.Flush()
}

// postureRequest is posture mode's request: whether to try writing where
// a container allows none.
type postureRequest struct {
	envelope
	WriteTest bool `json:"write_test"`
}
