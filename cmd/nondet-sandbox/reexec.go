package main

import "github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"

// reexec runs the container side of the embedded runtime when this binary
// was re-executed as a container's init; it never returns then.
func reexec() {
	embedded.Init()
}
