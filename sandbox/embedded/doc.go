// Package embedded runs every probe in a container created in-process with
// runc's libcontainer, from the OCI runtime spec that sandbox.Policy
// builds: read-only root of read-only binds, tmpfs for /tmp and HOME, a new
// empty network namespace, pid, ipc, uts, mount, cgroup and user
// namespaces, no capabilities, no_new_privs, a Docker-like seccomp profile,
// and memory, pids and CPU limits under one parent cgroup per scan.
//
// As root it makes full containers; with Options.Rootless it runs the
// same spec in libcontainer's rootless mode, for a user without root, on
// unprivileged user namespaces (sandbox/rootless). Linux only; it is not
// a way to run anything but probe processes.
package embedded
