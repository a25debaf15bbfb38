package engine

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// linkBinds makes the links that leave a scanned tree lead inside the
// sandbox where they lead on the host. Debian ships some packages' data as
// relative links into /usr/share (babel/locale-data ->
// ../../../../share/python-babel-localedata/locale-data); bound at
// /scan/N such a link climbs to /share/..., which does not exist, and every
// call that loads the data raises inside while it answers on the host.
//
// For each such link the folder it leads to is bound read-only where the
// link arrives inside, under three rules, because the tree is untrusted
// and chooses its links:
//   - the target lies in what the sandbox shows anyway (show: the system
//     directories), never a home directory or any other host path;
//   - where it arrives is a new top-level name of the container, never
//     under one the container keeps for itself (reserved: /etc, /tmp,
//     /usr, the worker's, the trees') or another bind;
//   - a link already right inside (an absolute link into /usr) is left.
//
// binds are the binds made so far, scans those of the scanned trees.
func linkBinds(scans, binds []sandbox.Bind, show []string, reserved func(top string) bool) []sandbox.Bind {
	want := map[string]string{} // target inside -> host folder
	for _, tree := range scans {
		_ = filepath.WalkDir(tree.Source, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(tree.Source, p)
			if d.IsDir() && p != tree.Source && filepath.Dir(rel) == "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // masked inside: see hiddenEntries
			}
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			link, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			arrives := link
			if !path.IsAbs(link) {
				arrives = path.Join(tree.Target, path.Dir(filepath.ToSlash(rel)), link)
			}
			host, err := filepath.EvalSymlinks(p)
			if err != nil || within(arrives, tree.Target) {
				return nil // dangling on the host too, or inside its tree
			}
			if seenAs(arrives, binds) == host || !shown(host, show) {
				return nil
			}
			src, dst := host, arrives
			if info, err := os.Stat(host); err != nil {
				return nil
			} else if !info.IsDir() {
				// A file is reached through its folder: a mountpoint for a
				// file would have to be a file.
				if filepath.Base(host) != path.Base(arrives) {
					return nil
				}
				src, dst = filepath.Dir(host), path.Dir(arrives)
			}
			top, _, _ := strings.Cut(strings.TrimPrefix(dst, "/"), "/")
			if top == "" || reserved(top) || insideAny(dst, binds) {
				return nil
			}
			if _, taken := want[dst]; !taken {
				want[dst] = src
			}
			return nil
		})
	}
	var targets []string
	for dst := range want {
		targets = append(targets, dst)
	}
	sort.Strings(targets)
	var out []sandbox.Bind
	for _, dst := range outermost(targets) {
		out = append(out, sandbox.Bind{Source: want[dst], Target: dst})
	}
	return out
}

// seenAs is the host path a path inside the sandbox shows, or "".
func seenAs(inside string, binds []sandbox.Bind) string {
	for _, b := range binds {
		if within(inside, b.Target) {
			if real, err := filepath.EvalSymlinks(b.Source + strings.TrimPrefix(inside, b.Target)); err == nil {
				return real
			}
			return ""
		}
	}
	return ""
}

// shown is whether a host path lies in one of the folders dirs, taken
// with their links resolved.
func shown(host string, dirs []string) bool {
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil && within(host, real) {
			return true
		}
	}
	return false
}

func insideAny(p string, binds []sandbox.Bind) bool {
	for _, b := range binds {
		if within(p, b.Target) || within(b.Target, p) {
			return true
		}
	}
	return false
}
