// Package embedded runs every probe in a container created in-process with
// runc's libcontainer, from the OCI runtime spec that sandbox.Policy
// builds: read-only root of read-only binds, tmpfs for /tmp and HOME, a new
// empty network namespace, pid, ipc, uts, mount, cgroup and user
// namespaces, no capabilities, no_new_privs, a Docker-like seccomp profile,
// and memory, pids and CPU limits under one parent cgroup per scan.
//
// It needs root (or an equivalent delegation) and Linux; it is not a way to
// run anything but probe processes.
package embedded
