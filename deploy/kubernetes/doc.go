// Package manifests holds the objects of deploy/kubernetes, decoded
// strictly, for the tests that check them (sandbox/kubernetes) and run
// them on a cluster (cmd/nondet-sandbox). The binary never imports it:
// the YAML files are what users apply.
package manifests
