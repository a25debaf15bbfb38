// Package host runs probes as plain processes on the host, for machines
// without container support; the engine enforces the static gate whenever
// this runtime is chosen. It is not a sandbox: what the scanned code reads
// is not hidden, and it runs as the user who runs the scan.
//
// It is not unguarded either. Each probe starts under a shim (this binary
// re-executed, Init) that confines it and everything it starts before the
// interpreter runs: Landlock lets it write only in its own folders (its
// working directory, HOME, TMPDIR and the scan's bytecode cache) and
// refuses TCP and signals beyond its own processes where the kernel has
// them; seccomp refuses, wherever the file is, the metadata changes
// Landlock does not govern (modes, owners, times, extended attributes),
// new sockets, and what Docker's profile refuses a process without
// capabilities. So a write the static gate cannot see (a function reached
// through another name) fails instead of changing the machine. --unsafe
// lifts both the gate and the guard.
package host
