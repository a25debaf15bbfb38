package sandbox

import (
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	mobyseccomp "github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// Policy is the sandbox's posture, one for every container runtime: the
// embedded and OCI runtimes feed its spec to libcontainer or an external
// runtime, and the Docker runtime applies the same choices through the
// Engine API.
type Policy struct {
	// Rootfs is an empty skeleton on the host (see PrepareRootfs), mounted
	// read-only as the container's root.
	Rootfs string
	// UserNS maps container uids 0..65535 to host uids HostIDBase.. so
	// that even a process that became root inside owns nothing outside.
	UserNS     bool
	HostIDBase uint32
	// Seccomp applies a profile like Docker's default.
	Seccomp bool
	// CgroupsPath is where the job's cgroup goes (the scan's parent plus
	// the job's id).
	CgroupsPath string
	// MemorySwap says whether the host accounts swap with memory (v1
	// memsw, or v2), so that the limit can also forbid swapping.
	MemorySwap bool
	// CPUOnlineDir is a host folder for the files bound at CPUOnline, so
	// that os.cpu_count() follows the job's CPU set; empty: not bound.
	CPUOnlineDir string
	// Rootless is the policy for a user without root: a user namespace
	// that maps one id, the caller's own, as the container's root (which
	// the probe runs as, with no capabilities), no cgroups, and rlimits in
	// their place (address space for memory, processes for pids; the CPU
	// set through the process's affinity).
	Rootless bool
}

// topLevelLibDirs are symlinks into /usr on a merged-/usr system and real
// directories elsewhere.
var topLevelLibDirs = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// PrepareRootfs makes the read-only root's skeleton: mountpoints for the
// system, for every bind target and HOME in mountpoints, the merged-/usr
// symlinks, and passwd/group files naming the probe users. Every mountpoint
// is made here, on the host, because inside a user namespace the
// container's root cannot create directories in a root-owned tree.
func PrepareRootfs(dir string, mountpoints []string) error {
	dirs := append([]string{"proc", "dev", "usr", "etc", "tmp", filepath.Dir(CPUOnline)}, mountpoints...)
	for _, d := range dirs {
		if err := mkdirAll(dir, d); err != nil {
			return err
		}
	}
	// The mountpoint of a file is a file.
	if err := os.WriteFile(filepath.Join(dir, CPUOnline), nil, 0o444); err != nil && !os.IsExist(err) && !os.IsPermission(err) {
		return err
	}
	// Some runtimes give a tmpfs the mode of the directory it covers.
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "ld.so.cache"), nil, 0o644); err != nil {
		return err
	}
	var passwd, group strings.Builder
	passwd.WriteString("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n")
	group.WriteString("root:x:0:\n")
	for _, uid := range ProbeUIDs {
		fmt.Fprintf(&passwd, "%s:x:%d:%d::/home/%s:/usr/sbin/nologin\n", ProbeUser(uid), uid, uid, ProbeUser(uid))
		fmt.Fprintf(&group, "%s:x:%d:\n", ProbeUser(uid), uid)
	}
	passwd.WriteString("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	group.WriteString("nogroup:x:65534:\n")
	if err := os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte(passwd.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "group"), []byte(group.String()), 0o644); err != nil {
		return err
	}
	for _, d := range topLevelLibDirs {
		fi, err := os.Lstat("/" + d)
		if err != nil {
			continue
		}
		dst := filepath.Join(dir, d)
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink("/" + d)
			if err != nil {
				return err
			}
			if cur, err := os.Readlink(dst); err == nil && cur == target {
				continue
			}
			_ = os.Remove(dst)
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
		} else if err := mkdirAll(dir, d); err != nil {
			return err
		}
	}
	return nil
}

// mkdirAll makes rel under root with every level 0755 whatever the umask:
// a container's user must be able to reach each mountpoint.
func mkdirAll(root, rel string) error {
	p := root
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		if part == "" || part == "." {
			continue
		}
		p = filepath.Join(p, part)
		err := os.Mkdir(p, 0o755)
		switch {
		case os.IsExist(err):
			continue // made before, with its mode set then
		case err != nil:
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Mountpoints lists what PrepareRootfs must create for a job.
func Mountpoints(job *Job) []string {
	out := []string{strings.TrimPrefix(job.Cond.Home, "/")}
	for _, b := range job.Binds {
		out = append(out, strings.TrimPrefix(b.Target, "/"))
	}
	return out
}

func roBind(src, dst string) specs.Mount {
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind", "ro", "nosuid", "nodev"}}
}

// pidShim keeps the interpreter off pid 1 and sets its pid exactly: a
// fresh PID namespace would give every run the same pid (hiding a
// function's dependence on it), and the runtime's own start-up forks a
// varying number of processes, so the shell forks until a child's pid
// reaches the run's floor; the interpreter is the next fork. The shell
// stays pid 1 and reports the interpreter's exit status (128+n for a
// signal, which DecodeShimStatus turns back).
//
// The shell closes the record channel and the input once the job has them:
// a probe could otherwise open them again through /proc/1/fd.
const pidShim = `t=$1; shift; ` + ForkToFloor + `; ` + RunAndLetGo

// ForkToFloor is the pid shim's loop, in sh: it forks until a child's pid
// reaches $t, the run's floor, so the next fork (the job) is above it.
// Every runtime's shell shim spells the floor with it.
const ForkToFloor = `while :; do : & p=$!; wait $p; [ "$p" -ge "$t" ] && break; done`

// RunAndLetGo runs "$@" as a child, so the shell stays pid 1; closes the
// record channel, the input and the marks (fds 3 to 5) once the child has
// them; and exits as the child did.
const RunAndLetGo = `"$@" & p=$!; exec 3>&- 4<&- 5>&-; wait $p; exit $?`

// PidShim is argv run by the pid shim, in a PID namespace of its own,
// above floor.
func PidShim(floor int, argv []string) []string {
	return append([]string{"/bin/sh", "-c", pidShim, "sh", strconv.Itoa(floor)}, argv...)
}

// asShim limits the address space of the job it then becomes (in KiB):
// the rootless policy's memory limit.
const asShim = `ulimit -v "$1" || exit 125; shift; exec "$@"`

// Spec builds the OCI runtime spec of one job.
func (p *Policy) Spec(job *Job) (*specs.Spec, error) {
	cond := job.Cond
	if p.Rootless {
		cond.UID, cond.GID = 0, 0 // the one id mapped (see below)
	}
	umask := cond.Umask
	home, tmpfsSize := job.HomeDir(), job.Tmpfs()
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "strictatime", "mode=755", "size=64k"}},
		// A devpts instance of the container's own, as any container has:
		// code that opens a pseudo-terminal (pty.openpty) runs as it does
		// elsewhere, and sees no terminal of the host.
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
	}
	for _, d := range SystemDirs {
		mounts = append(mounts, roBind(d, d))
	}
	mounts = append(mounts, specs.Mount{Destination: "/etc/ld.so.cache", Type: "bind", Source: "/etc/ld.so.cache",
		Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
	for _, d := range topLevelLibDirs {
		if fi, err := os.Lstat("/" + d); err == nil && fi.IsDir() {
			mounts = append(mounts, roBind("/"+d, "/"+d))
		}
	}
	size := "size=" + strconv.FormatInt(tmpfsSize, 10)
	// The tmpfs mounts go before the binds, so a bind under /tmp (an
	// interpreter in a virtual environment there) lands on top of it.
	mounts = append(mounts,
		specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=1777", size}},
		specs.Mount{Destination: home, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=700", size,
			fmt.Sprintf("uid=%d", cond.UID), fmt.Sprintf("gid=%d", cond.GID)}},
	)

	binds := append([]Bind(nil), job.Binds...)
	sort.SliceStable(binds, func(i, j int) bool { return binds[i].Target < binds[j].Target })
	for _, b := range binds {
		mounts = append(mounts, roBind(b.Source, b.Target))
	}
	if cond.CPUs != "" && p.CPUOnlineDir != "" {
		online, err := CPUOnlineFile(p.CPUOnlineDir, cond.CPUs)
		if err != nil {
			return nil, fmt.Errorf("cpu set: %w", err)
		}
		mounts = append(mounts, roBind(online, CPUOnline))
	}
	for _, m := range job.Masks {
		if m.Dir {
			mounts = append(mounts, specs.Mount{Destination: m.Target, Type: "tmpfs", Source: "tmpfs",
				Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k", "mode=555"}})
		} else {
			mounts = append(mounts, roBind("/dev/null", m.Target))
		}
	}
	ns := []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
		{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.CgroupNamespace},
	}
	var uidMap, gidMap []specs.LinuxIDMapping
	switch {
	case p.Rootless:
		// One id each, the caller's own: libcontainer wants the
		// container's root mapped, and a user without root has no other
		// id to give.
		ns = append(ns, specs.LinuxNamespace{Type: specs.UserNamespace})
		uidMap = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getuid()), Size: 1}}
		gidMap = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getgid()), Size: 1}}
	case p.UserNS:
		ns = append(ns, specs.LinuxNamespace{Type: specs.UserNamespace})
		uidMap = []specs.LinuxIDMapping{{ContainerID: 0, HostID: p.HostIDBase, Size: 65536}}
		gidMap = []specs.LinuxIDMapping{{ContainerID: 0, HostID: p.HostIDBase, Size: 65536}}
	}
	rlimits := []specs.POSIXRlimit{
		{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024},
		{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
	}
	if p.Rootless {
		// Counted per user namespace (Linux 5.14 on), so only the probe's
		// own processes count against the pids limit. The address space
		// is limited by the shell that starts the job (asShim), not here:
		// libcontainer's init would run under it too.
		if n := job.Limits.Pids; n > 0 {
			rlimits = append(rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(n), Soft: uint64(n)})
		}
	}

	res := &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	if m := job.Limits.MemoryBytes; m > 0 {
		res.Memory = &specs.LinuxMemory{Limit: &m}
		if p.MemorySwap {
			res.Memory.Swap = &m // memory+swap equal to memory: no swap
		}
	}
	if n := job.Limits.Pids; n > 0 {
		res.Pids = &specs.LinuxPids{Limit: &n}
	}
	if c := job.Limits.CPUs; c > 0 || cond.CPUs != "" {
		res.CPU = &specs.LinuxCPU{Cpus: cond.CPUs}
		if c > 0 {
			period := uint64(100000)
			quota := int64(c * float64(period))
			res.CPU.Period, res.CPU.Quota = &period, &quota
		}
	}

	args := job.Argv
	if cond.PidFloor > 0 {
		args = PidShim(cond.PidFloor, job.Argv)
	}
	if m := job.Limits.MemoryBytes; p.Rootless && m > 0 {
		args = append([]string{"/bin/sh", "-c", asShim, "sh", strconv.FormatInt(m>>10, 10)}, args...)
	}
	spec := &specs.Spec{
		Version: specs.Version,
		Root:    &specs.Root{Path: p.Rootfs, Readonly: true},
		Process: &specs.Process{
			Args: args,
			Env:  job.Env,
			Cwd:  job.Dir,
			User: specs.User{UID: uint32(cond.UID), GID: uint32(cond.GID), Umask: &umask},
			// Empty sets: every capability dropped. Not nil: the seccomp
			// profile reads the bounding set.
			Capabilities:    &specs.LinuxCapabilities{},
			NoNewPrivileges: true,
			Rlimits:         rlimits,
		},
		Hostname: cond.Hostname,
		Mounts:   mounts,
		Linux: &specs.Linux{
			Namespaces:  ns,
			UIDMappings: uidMap,
			GIDMappings: gidMap,
			CgroupsPath: p.CgroupsPath,
			Resources:   res,
			MaskedPaths: []string{
				"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
				"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
				"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
			},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	if p.Rootless {
		// The probe is the namespace's root here, and would own /dev.
		spec.Linux.ReadonlyPaths = append(spec.Linux.ReadonlyPaths, "/dev")
		spec.Linux.CgroupsPath, spec.Linux.Resources = "", nil // the CPU set: embedded pins the init
	}
	if p.Seccomp {
		sc, err := SeccompProfile(spec)
		if err != nil {
			return nil, err
		}
		spec.Linux.Seccomp = sc
	}
	return spec, nil
}

// SeccompProfile is Docker's default profile (moby's) for spec's process
// and its capabilities, for the native architecture only: compiling it
// for x86 and x32 as well costs about 45 ms per process, and a
// foreign-architecture syscall is then refused outright.
func SeccompProfile(spec *specs.Spec) (*specs.LinuxSeccomp, error) {
	sc, err := mobyseccomp.GetDefaultProfile(spec)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	if runtime.GOARCH == "amd64" {
		sc.Architectures = []specs.Arch{specs.ArchX86_64}
	}
	return sc, nil
}

// DecodeShimStatus turns the pid shim's exit status back into the
// interpreter's: 128+n means it was killed by signal n.
func DecodeShimStatus(code int) (int, string) {
	if code > 128 && code < 128+65 {
		return 0, SignalName(code - 128)
	}
	return code, ""
}

// SignalName names a signal number as the report shows it.
func SignalName(n int) string {
	if s := unix.SignalName(syscall.Signal(n)); s != "" {
		return s
	}
	return fmt.Sprintf("signal %d", n)
}
