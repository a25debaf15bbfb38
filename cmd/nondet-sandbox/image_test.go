package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/nondet-sandbox/nondet-sandbox/internal/testenv"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
)

// TestImageBuildNeedsNoCheckout builds the probe image from what the
// binary embeds, from a folder that is no checkout, under a tag of its
// own; on a machine with no registry that takes the offline fallback. The
// image then serves the docker runtime.
func TestImageBuildNeedsNoCheckout(t *testing.T) {
	testenv.Integration(t)
	testenv.NeedRoot(t)
	const tag = "nondet-sandbox-probe:image-build-test"
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	err := runImageBuild(context.Background(), imageOptions{tag: tag}, &out, &errOut)
	if errors.Is(err, sandbox.ErrNoEngine) {
		testenv.Skip(t, "no Docker engine: "+err.Error())
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	defer exec.Command("docker", "rmi", tag).Run()
	if !strings.Contains(out.String(), "built "+tag) {
		t.Errorf("stdout: %q", out.String())
	}
	rt, err := docker.New(context.Background(), tag)
	if err != nil {
		t.Fatalf("the docker runtime cannot use the built image: %v", err)
	}
	rt.Close()
}
