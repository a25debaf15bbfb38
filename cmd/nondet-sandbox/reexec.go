package main

import (
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
)

// reexec runs the container side of the embedded runtime when this binary
// was re-executed as a container's init, and the host runtime's confining
// shim when it was re-executed as one; it never returns then.
func reexec() {
	embedded.Init()
	host.Init()
}
