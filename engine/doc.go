// Package engine plans, runs and judges a scan: it discovers the functions
// under the targets (by parsing, never importing), plans which rungs run
// under which conditions in which shards, drives one worker per (shard, run)
// through a sandbox.Runtime, compares canonical answers across runs,
// confirms each finding alone, names its causes, and fills in the report
// (package report holds its types and renders it).
//
// It is not where isolation happens (that is sandbox/) and not where the
// static policy lives (that is gate/). It prints nothing itself.
package engine
