// Package sandbox is where a probe process runs: one small interface,
// Runtime, with its Session, and one subpackage per backend (embedded,
// rootless, oci, docker, kubernetes, host), each of which registers itself
// (Register: its name, its place in --runtime auto, what it can do, how to
// make one), so the command line lists, completes and chooses runtimes
// from the registry and never by name.
//
// A runtime starts one Python interpreter for one (shard, run) of a scan,
// with the conditions the engine planned for that run, and hands it the
// request, the record channel and the mark file (fds 3-5 passed, or FIFOs,
// or a pod's stdin and log). It is not for deciding what to run or judging
// answers: that is the engine's.
//
// The varied conditions are one table, Varieds (conditions.go): each is one
// declaration of its name, planned values, who applies it and how (the
// environment, the container's Conditions, the working directory), how it
// is checked when read from a report, shown and attributed. The planner,
// the job builder, attribution, replay's checks and every renderer read
// that table; a runtime reads only the Conditions it applies, and says in
// its support list which it cannot.
package sandbox
