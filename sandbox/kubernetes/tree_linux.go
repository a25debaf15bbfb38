package kubernetes

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
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
type tree struct {
	binds []sandbox.Bind
	data  []byte
	room  int64
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
	t, err := pack(job.Binds, job.Masks)
	if err != nil {
		return nil, err
	}
	s.tree, s.treeKey = t, key.String()
	return t, nil
}

// pack tars the binds' sources, leaving out what is masked (hidden entries
// of a home directory): regular files, folders and symbolic links, all
// readable by the probe's user. Only the worker reads them, read-only.
func pack(binds []sandbox.Bind, masks []sandbox.Mask) (*tree, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	t := &tree{binds: binds}
	var total int64
	for i, b := range binds {
		prefix := fmt.Sprintf("b%d", i)
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
			name := filepath.ToSlash(filepath.Join(prefix, rel))
			info, err := d.Info()
			if err != nil {
				return nil
			}
			hdr := &tar.Header{Name: name, ModTime: info.ModTime()}
			switch {
			case d.IsDir():
				hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, name+"/"
				t.room += 4096
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return nil
				}
				hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
			case d.Type().IsRegular():
				hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, info.Size(), int64(info.Mode().Perm()|0o444)
				total += info.Size()
				t.room += (info.Size() + 4095) / 4096 * 4096
				if total > maxTree {
					return fmt.Errorf("the scanned trees hold more than %d MiB; the kubernetes runtime sends them to every pod: narrow the scan (--exclude, or split it with --shard)", maxTree>>20)
				}
			default:
				return nil // devices, sockets, FIFOs: nothing a module imports
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				_, err = io.CopyN(tw, f, hdr.Size)
				f.Close()
				if err != nil {
					return fmt.Errorf("reading %s: %w", path, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("kubernetes: packing %s for the pods: %w", b.Source, err)
		}
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
