package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Runtime starts probe processes. Every backend passes the same
// conformance suite (sandbox/conformance).
type Runtime interface {
	// Name is the value of --runtime that selects this backend.
	Name() string
	// Isolated reports whether processes run in a container: binds are
	// remapped to their targets and writes outside the sandbox are
	// impossible. The host runtime is the only one that is not.
	Isolated() bool
	// Applies says which of the container-level conditions this runtime
	// varies; a condition it cannot apply comes back with the reason.
	Applies() []Support
	// Capabilities says what else sets this runtime apart.
	Capabilities() Capabilities
	// Begin prepares what every job of one scan shares (a root skeleton, a
	// parent cgroup, a state directory) and returns the scan's session,
	// which runs its jobs and releases it all.
	Begin(ctx context.Context, scan Scan) (Session, error)
	// Sweep removes what scans that no longer run left behind (a scan killed
	// with SIGKILL cannot clean up) and says what it removed. alive tells
	// a running scan's id from a dead one's.
	Sweep(ctx context.Context, alive func(scanID string) bool) ([]string, error)
}

// Session is one scan's use of a runtime: the state of that use lives
// here, not in the runtime.
type Session interface {
	// Run starts job and waits for it. Cancelling ctx kills the process and
	// everything it started; Run returns only once they are gone.
	Run(ctx context.Context, job *Job) (*Exit, error)
	// End releases what Begin made, even when ctx was cancelled; a second
	// End does nothing.
	End(ctx context.Context) error
}

// NetworkExit is the worker's exit status when, asked to check
// (Capabilities.CheckNetwork), it found a network it can reach and ran
// nothing: the engine puts it in the request, the runtime reads it.
const NetworkExit = 86

// Capabilities are what sets a runtime apart beyond its conditions, in
// one place: the engine and the contract suite ask these, never a
// runtime's name. The zero value is a container runtime that runs the
// host's interpreter and holds its processes with cgroups.
type Capabilities struct {
	// InImage: probes run the interpreter of the runtime's image (Docker,
	// Kubernetes), not the host's: --python names it as the image knows
	// it, and the host's /usr is not bound.
	InImage bool
	// CheckNetwork: the probes' lack of a network is not the runtime's own
	// doing but its platform's (a cluster's network plugin): the worker
	// checks from inside, before anything scanned runs, that nothing but
	// loopback is reachable, and refuses to go on otherwise.
	CheckNetwork bool // the worker then exits NetworkExit
	// Markless: the probes' marks reach no one (on Kubernetes the pod's
	// log is the one way out, and nothing the scanned code writes may reach
	// it): a call that kills the worker's parent is named from the records
	// alone.
	Markless bool
	// LimitsByRlimit: processes are held to their limits with rlimits, not
	// cgroups (rootless): memory runs out as a failed allocation, not as a
	// kill by the OOM killer.
	LimitsByRlimit bool
	// PeakMemory: Exit.PeakMemory is measured.
	PeakMemory bool
	// FixedBinds: the files jobs see are fixed when the scan starts (a
	// baked image holds them): binds added later (the code folder that
	// discovery fills) would not reach the probes, so none are added.
	FixedBinds bool
	// OwnProcesses, for a runtime that is not isolated: its probes see
	// and reach only their own processes (a PID namespace each), as a
	// container's do.
	OwnProcesses bool
	// Guard, for a runtime that is not isolated: what keeps its probes
	// from the machine besides the static gate, in words for its warning
	// ("" for nothing).
	Guard string
	// StartsAhead: starting a probe is slow and is mostly the runtime's
	// waiting, not the scan's CPU (a Docker container). The engine starts
	// up to Jobs more while Jobs run; the runtime calls Job.Admit once the
	// interpreter is started and waits for its input, and passes the input
	// on only when Admit has returned nil.
	StartsAhead bool
}

// Ending gives a session its End: end runs once, however often End is
// called. A session embeds it.
type Ending struct {
	end func(context.Context) error
}

// EndOnce makes the Ending that runs end.
func EndOnce(end func(context.Context) error) Ending {
	var once sync.Once
	var err error
	return Ending{end: func(ctx context.Context) error {
		once.Do(func() { err = end(ctx) })
		return err
	}}
}

// End releases what the scan's Begin made; a second call does nothing.
func (e Ending) End(ctx context.Context) error { return e.end(ctx) }

// ProbeImage is the probe image of the runtimes that run one (docker,
// kubernetes): what `make image` builds.
const ProbeImage = "nondet-sandbox-probe:latest"

// ScratchVar starts a path that a runtime without containers places under
// its scan's scratch directory.
const ScratchVar = "$SCRATCH"

// Scan is what a runtime is told about the scan it serves.
type Scan struct {
	ID      string // names every resource, after Prefix
	Scratch string // a host directory the runtime may use, removed after the scan
	Jobs    int    // processes that run at once, for scan-wide ceilings
	Limits  Limits // per process
}

// Bind makes a host directory visible at Target, read-only.
type Bind struct {
	Source string
	Target string
}

// Mask hides a path inside a bind: an empty read-only directory over a
// directory, /dev/null over a file. The engine masks the hidden entries at
// the top of every scanned tree it binds (a home directory's .ssh, .aws,
// .config), which discovery skips anyway.
type Mask struct {
	Target string
	Dir    bool
}

// Job is one interpreter: argv, environment and conditions are decided by
// the engine; the runtime only applies them.
type Job struct {
	// ID names the process's resources (container, cgroup, state
	// directory) under the scan's prefix.
	ID      string
	Argv    []string
	Env     []string
	Dir     string
	Binds   []Bind
	Masks   []Mask
	Records *os.File // the write end of the record channel, fd 3 inside
	// Input, when set, is the job's request, readable as fd 4 inside and
	// nowhere else: no path inside the sandbox leads to it, so what the
	// worker reads from it (the plan, the nonce) is gone for the scanned
	// code once the worker has closed it.
	Input *os.File
	// Marks, when set, is the mark file (NewMarks), fd 5 inside: the
	// worker keeps in it which call started last, so the engine can name
	// the call even when the worker's parent was killed. A runtime that
	// passes descriptors passes it as it is (the worker maps it: a call's
	// start costs a store); one that cannot relays 8-byte marks into it
	// (RelayMarks).
	Marks  *os.File
	Stdout io.Writer
	Stderr io.Writer
	// Scratch is a host directory the job may use for its own files; the
	// host runtime puts the working directory and HOME under it.
	Scratch string
	// Writable are the host directories a runtime without containers lets
	// the job write besides its own (the scan's bytecode cache and
	// temporary folder).
	Writable []string
	// Private are those of Writable that jobs share by path only: a
	// runtime that can gives each job its own folder there (the temporary
	// folder), as it does for the working directory and HOME.
	Private []string
	Cond    Conditions
	Limits  Limits
	// Admit, set only for a runtime that StartsAhead, returns when the
	// scan has room for one more running interpreter, or with an error
	// when the job is no longer wanted (then no input flows).
	Admit func(context.Context) error
}

// HomeDir is the job's HOME inside the sandbox: the run's, else
// /home/probe.
func (j *Job) HomeDir() string {
	if j.Cond.Home == "" {
		return "/home/probe"
	}
	return j.Cond.Home
}

// Tmpfs is the size of each of the job's tmpfs mounts (/tmp, HOME).
func (j *Job) Tmpfs() int64 {
	if j.Limits.TmpfsBytes <= 0 {
		return DefaultTmpfsBytes
	}
	return j.Limits.TmpfsBytes
}

// Files are the descriptors a job's process gets above stdio: the record
// channel as fd 3 and, when there are, the input as fd 4 and the marks as
// fd 5 (a job with marks has an input).
func (j *Job) Files() []*os.File {
	switch {
	case j.Input == nil:
		return []*os.File{j.Records}
	case j.Marks == nil:
		return []*os.File{j.Records, j.Input}
	}
	return []*os.File{j.Records, j.Input, j.Marks}
}

// Conditions are the container-level varied conditions of one run.
type Conditions struct {
	Hostname string
	UID, GID int
	Umask    uint32
	Home     string
	CPUs     string // a cpuset such as "0" or "0-1"; empty: all
	PidFloor int    // raise the first pid of the run above this
}

// DefaultTmpfsBytes caps each of a probe's tmpfs mounts (/tmp, HOME) when
// a job's limits do not say: the engine's default options, the container
// policy and the Docker runtime all take it from here.
const DefaultTmpfsBytes = 64 << 20

// Limits bound one process.
type Limits struct {
	MemoryBytes int64
	Pids        int64
	CPUs        float64
	TmpfsBytes  int64
}

// Exit says how a process ended.
type Exit struct {
	Code       int
	Signal     string // e.g. "SIGKILL"; empty when it exited
	OOMKilled  bool
	PeakMemory int64 // bytes; 0 when the runtime cannot tell
}

// Support is whether a runtime can vary one condition, and why not.
type Support struct {
	Condition Condition `json:"condition"`
	Applied   bool      `json:"applied"`
	Reason    string    `json:"reason,omitempty"`
}

// SystemDirs are the host paths every probe needs, bound read-only at the
// same place: the system's programs and libraries. Never /home or /root.
var SystemDirs = []string{"/usr"}

// CPUOnline is where glibc's sysconf(_SC_NPROCESSORS_ONLN), and so
// Python's os.cpu_count(), reads how many CPUs are online: a runtime that
// varies the CPU set binds a file saying the same set over it, so the
// count moves with the affinity. Without it (the sysfs of a container, or
// none) os.cpu_count() says the host's.
const CPUOnline = "/sys/devices/system/cpu/online"

// CPUOnlineFile writes, in dir, the file a job with the CPU set cpus
// binds at CPUOnline, and returns its path.
func CPUOnlineFile(dir, cpus string) (string, error) {
	if !cpuList.MatchString(cpus) {
		return "", fmt.Errorf("cpu set %q is not a cpu list", cpus)
	}
	path := filepath.Join(dir, "cpus-online-"+cpus)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".cpus-online-")
	if err != nil {
		return "", err
	}
	_, err = tmp.WriteString(cpus + "\n")
	if err2 := tmp.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path) // jobs in parallel write the same
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// RootNames are the top-level names of a container's root that belong to
// the system: a bind the scanned trees ask for (a link that leaves its
// tree, see the engine) never goes under one.
var RootNames = []string{"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32",
	"media", "mnt", "opt", "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var"}

// ProbeUser names the probe users in the skeleton's /etc/passwd, so the
// varied uid also varies what getpass.getuser() and pwd report.
func ProbeUser(uid int) string { return fmt.Sprintf("probe%d", uid) }

// NewMarks makes a job's mark file in dir, with no name: 8 bytes, the
// little-endian index of the last call started, -1 before the first.
func NewMarks(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "marks-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, ^uint64(0)), 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// LastMark is the last call a job's worker marked as starting, or -1.
// Scanned code can write there too: the engine checks it where it is used.
func LastMark(marks *os.File) int64 {
	var b [8]byte
	if _, err := marks.ReadAt(b[:], 0); err != nil {
		return -1
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// RelayMarks copies the 8-byte marks read from r into the mark file, each
// over the last, until r ends: for runtimes whose probes write marks to a
// stream.
func RelayMarks(marks *os.File, r io.Reader) {
	buf := make([]byte, 8<<10)
	var frame, last [8]byte
	n := 0
	for {
		k, err := r.Read(buf)
		got := false
		for _, b := range buf[:k] {
			frame[n] = b
			if n++; n == 8 {
				last, n, got = frame, 0, true
			}
		}
		if got && marks != nil {
			_, _ = marks.WriteAt(last[:], 0)
		}
		if err != nil {
			return
		}
	}
}
