package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/images"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
)

type imageOptions struct {
	tag     string
	offline bool
}

func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the probe image the docker runtime runs",
	}
	var opts imageOptions
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the probe image from the Dockerfile in this binary; with no registry, from a debootstrap base",
		Long: `Build the probe image (the interpreter, locales, time zones and libfaketime
that --runtime docker probes with) from the Dockerfile embedded in this
binary: no checkout is needed. The engine first builds on the official
Python base; when no registry can be reached it builds the base offline
instead, with debootstrap from this machine's Debian mirror (as root).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runImageBuild(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	build.Flags().StringVar(&opts.tag, "tag", docker.DefaultImage, "the image's name")
	build.Flags().BoolVar(&opts.offline, "offline", false, "skip the registry: build the base with debootstrap at once")
	cmd.AddCommand(build)
	return cmd
}

func runImageBuild(ctx context.Context, opts imageOptions, stdout, stderr io.Writer) error {
	if !opts.offline {
		err := docker.BuildImage(ctx, images.Dockerfile, opts.tag, stderr)
		if err == nil {
			fmt.Fprintf(stdout, "built %s\n", opts.tag)
			return nil
		}
		if errors.Is(err, sandbox.ErrNoEngine) || ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(stderr, "nondet-sandbox: the registry's base could not be used (%v); building the base offline with debootstrap\n", err)
	}
	dir, err := os.MkdirTemp("", "nondet-sandbox-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script, err := images.WriteTree(dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "PROBE_IMAGE="+opts.tag)
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the image offline failed (%v); see the lines above", err)
	}
	fmt.Fprintf(stdout, "built %s\n", opts.tag)
	return nil
}
