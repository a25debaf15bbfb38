package kubernetes

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// tree is what a scan's pods receive: every bind of a job (the scanned
// trees, the worker, the generated locales) as one gzipped tar, each bind
// under b<i>/, and the room it takes unpacked in a memory-backed emptyDir.
// With a baked image, nothing is sent: digest names the binds' contents,
// which the image must hold at their targets.
type tree struct {
	binds  []sandbox.Bind
	data   []byte
	room   int64
	digest string
}

// treeFor is the tree of a job's binds, made once per scan and once more
// when the binds change (the engine adds the code folder after discovery).
func (s *session) treeFor(job *sandbox.Job) (*tree, error) {
	var key strings.Builder
	for _, b := range job.Binds {
		fmt.Fprintf(&key, "%s>%s\n", b.Source, b.Target)
	}
	for _, m := range job.Masks {
		fmt.Fprintf(&key, "-%s\n", m.Target)
	}
	s.treeMu.Lock()
	defer s.treeMu.Unlock()
	if s.tree != nil && s.treeKey == key.String() {
		return s.tree, nil
	}
	var t *tree
	var err error
	if s.opts.Baked {
		var d string
		if d, err = Digest(job.Binds, job.Masks); err == nil {
			t = &tree{binds: job.Binds, digest: d}
		}
	} else {
		t, err = pack(job.Binds, job.Masks)
	}
	if err != nil {
		return nil, err
	}
	s.tree, s.treeKey = t, key.String()
	return t, nil
}

// entry is one file, folder or link of a bind, as the pods see it.
type entry struct {
	bind int    // the bind's index
	rel  string // slash-separated, relative to the bind's source ("." for its root)
	hdr  tar.Header
	path string // on this machine, for a regular file's bytes
}

// walk visits every entry of the binds' sources the pods receive,
// leaving out what is masked (hidden entries of a home directory):
// regular files, folders and symbolic links, all readable by the probe's
// user, in a fixed order. Only the worker reads them, read-only.
func walk(binds []sandbox.Bind, masks []sandbox.Mask, visit func(e *entry) error) error {
	var total int64
	for i, b := range binds {
		skip := map[string]bool{}
		for _, m := range masks {
			if rel, ok := strings.CutPrefix(m.Target, b.Target+"/"); ok {
				skip[filepath.Join(b.Source, rel)] = true
			}
		}
		err := filepath.WalkDir(b.Source, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == b.Source {
					return err
				}
				return nil // unreadable: the probe cannot read it either
			}
			if skip[path] {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			rel, _ := filepath.Rel(b.Source, path)
			e := &entry{bind: i, rel: filepath.ToSlash(rel), path: path}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			e.hdr.ModTime = info.ModTime()
			switch {
			case d.IsDir():
				e.hdr.Typeflag, e.hdr.Mode = tar.TypeDir, 0o755
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return nil
				}
				e.hdr.Typeflag, e.hdr.Linkname, e.hdr.Mode = tar.TypeSymlink, target, 0o777
			case d.Type().IsRegular():
				e.hdr.Typeflag, e.hdr.Size, e.hdr.Mode = tar.TypeReg, info.Size(), int64(info.Mode().Perm()|0o444)
				total += info.Size()
				if total > maxTree {
					return fmt.Errorf("the scanned trees hold more than %d MiB, more than a pod of the kubernetes runtime is given: narrow the scan (--exclude, or split it with --shard)", maxTree>>20)
				}
			default:
				return nil // devices, sockets, FIFOs: nothing a module imports
			}
			return visit(e)
		})
		if err != nil {
			return fmt.Errorf("kubernetes: reading %s for the pods: %w", b.Source, err)
		}
	}
	return nil
}

// copyFile writes a regular entry's bytes to w.
func (e *entry) copyFile(w io.Writer) error {
	f, err := os.Open(e.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(w, f, e.hdr.Size); err != nil {
		return fmt.Errorf("reading %s: %w", e.path, err)
	}
	return nil
}

// pack tars the binds for the pods' init container, each under b<i>/.
func pack(binds []sandbox.Bind, masks []sandbox.Mask) (*tree, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	t := &tree{binds: binds}
	err := walk(binds, masks, func(e *entry) error {
		hdr := e.hdr
		hdr.Name = fmt.Sprintf("b%d/%s", e.bind, e.rel)
		switch hdr.Typeflag {
		case tar.TypeDir:
			hdr.Name = strings.TrimSuffix(hdr.Name, "/.") + "/"
			t.room += 4096
		case tar.TypeReg:
			t.room += (hdr.Size + 4095) / 4096 * 4096
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			return e.copyFile(tw)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	t.data = buf.Bytes()
	t.room += 16 << 20
	return t, nil
}

// Digest names what the binds give the pods: each bind's target and, in
// order, each entry's name, kind, mode, link and bytes (not its times). A
// baked image holds it in BakedFile; a scan with Options.Baked refuses an
// image whose digest is another.
func Digest(binds []sandbox.Bind, masks []sandbox.Mask) (string, error) {
	h := sha256.New()
	if err := walk(binds, masks, func(e *entry) error {
		digestEntry(h, binds[e.bind].Target, e)
		if e.hdr.Typeflag == tar.TypeReg {
			return e.copyFile(h)
		}
		return nil
	}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func digestEntry(h hash.Hash, target string, e *entry) {
	for _, s := range []string{target, e.rel, string(e.hdr.Typeflag), e.hdr.Linkname} {
		_ = binary.Write(h, binary.BigEndian, uint32(len(s)))
		_, _ = io.WriteString(h, s)
	}
	_ = binary.Write(h, binary.BigEndian, [2]int64{e.hdr.Mode, e.hdr.Size})
}

// BakedFile is where a baked image holds the digest of its binds.
const BakedFile = "/nondet-baked"

// BakeContext writes the build context (a tar: a Dockerfile and the
// files) of an image that holds the binds at their targets on top of
// base, and returns their digest: a scan of the same targets with
// Options.Baked then sends its pods nothing.
func BakeContext(w io.Writer, base string, binds []sandbox.Bind, masks []sandbox.Mask) (string, error) {
	tw := tar.NewWriter(w)
	h := sha256.New()
	err := walk(binds, masks, func(e *entry) error {
		digestEntry(h, binds[e.bind].Target, e)
		hdr := e.hdr
		hdr.Name = strings.TrimSuffix("root"+binds[e.bind].Target+"/"+e.rel, "/.")
		if hdr.Typeflag == tar.TypeDir {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			return e.copyFile(io.MultiWriter(tw, h))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	digest := hex.EncodeToString(h.Sum(nil))
	dockerfile := fmt.Sprintf("FROM %s\nLABEL org.opencontainers.image.title=nondet-sandbox-baked org.opencontainers.image.description=%q\nCOPY root/ /\n", base, "nondet-sandbox probe image holding a scan's files, digest "+digest)
	for _, f := range []struct{ name, body string }{{"root" + BakedFile, digest + "\n"}, {"Dockerfile", dockerfile}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			return "", err
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			return "", err
		}
	}
	return digest, tw.Close()
}
