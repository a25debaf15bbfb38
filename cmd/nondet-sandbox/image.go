package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/images"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/docker"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox/kubernetes"
)

type imageOptions struct {
	tag     string
	offline bool
}

func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the probe image the docker runtime runs, or one that holds a scan's files",
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
	var bake bakeOptions
	bakeCmd := &cobra.Command{
		Use:   "bake [flags] TARGET...",
		Short: "Build a probe image that already holds TARGET's files, for --runtime kubernetes --baked",
		Long: `Build an image on the probe image (--image) that holds what a kubernetes
scan of TARGET sends each pod (the scanned import roots, the worker and
the generated locales), where the pods find them. It takes run's flags
and config, so give it those the scan will have (--exclude, --shard, a
pyproject.toml): they decide which folders a pod sees. Make the image
reach the nodes (push it, or import it into their container runtime),
then scan with --runtime kubernetes --image TAG --baked: no pod is sent
anything, and an image that holds other files stops the scan with a
message saying so. The tag names the files' digest unless --tag says
otherwise, so a node never runs an older bake under the same name.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := bake.run.configure(cmd.Flags(), args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			bake.run.configDir = dir
			return runImageBake(cmd.Context(), bake, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	bake.run.AddFlags(bakeCmd.Flags())
	bakeCmd.Flags().StringVar(&bake.tag, "tag", "", "the image's name (default nondet-sandbox-baked:DIGEST, the first 12 digits of its files' digest)")
	cmd.AddCommand(bakeCmd)
	return cmd
}

type bakeOptions struct {
	run runOptions // the scan's own flags, which decide what a pod sees
	tag string
}

// runImageBake lays out the targets as a kubernetes scan with the same
// flags would, and builds the image that holds them.
func runImageBake(ctx context.Context, opts bakeOptions, args []string, stdout, stderr io.Writer) error {
	opts.run.runtimeName = "kubernetes"
	sel, err := opts.run.sources(ctx, args, stderr)
	if err != nil {
		return err
	}
	if sel == nil {
		return usageErrorf("nothing to bake: every file of the targets is excluded")
	}
	tag := opts.tag
	err = engine.BakeLayout(ctx, engine.Options{Python: opts.run.python, CacheDir: cacheDir(), Notes: stderr}, sel.src, func(binds []sandbox.Bind, masks []sandbox.Mask) error {
		digest, err := kubernetes.Digest(binds, masks)
		if err != nil {
			return err
		}
		if tag == "" {
			tag = "nondet-sandbox-baked:" + digest[:12]
		}
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			baked, err := kubernetes.BakeContext(pw, opts.run.image, binds, masks)
			if err == nil && baked != digest {
				err = fmt.Errorf("the files changed while they were baked: bake again")
			}
			pw.CloseWithError(err)
			done <- err
		}()
		err = docker.BuildContext(ctx, pr, tag, stderr)
		pr.CloseWithError(err)
		if berr := <-done; berr != nil {
			err = berr
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tag)
	return nil
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
