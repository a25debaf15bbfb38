// Package gate is static policy over the facts discovery collects from a
// function's own body: whether running it could change the world outside the
// process (file writes, processes, sockets, deletes), and which sources of
// nondeterminism it smells of.
//
// Under a container the gate is advisory: the container, not this package,
// stops writes. It is enforced only for the host runtime. It sees a
// function's own body and the module-level functions it calls in the same
// module; a callee in another module or a C extension is invisible to it.
package gate
