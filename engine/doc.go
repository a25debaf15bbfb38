// Package engine plans, runs and judges a scan: it discovers the functions
// under the targets (by parsing, never importing), plans which rungs run
// under which conditions in which shards, drives one worker per (shard, run)
// through a sandbox.Runtime, compares canonical answers across runs,
// confirms each finding alone, names its causes, and fills in the report
// (package report holds its types and renders it).
//
// Two kinds of code meet here. The executor (executor.go, job.go, probe.go)
// owns the scan's resources and runs (shard, run) tasks through the
// runtime's session; it knows nothing of verdicts. The phases are functions
// of data around it: planRuns and planShards (plan.go), judge and judgeAll
// (judge.go), judgeAlone and bisection.step (confirm.go), planAttribution
// and nameCauses (attribute.go). The scan type only sequences them, and
// each phase is tested without Python.
//
// It is not where isolation happens (that is sandbox/) and not where the
// static policy lives (that is gate/). It prints nothing itself.
package engine
