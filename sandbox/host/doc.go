// Package host runs probes as plain processes on the host, for machines
// without container support; the engine enforces the static gate whenever
// this runtime is chosen. It is not a sandbox: what the scanned code reads
// is not hidden, and it runs as the user who runs the scan.
//
// It is not unguarded either. Each probe starts under a shim (this binary
// re-executed, Init), in a session of its own, which confines it and all
// it starts before the interpreter runs: only the job's descriptors go
// on; Landlock lets it write only in its own folders (its working
// directory, HOME, and the scan's TMPDIR and bytecode cache, given as
// Job.Writable; a folder that is a link refuses the job) and refuses
// truncation, TCP and signals beyond its own processes, each where the
// kernel has it; seccomp refuses, wherever the file is, the metadata
// changes Landlock does not govern (modes, owners, times, extended
// attributes), new sockets, ptrace, and what Docker's profile refuses a
// process without capabilities. So a write the static gate cannot see
// fails instead of changing the machine. Guard says which parts this
// kernel and binary give; --unsafe lifts the gate and the guard.
package host
