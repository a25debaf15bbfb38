// Package kubernetes is the runtime that runs each (shard, run) of a scan as
// a Pod of a Kubernetes cluster, through client-go: the cluster of the
// current kubeconfig (or --kubeconfig), in one namespace. The sandbox
// policy and the run's conditions are the pod spec: a read-only root,
// the run's user (never root), hostname, working directory, umask and pid,
// memory-backed emptyDirs for /tmp and HOME, no capabilities, no privilege
// escalation, the runtime's default seccomp profile, no service account
// token, no service links, resource limits, an active deadline, and a
// runtime class (gVisor where the cluster has one).
//
// The scanned tree (and the worker, and the generated locales) reaches the
// pod as a gzipped tar on the standard input of an init container, which
// unpacks it into a memory-backed emptyDir that the probe mounts
// read-only: no size limit of a ConfigMap, no registry, no shared volume.
// With Options.Baked the image already holds them at their places (built
// from BakeContext), nothing is sent, and the probe's first shell checks
// the image's digest of them against the scan's before anything runs.
// The worker's request comes on the probe container's own standard input,
// which only the worker holds once it runs; its records come back over
// the container's log, which only the worker writes: the scanned code's
// output goes nowhere. A cluster gives pods a network unless it is told
// not to, so the worker checks from inside, before anything scanned runs,
// that nothing but loopback is reachable, and refuses otherwise.
//
// Each scan holds a Lease while it runs; a later scan sweeps the pods and
// the lease of a scan whose lease has expired (a coordinator killed with
// SIGKILL), from any machine.
//
// It is not a scheduler of its own: the cluster places the pods.
package kubernetes
