// Package oci runs every probe through an external OCI runtime binary
// (runc, crun, gVisor's runsc), handing it a bundle made from the same
// sandbox.Policy spec the embedded runtime uses. It is for users who want
// another runtime, gVisor for the strongest isolation; it is not a
// container manager.
package oci
