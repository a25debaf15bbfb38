// Package rootless is the sandbox for a user without root: the embedded
// runtime (embedded.Runtime, which this package's Runtime is) in
// libcontainer's rootless mode, fed the same policy as far as the kernel
// lets a user without root have it. This package gives that mode its
// options (a state directory the caller owns) and its registration; the
// containers are embedded's. User, mount, network, pid, ipc and uts
// namespaces, read-only binds, tmpfs, seccomp, no capabilities and
// no_new_privs are the same; the user namespace maps only the caller's own
// uid, so the probe runs as that namespace's root, with no capabilities,
// and the uid is not varied (Applies says so); rlimits stand in for the
// cgroup limits (address space for memory, processes for pids, the CPU
// set through the process's affinity), and the CPU share is not limited.
//
// It is not for root, which gets the embedded runtime and real cgroups.
package rootless
