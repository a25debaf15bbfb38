// Package rootless is the sandbox for a user without root: libcontainer's
// rootless mode inside this binary, fed the same policy as the embedded
// runtime as far as the kernel lets a user without root have it. User,
// mount, network, pid, ipc and uts namespaces, read-only binds, tmpfs,
// seccomp, no capabilities and no_new_privs are the same; the user
// namespace maps only the caller's own uid (seen inside as the run's probe
// uid, so the uid is still varied); rlimits stand in for the cgroup limits
// (address space for memory, processes for pids, the CPU set through the
// process's affinity), and the CPU share is not limited.
//
// It is not for root, which gets the embedded runtime and real cgroups.
package rootless
