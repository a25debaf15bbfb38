package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// confineArg is the first argument of this binary re-executed as a
// probe's confining shim: `BINARY host-confine DIR... -- COMMAND...`.
const confineArg = "host-confine"

// confineExit is the shim's exit status when it could not confine the
// probe; it then runs nothing, and says why on standard error.
const confineExit = 125

// initCalled says the binary calls Init, so it can be its own shim.
var initCalled bool

// Init is the probe side of the host runtime's re-exec: a binary that
// uses this runtime calls it first thing in main (and a test binary in
// init), and it never returns when the process is a probe's shim.
func Init() {
	initCalled = true
	if len(os.Args) > 1 && os.Args[1] == confineArg {
		err := confineExec(os.Args[2:])
		fmt.Fprintf(os.Stderr, "nondet-sandbox: the host runtime could not confine a probe: %v\n", err)
		os.Exit(confineExit)
	}
}

// Guard says what a confined probe is kept from on this machine: the
// kernel's Landlock ABI (0: none, and the probe may write anywhere its
// user may) and whether this binary has seccomp (built with -tags
// seccomp). Each part is applied where it exists, and said.
type Guard struct {
	Landlock int
	Seccomp  bool
}

// Describe is the guard in the words the warning of every host scan uses:
// what this kernel's Landlock ABI and this binary enforce, and no more.
func (g Guard) Describe() string {
	var parts []string
	switch {
	case g.Landlock == 0:
		parts = append(parts, "this kernel has no Landlock (Linux 5.13 and later), so nothing but the static gate keeps the code from writing your files")
	default:
		kept := []string{"writes outside the scan's own folders"}
		missing := []string{}
		for _, f := range []struct {
			abi  int
			what string
		}{{3, "truncation"}, {4, "TCP"}, {5, "device ioctls"}, {6, "signals to processes not its own"}} {
			if g.Landlock >= f.abi {
				kept = append(kept, f.what)
			} else {
				missing = append(missing, f.what)
			}
		}
		part := fmt.Sprintf("Landlock (ABI %d) refuses %s", g.Landlock, strings.Join(kept, ", "))
		if len(missing) > 0 {
			part += " but not " + strings.Join(missing, ", ") + " (a newer kernel has them)"
		}
		parts = append(parts, part)
	}
	if g.Seccomp {
		parts = append(parts, "seccomp refuses file metadata changes, new sockets, ptrace and privileged calls")
	} else {
		parts = append(parts, "this binary has no seccomp (build it with -tags seccomp, as make does), so file modes, owners, times and sockets are not guarded")
	}
	return strings.Join(parts, "; ") + "; what the code reads is not hidden"
}

// ProbeGuard is the guard this kernel and binary give.
func ProbeGuard() Guard {
	v, err := llsyscall.LandlockGetABIVersion()
	if err != nil || v < 0 {
		v = 0
	}
	return Guard{Landlock: v, Seccomp: seccomp.Enabled}
}

// confineExec confines this thread and execs the probe's command:
// Landlock lets it write only beneath the given folders (and to
// /dev/null), and seccomp refuses what Landlock cannot see.
func confineExec(args []string) error {
	i := slices.Index(args, "--")
	if i < 0 || i+1 >= len(args) {
		return errors.New("usage: host-confine DIR... -- COMMAND...")
	}
	writable, argv := args[:i], args[i+1:]
	// A folder reached through a link would grant what the link points
	// to, which a probe may have planted.
	for _, d := range writable {
		if real, err := filepath.EvalSymlinks(d); err != nil || real != filepath.Clean(d) {
			return fmt.Errorf("the writable folder %s is not a folder of its own (a link, or missing): refusing to run", d)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	g := ProbeGuard()
	var filter *configs.Seccomp
	if g.Seccomp {
		if filter, err = probeSeccomp(g); err != nil {
			return err
		}
	}
	// Every restriction below holds for this thread, which then execs:
	// the new program has only the restricted thread's credentials.
	runtime.LockOSThread() // never unlocked
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	// Reads and execs anywhere; writes, removals, links and truncation
	// only in the scan's folders; no TCP binds or connects (no rules for
	// them), no signals or abstract sockets beyond the probe's own
	// processes. Best effort: each right where the kernel has it (a rule
	// asking for one it lacks would drop Landlock whole), and the scan
	// says which.
	rw := landlock.RWDirs(writable...)
	if g.Landlock >= 2 {
		rw = rw.WithRefer()
	}
	rules := []landlock.Rule{landlock.RODirs("/"), landlock.RWFiles("/dev/null")}
	if len(writable) > 0 {
		rules = append(rules, rw)
	}
	fd, flags, err := landlock.V11.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd >= 0 {
		err := llsyscall.LandlockRestrictSelf(fd, flags)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if filter != nil {
		if _, err := seccomp.InitSeccomp(filter); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	// Only the job's descriptors (stdio, records, input, marks) go on: one
	// the caller left open without close-on-exec would be a way out that
	// Landlock, which checks opens, never sees.
	if err := unix.CloseRange(6, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("closing inherited descriptors: %w", err)
	}
	return syscall.Exec(path, argv, os.Environ())
}

// refused are the calls the probe's seccomp filter refuses (EPERM) beyond
// Docker's default profile for a process without capabilities: the file
// metadata changes Landlock does not govern (modes, owners, times,
// extended attributes), wherever the file is, and new sockets of any
// family, so nothing is reached through the network or a socket file
// (a container runtime's, a desktop bus). Pipes and socketpair stay.
var refused = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat",
	"utime", "utimes", "futimesat", "utimensat",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
	"socket", "socketcall", "ptrace",
}

// refusedBelowABI3 are refused as well where Landlock cannot refuse
// truncating a file outside the scan (before ABI 3).
var refusedBelowABI3 = []string{"truncate", "ftruncate"}

// probeSeccomp is Docker's default profile for a process with no
// capabilities, less the calls in refused.
func probeSeccomp(g Guard) (*configs.Seccomp, error) {
	deny := refused
	if g.Landlock < 3 {
		deny = append(slices.Clone(refused), refusedBelowABI3...)
	}
	sc, err := sandbox.SeccompProfile(&specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}})
	if err != nil {
		return nil, err
	}
	kept := sc.Syscalls[:0]
	for _, s := range sc.Syscalls {
		if s.Action != specs.ActAllow {
			kept = append(kept, s)
			continue
		}
		s.Names = slices.DeleteFunc(slices.Clone(s.Names), func(n string) bool { return slices.Contains(deny, n) })
		if len(s.Names) > 0 {
			kept = append(kept, s)
		}
	}
	sc.Syscalls = kept
	return specconv.SetupSeccomp(sc)
}
