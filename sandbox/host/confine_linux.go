package host

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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
	// Namespaces: probes get PID, IPC and mount namespaces of their own.
	Namespaces bool
}

// Describe is the guard in the words the warning of every host scan uses:
// what this kernel's Landlock ABI and this binary enforce, and no more.
func (g Guard) Describe() string {
	var parts []string
	switch {
	case g.Landlock == 0:
		parts = append(parts, "this kernel has no Landlock (Linux 5.13 and later), so nothing but the static gate keeps the code from reading and writing your files")
	default:
		kept := []string{"reads beyond the system's files, the interpreter, the scanned trees and what every user may read of /etc", "writes outside the scan's own folders"}
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
	parts = append(parts, "every capability is dropped, even as root (no device nodes)")
	if g.Seccomp {
		parts = append(parts, "seccomp refuses file metadata changes, new sockets, ptrace, other processes' memory, priorities, CPU affinity, scheduling and limits, System V and POSIX IPC, and privileged calls")
	} else {
		parts = append(parts, "this binary has no seccomp (build it with -tags seccomp, as make does), so file modes, owners, times, sockets, other processes' priorities and limits and the machine's IPC are not guarded")
	}
	if g.Namespaces {
		parts = append(parts, "each probe has PID, IPC and mount namespaces of its own: it sees only its own processes, and its own working folder, HOME and TMPDIR")
	} else {
		parts = append(parts, "this kernel gives no namespaces to this user, so probes see the machine's processes and its IPC, and those under the same conditions share their working folder, HOME and TMPDIR")
	}
	return strings.Join(parts, "; ") + "; it runs as your user, with no cgroup limits (memory by an address-space limit only) and the machine's hostname and CPUs"
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
// the job's own folders are bound over its condition's (in the mount
// namespace the runtime started this process in), every capability is
// dropped, Landlock lets it write only beneath the given folders (and to
// /dev/null), and seccomp refuses what Landlock cannot see.
func confineExec(args []string) error {
	sh, err := parseShim(args)
	if err != nil {
		return err
	}
	// A folder reached through a link would grant what the link points
	// to, which a probe may have planted.
	for _, d := range append(slices.Clone(sh.writable), sh.sources()...) {
		if real, err := filepath.EvalSymlinks(d); err != nil || real != filepath.Clean(d) {
			return fmt.Errorf("the writable folder %s is not a folder of its own (a link, or missing): refusing to run", d)
		}
	}
	if err := sh.mount(); err != nil {
		return err
	}
	path, err := exec.LookPath(sh.argv[0])
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
	if sh.pidFloor > pidSlack {
		// The pid shim forks only a few times up to the floor rather than
		// all the way (and still does if this fails): a few below it, and
		// as late as it may (before the capabilities go), since a thread
		// the Go runtime starts meanwhile takes a pid too.
		_ = os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(sh.pidFloor-pidSlack)), 0)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	// Reads and execs only what readRules names; writes, removals, links
	// and truncation only in the scan's folders; no TCP binds or connects (no rules for
	// them), no signals or abstract sockets beyond the probe's own
	// processes. Best effort: each right where the kernel has it (a rule
	// asking for one it lacks would drop Landlock whole), and the scan
	// says which.
	rw := landlock.RWDirs(sh.writable...)
	if g.Landlock >= 2 {
		rw = rw.WithRefer()
	}
	rules := append(readRules(sh.reads), landlock.RWFiles("/dev/null"))
	if len(sh.writable) > 0 {
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
	if sh.umask >= 0 {
		syscall.Umask(sh.umask) // this process's alone, kept across the exec
	}
	return syscall.Exec(path, sh.argv, os.Environ())
}

// shim is the confining shim's command line:
//
//	host-confine [-umask MODE] [-ns MNTNS [-pid FLOOR] [-bind SRC DST]...] [-dir DIR] [-ro PATH]... WRITABLE... -- COMMAND...
//
// -umask is the probe's umask (octal), set before the exec.
// -ns says the shim was started in namespaces of its own (mount, PID,
// IPC; MNTNS is the engine's mount namespace, which it must not be in):
// there it mounts a /proc of its own PID namespace, starts its pids at
// FLOOR (for the pid shim that runs the probe) and binds each job's
// own folder SRC over the condition's folder DST (which jobs under the
// same conditions share by path). -dir is the working directory, entered
// once the binds are in place; -ro are what the probe may read besides
// the system's own files and its writable folders.
type shim struct {
	umask    int // -1: left as it is
	binds    [][2]string
	hostNS   string
	pidFloor int
	dir      string
	reads    []string
	writable []string
	argv     []string
}

func parseShim(args []string) (*shim, error) {
	sh := &shim{umask: -1}
	usage := errors.New("usage: host-confine [-umask MODE] [-ns MNTNS [-bind SRC DST]...] [-dir DIR] [-ro PATH]... DIR... -- COMMAND...")
	for len(args) > 0 {
		switch {
		case args[0] == "-bind" && len(args) >= 3:
			sh.binds = append(sh.binds, [2]string{args[1], args[2]})
			args = args[3:]
			continue
		case args[0] == "-ns" && len(args) >= 2:
			sh.hostNS = args[1]
		case args[0] == "-pid" && len(args) >= 2:
			sh.pidFloor, _ = strconv.Atoi(args[1])
		case args[0] == "-dir" && len(args) >= 2:
			sh.dir = args[1]
		case args[0] == "-umask" && len(args) >= 2:
			m, err := strconv.ParseUint(args[1], 8, 32)
			if err != nil || m > 0o777 {
				return nil, usage
			}
			sh.umask = int(m)
		case args[0] == "-ro" && len(args) >= 2:
			sh.reads = append(sh.reads, args[1])
		default:
			i := slices.Index(args, "--")
			if i < 0 || i+1 >= len(args) || len(sh.binds) > 0 && sh.hostNS == "" {
				return nil, usage
			}
			sh.writable, sh.argv = args[:i], args[i+1:]
			return sh, nil
		}
		args = args[2:]
	}
	return nil, usage
}

func (sh *shim) sources() []string {
	var out []string
	for _, b := range sh.binds {
		out = append(out, b[0])
	}
	return out
}

// mount, in the namespaces of its own the runtime started the shim in,
// makes every mount private (nothing of it reaches the host's), mounts a
// /proc that shows only the probe's own processes, and binds the job's
// own folders over its conditions'. Then it enters the working directory.
func (sh *shim) mount() error {
	if sh.hostNS != "" {
		// The engine's namespace is named on the command line: from a
		// user namespace of its own the shim may not read the parent's.
		own, err := os.Readlink("/proc/self/ns/mnt")
		if err != nil || own == sh.hostNS || os.Getpid() != 1 {
			return errors.New("the shim is not in mount and PID namespaces of its own")
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making the mounts private: %w", err)
		}
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting a /proc of the probe's own: %w", err)
		}

		for _, b := range sh.binds {
			if err := unix.Mount(b[0], b[1], "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("binding %s over %s: %w", b[0], b[1], err)
			}
		}
	}
	if sh.dir != "" {
		return os.Chdir(sh.dir)
	}
	return nil
}

// readRules are what a probe may read: the system's programs and
// libraries, what every user may read of /etc, its own processes in
// /proc, the CPUs the interpreter counts, a few devices, and the folders
// the engine names (the interpreter's, the worker's, the scanned trees).
// A home directory, another user's files, a secret root may read: none.
func readRules(extra []string) []landlock.Rule {
	dirs := []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys/devices/system/cpu"}
	files := []string{"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"}
	etcDirs, etcFiles := worldReadable("/etc")
	dirs, files = append(dirs, etcDirs...), append(files, etcFiles...)
	for _, p := range extra {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		} else if err == nil {
			files = append(files, p)
		}
	}
	return []landlock.Rule{landlock.RODirs(dirs...).IgnoreIfMissing(), landlock.ROFiles(files...).IgnoreIfMissing()}
}

// worldReadable lists what of dir every user may read, in as few paths as
// cover it: a folder whole where all beneath it is readable by others,
// else what of it is. Links are left out: what they point at is granted,
// or not, where it lies.
func worldReadable(dir string) (dirs, files []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	whole := true
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		switch {
		case err != nil || fi.Mode()&fs.ModeSymlink != 0:
		case fi.IsDir() && fi.Mode().Perm()&0o005 == 0o005:
			d, f := worldReadable(p)
			if len(d) == 1 && d[0] == p {
				dirs = append(dirs, p)
				continue
			}
			whole = false
			dirs, files = append(dirs, d...), append(files, f...)
		case !fi.IsDir() && fi.Mode().Perm()&0o004 != 0:
			files = append(files, p)
			continue
		default:
			whole = false
		}
	}
	if whole {
		return []string{dir}, nil
	}
	return dirs, files
}

// dropCapabilities empties this thread's capability sets, its bounding
// set and its ambient set, so the program it execs has none, even as
// root: no device nodes (CAP_MKNOD), no files of others
// (CAP_DAC_OVERRIDE), no other processes' priorities (CAP_SYS_NICE).
func dropCapabilities() error {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		// EPERM: no CAP_SETPCAP, so nothing in the set could be used by an
		// exec of an unprivileged user anyway (no_new_privs keeps file
		// capabilities out).
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL && err != unix.EPERM {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// pidSlack is how far below the floor the shim starts a probe's pids.
const pidSlack = 8

// refused are the calls the probe's seccomp filter refuses (EPERM) beyond
// Docker's default profile for a process without capabilities: the file
// metadata changes Landlock does not govern (modes, owners, times,
// extended attributes), wherever the file is; new sockets of any family,
// so nothing is reached through the network or a socket file (a container
// runtime's, a desktop bus; pipes and socketpair stay); another process's
// memory, descriptors or pages, which a process of the same user may
// otherwise reach; and System V and POSIX IPC, whose objects are the
// machine's, not the probe's (a segment of another process's, a queue
// left behind).
var refused = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat",
	"utime", "utimes", "futimesat", "utimensat",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
	"socket", "socketcall", "ptrace",
	"process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise",
	"move_pages", "migrate_pages",
	"shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semctl", "ipc",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
}

// ownOnly are the calls that change a process's scheduling, limits or
// priorities: allowed only on the caller itself (its pid given as 0, or
// its process group for the calls that take one; the probe runs in a
// session and group of its own), refused on any other process of the
// machine. Each is a list of argument conditions, one list an allowed
// form: setpriority(which, who, prio) with which PRIO_PROCESS or
// PRIO_PGRP and who 0; ioprio_set(which, who, prio) with which
// IOPRIO_WHO_PROCESS or IOPRIO_WHO_PGRP and who 0; prlimit64 on pid 0,
// or only reading (no new limit).
var ownOnly = map[string][][]specs.LinuxSeccompArg{
	"setpriority":        {{arg(0, 0), arg(1, 0)}, {arg(0, 1), arg(1, 0)}},
	"ioprio_set":         {{arg(0, 1), arg(1, 0)}, {arg(0, 2), arg(1, 0)}},
	"sched_setaffinity":  {{arg(0, 0)}},
	"sched_setscheduler": {{arg(0, 0)}},
	"sched_setparam":     {{arg(0, 0)}},
	"sched_setattr":      {{arg(0, 0)}},
	"prlimit64":          {{arg(0, 0)}, {arg(2, 0)}},
}

func arg(index uint, value uint64) specs.LinuxSeccompArg {
	return specs.LinuxSeccompArg{Index: index, Value: value, Op: specs.OpEqualTo}
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
		s.Names = slices.DeleteFunc(slices.Clone(s.Names), func(n string) bool {
			_, own := ownOnly[n]
			return own || slices.Contains(deny, n)
		})
		if len(s.Names) > 0 {
			kept = append(kept, s)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ownOnly)) {
		for _, args := range ownOnly[name] {
			kept = append(kept, specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow, Args: args})
		}
	}
	sc.Syscalls = kept
	return specconv.SetupSeccomp(sc)
}
