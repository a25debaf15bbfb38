//go:build seccomp && cgo

package embedded

const seccompBuilt = true
