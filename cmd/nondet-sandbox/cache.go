package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nondet-sandbox/nondet-sandbox/engine"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// secretName is the file of the secret that seals the cache's entries.
const secretName = ".secret"

// noCacheVar turns the verdict cache off, as --no-cache does.
const noCacheVar = "NONDET_SANDBOX_NO_CACHE"

// projectCache is the verdict cache's folder in a project's root, as
// ruff keeps .ruff_cache: it holds a .gitignore of everything.
const projectCache = ".nondet-sandbox-cache"

// verdictCache is where a scan keeps its verdicts and the secret that
// seals them; "" when it keeps none (--no-cache, or no secret to be had,
// said on notes).
func (opts *runOptions) verdictCache(sel *selection, notes io.Writer) (string, []byte) {
	if opts.noCache {
		return "", nil
	}
	dir := opts.cacheDirFor(sel.pkgs, sel.targets)
	if dir == "" {
		return "", nil
	}
	// A folder the user named keeps its own secret, so a CI job's cache
	// step keeps both; one found in the project's root might have come
	// with the tree, so the secret that seals it is the user's own.
	secretDir := cacheDir()
	if opts.cacheDir != "" {
		secretDir = dir
	}
	secret, err := cacheSecret(secretDir)
	if err != nil {
		fmt.Fprintf(notes, "nondet-sandbox: no verdict cache: %v\n", err)
		return "", nil
	}
	return dir, secret
}

// cacheDirFor is the cache folder of a scan of targets: --cache-dir, the
// user's for installed distributions, else the project root's of the
// first target.
func (opts *runOptions) cacheDirFor(pkgs []engine.Package, targets []engine.Target) string {
	switch {
	case opts.cacheDir != "":
		abs, _ := filepath.Abs(opts.cacheDir)
		return abs
	case len(pkgs) > 0:
		if dir := cacheDir(); dir != "" {
			return filepath.Join(dir, "verdicts")
		}
		return ""
	case len(targets) > 0:
		dir := targets[0].Path
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			dir = filepath.Dir(dir)
		}
		return filepath.Join(projectRoots()(dir), projectCache)
	}
	return ""
}

// cacheSecret is the user's own key that seals every cache entry a scan
// writes, made on first use: a folder that came with a tree cannot hold
// an entry a scan will read.
func cacheSecret(dir string) ([]byte, error) {
	if dir == "" {
		return nil, errors.New("no cache folder for the secret that seals it ($XDG_CACHE_HOME or $HOME)")
	}
	path := filepath.Join(dir, secretName)
	if b, err := readSecret(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readSecret(path) // another scan made it first
	}
	if err != nil {
		return nil, err
	}
	if _, err := fh.Write(b); err != nil {
		fh.Close()
		return nil, err
	}
	return b, fh.Close()
}

// readSecret reads the secret only when it is the user's own regular
// file that no one else may read or write.
func readSecret(path string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	if !st.Mode().IsRegular() || sys == nil || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o077 != 0 || st.Size() < 16 || st.Size() > 4096 {
		return nil, fmt.Errorf("%s is not your own private file of 16 to 4096 bytes: remove it and a scan makes a new one", path)
	}
	return io.ReadAll(fh)
}

// cacheKey is what of the sandbox's settings shapes a verdict that the
// engine cannot see: the OCI binary, the image and how it is run.
func (o *sandboxOptions) cacheKey(rt sandbox.Runtime) string {
	return fmt.Sprintf("variant %q image %q baked %v seccomp %v userns %v", runtimeVariant(rt, *o), o.image, o.baked, o.seccomp, o.userns)
}

func newCleanCommand() *cobra.Command {
	var dir string
	var user bool
	cmd := &cobra.Command{
		Use:   "clean [PATH]",
		Short: "Empty the verdict cache of the project PATH is in (default: the working directory's)",
		Long: "Empty the verdict cache, so the next scan judges every module afresh: the project's " + projectCache +
			" (found from PATH as a scan finds the project's root), the folder --cache-dir names, or with --packages the user's cache of --package and --all-packages scans.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := runOptions{cacheDir: dir}
			var pkgs []engine.Package
			if user {
				pkgs = []engine.Package{{}}
			}
			path := "."
			if len(args) > 0 {
				path = args[0]
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			target := opts.cacheDirFor(pkgs, []engine.Target{{Path: abs}})
			if target == "" {
				return usageErrorf("no cache folder: give --cache-dir")
			}
			n, err := engine.Clean(target)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "nondet-sandbox: removed %d entries of the verdict cache %s\n", n, target)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "cache-dir", "", "empty this `DIR`, as a scan's --cache-dir names it")
	cmd.Flags().BoolVar(&user, "packages", false, "empty the user's cache of --package and --all-packages scans")
	return cmd
}
