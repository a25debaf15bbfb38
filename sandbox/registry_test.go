package sandbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/embedded"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/host"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/kubernetes"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/oci"
	_ "github.com/nondet-sandbox/nondet-sandbox/sandbox/rootless"
)

func names(rs []sandbox.Registration) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// TestRegistry: each backend registers itself once; the list, auto's order
// for root and for others, and what each can do come from there.
func TestRegistry(t *testing.T) {
	if got := names(sandbox.Registrations()); !slices.Equal(got, []string{"embedded", "rootless", "oci", "docker", "kubernetes", "host"}) {
		t.Errorf("registrations: %v", got)
	}
	if got := names(sandbox.AutoOrder(true)); !slices.Equal(got, []string{"embedded", "rootless", "docker"}) {
		t.Errorf("auto for root: %v", got)
	}
	if got := names(sandbox.AutoOrder(false)); !slices.Equal(got, []string{"rootless", "docker"}) {
		t.Errorf("auto for others: %v", got)
	}
	for _, r := range sandbox.Registrations() {
		if r.New == nil || r.Help == "" {
			t.Errorf("%s: registered without New or Help", r.Name)
		}
		if want := r.Name == "docker" || r.Name == "kubernetes"; r.ImageInterpreter != want {
			t.Errorf("%s: ImageInterpreter %v", r.Name, r.ImageInterpreter)
		}
	}
	if oci, _ := sandbox.Lookup("oci"); oci.Variant == nil || oci.Variant(sandbox.Settings{OCIBinary: "/usr/local/bin/runsc"}) != "runsc" {
		t.Errorf("the oci runtime does not name its binary")
	}
	if _, ok := sandbox.Lookup("podman"); ok {
		t.Errorf("an unregistered runtime was found")
	}
	host, _ := sandbox.Lookup("host")
	if rt, err := host.New(context.Background(), sandbox.Settings{}); err != nil || rt.Isolated() {
		t.Errorf("host: %v %v", rt, err)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("a name registered twice was taken")
		}
	}()
	sandbox.Register(sandbox.Registration{Name: "host"})
}
