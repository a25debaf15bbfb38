package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nondet-sandbox/nondet-sandbox/internal/scanlock"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// BakeLayout lays out what src's probes see on a runtime whose image
// brings the interpreter (Kubernetes), exactly as a scan of the same
// sources would: the worker at /nondet, the generated locales, each
// import root under /scan, and the masks of their hidden entries. It
// calls fn with them, while their sources exist, so they can be baked
// into an image; a scan with a runtime that has Capabilities.FixedBinds
// then needs to send nothing per probe. Only opts' Python, CacheDir,
// TempDir and Notes are read.
func BakeLayout(ctx context.Context, opts Options, src *Sources, fn func(binds []sandbox.Bind, masks []sandbox.Mask) error) error {
	if len(src.files) == 0 {
		return &usageError{"nothing to bake: the targets hold no Python file"}
	}
	x := &executor{opts: opts}
	dir := opts.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	var err error
	if x.scratch, err = os.MkdirTemp(dir, scanlock.Prefix+"bake-"); err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(x.scratch)
	if err := os.MkdirAll(filepath.Join(x.scratch, "shared"), 0o755); err != nil {
		return err
	}
	if err := WriteWorker(filepath.Join(x.scratch, "shared", workerPackage)); err != nil {
		return err
	}
	python := opts.Python
	if python == "" {
		python = DefaultOptions().Python
	}
	x.loc = ensureLocales(ctx, opts.CacheDir)
	x.locpath = x.loc.dir
	x.layout(src.files, &interpreter{Executable: python}, true)
	return fn(x.binds, x.masks)
}
