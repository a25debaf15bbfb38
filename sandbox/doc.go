// Package sandbox is where a probe process runs: one small interface,
// Runtime, and one subpackage per backend (host, embedded, oci, docker).
//
// A runtime starts one Python interpreter for one (shard, run) of a scan,
// with the conditions the engine planned for that run, and hands it the
// record channel as file descriptor 3. It is not for deciding what to run
// or judging answers: that is the engine's.
package sandbox
