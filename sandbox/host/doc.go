// Package host runs probes as plain processes on the host: no isolation at
// all. It exists for machines without container support; the engine enforces
// the static gate whenever this runtime is chosen. It is not a sandbox.
package host
