package main

// The runtimes this command offers: each registers itself (its name, its
// place in --runtime auto, what it can do), so adding one is its package
// and one line here.
import (
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/kubernetes"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/oci"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/rootless"
)
