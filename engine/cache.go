package engine

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/report"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// The verdict cache keeps each module's verdicts between scans, and a
// scan reuses them while nothing they depend on changed: the tool and its
// worker (the ladder is the worker's), the interpreter, the settings that
// shape a verdict, and the content of every file the module's probe
// processes had loaded. The seed is not in the key: a reused verdict
// names the scan that made it. A cache can hide a finding, so it is
// trusted as the user's config is: read only when the user (or root) owns
// it and no one else may write it, each entry bounded, validated, and
// sealed with the user's own secret (a tree that ships a cache folder,
// however owned, cannot forge an entry).
const (
	cacheFormat = 1
	// maxCacheEntry bounds one module's entry: far above what a module of
	// thousands of functions writes.
	maxCacheEntry = 32 << 20
	// maxHashed bounds a file hashed for the key; a larger one is keyed by
	// its size and modification time.
	maxHashed = 256 << 20
)

// cacheEntry is one module's verdicts and what they depend on.
type cacheEntry struct {
	Format    int                     `json:"format"`
	Key       string                  `json:"key"`
	Module    report.Module           `json:"module"`
	Functions []*report.Function      `json:"functions"`
	Deps      []cacheDep              `json:"deps"`
	Seed      uint64                  `json:"seed"`
	Date      string                  `json:"date"`
	Runs      []sandbox.RunConditions `json:"runs"`
}

// cacheDep is a file an entry depends on and its content's digest.
type cacheDep struct {
	Path string `json:"path"`
	SHA  string `json:"sha256"`
}

// verdictCache is one scan's use of the cache folder.
type verdictCache struct {
	dir    string
	secret []byte
	base   []byte // the part of every module's key that is the scan's
	notes  io.Writer
	why    io.Writer
	hashes map[string]string
	hits   map[int]*cacheEntry // scan module -> the entry it reuses
	probed map[int]bool        // modules with something to probe
}

// openCache is the scan's use of dir, nil when there is none or it may
// not be trusted (said on notes).
func (s *scan) openCache() *verdictCache {
	o := s.ex.opts
	if o.VerdictCache == "" || len(o.ExplicitRuns) > 0 || len(o.CacheSecret) < 16 {
		return nil
	}
	if why := untrustedDir(o.VerdictCache); why != "" {
		note(o.Notes, "not using the verdict cache %s: %s", o.VerdictCache, why)
		return nil
	}
	// A folder that cannot be made (a read-only tree, a pod's root) is no
	// cache: said once, and the report claims none.
	if err := os.MkdirAll(o.VerdictCache, 0o755); err != nil {
		note(o.Notes, "no verdict cache: %v", err)
		return nil
	}
	c := &verdictCache{dir: o.VerdictCache, secret: o.CacheSecret, notes: o.Notes, why: o.CacheLog, hashes: map[string]string{},
		hits: map[int]*cacheEntry{}, probed: map[int]bool{}}
	h := sha256.New()
	worker, _ := fs.ReadDir(workerFiles, "worker")
	for _, e := range worker {
		b, _ := workerFiles.ReadFile("worker/" + e.Name())
		fmt.Fprintf(h, "%s %x\n", e.Name(), sha256.Sum256(b))
	}
	applies := fmt.Sprintf("%+v", sandbox.Supported(o.Runtime))
	fmt.Fprintf(h, "tool %q\nruntime %q %+v %v\nextra %q\n", o.Version, o.Runtime.Name(), o.Runtime.Capabilities(), applies, o.CacheKey)
	fmt.Fprintf(h, "python %q %s\n", s.ex.python, c.digest(s.ex.python))
	fmt.Fprintf(h, "runs %d smell %d timeouts %s %s budget %s explain %s private %v tests %v unsafe %v limits %+v callerseed %q\n",
		o.Runs, o.SmellRuns, o.CallTimeout, o.IdleTimeout, o.FunctionBudget, o.ExplainBudget, o.Private, o.Tests, o.Unsafe, o.Limits, o.CallerHashSeed)
	fmt.Fprintf(h, "skipped %+v\n", s.skipped)
	c.base = h.Sum(nil)
	return c
}

func note(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "nondet-sandbox: "+format+"\n", args...)
	}
}

// untrustedDir says why a cache folder may not be read ("" when it may):
// a link, or not a folder, or another user's, or writable by others. One
// that does not exist yet is fine: the scan makes it.
func untrustedDir(dir string) string {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return err.Error()
	}
	if !st.IsDir() {
		return "it is not a folder"
	}
	return untrustedOwner(st)
}

func untrustedOwner(st fs.FileInfo) string {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "its owner cannot be read"
	}
	if int(sys.Uid) != os.Geteuid() && sys.Uid != 0 {
		return fmt.Sprintf("it belongs to uid %d, not to you or root (nondet-sandbox clean --cache-dir empties it)", sys.Uid)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return "others may write it (chmod go-w it, or nondet-sandbox clean)"
	}
	return ""
}

// key is a module's key: the scan's part, and the module's place.
func (c *verdictCache) key(f *sourceFile, orderFree []string) string {
	h := sha256.New()
	h.Write(c.base)
	fmt.Fprintf(h, "module %q %q %q %q\norder-free %q\n", f.Rel, f.Root, f.Name, f.Path, orderFree)
	return hex.EncodeToString(h.Sum(nil))
}

func (c *verdictCache) path(key string) string { return filepath.Join(c.dir, key[:40]+".json") }

// digest is a file's content digest for the key: "absent" for what
// cannot be read as a regular file (the sandbox's own, a file gone).
func (c *verdictCache) digest(path string) string {
	if d, ok := c.hashes[path]; ok {
		return d
	}
	d := "absent"
	if fh, err := os.Open(path); err == nil {
		if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() {
			if st.Size() > maxHashed {
				d = fmt.Sprintf("size %d mtime %d", st.Size(), st.ModTime().UnixNano())
			} else {
				h := sha256.New()
				if _, err := io.Copy(h, fh); err == nil {
					d = hex.EncodeToString(h.Sum(nil))
				}
			}
		}
		fh.Close()
	}
	c.hashes[path] = d
	return d
}

// lookup is module mi's entry when it may be reused: nil, and a line on
// --verbose's log saying why, when it may not.
func (c *verdictCache) lookup(mi int, f *sourceFile, orderFree []string) *cacheEntry {
	key := c.key(f, orderFree)
	e, why := c.read(key, f)
	if e == nil {
		if why != "" {
			note(c.why, "scanning %s: %s", f.Rel, why)
		}
		return nil
	}
	for _, d := range e.Deps {
		if c.digest(d.Path) != d.SHA {
			note(c.why, "scanning %s again: %s changed", f.Rel, d.Path)
			return nil
		}
	}
	c.hits[mi] = e
	return e
}

// read reads and checks the entry of key. A missing one is nil and a
// reason for --verbose; one that may not be trusted or is malformed is
// nil, said on notes (once per entry), and the module is scanned again.
func (c *verdictCache) read(key string, f *sourceFile) (*cacheEntry, string) {
	path := c.path(key)
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "not in the verdict cache (a first scan; a setting, the tool or the interpreter changed; or its last scan was not kept: its process died, or a run failed)"
	}
	refuse := func(why string) (*cacheEntry, string) {
		note(c.notes, "ignoring the verdict cache's entry %s for %s: %s; scanning it again", path, f.Rel, why)
		return nil, ""
	}
	if err != nil {
		return refuse(err.Error())
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return refuse(err.Error())
	}
	if !st.Mode().IsRegular() {
		return refuse("it is not a regular file")
	}
	if why := untrustedOwner(st); why != "" {
		return refuse(why)
	}
	if st.Size() > maxCacheEntry {
		return refuse(fmt.Sprintf("it is larger than %d MiB", maxCacheEntry>>20))
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxCacheEntry+1))
	if err != nil || len(b) > maxCacheEntry {
		return refuse("it cannot be read whole")
	}
	seal, body, ok := bytes.Cut(b, []byte("\n"))
	if !ok || !hmac.Equal(seal, c.seal(body)) {
		return refuse("it was not written by a scan of yours (its seal does not match)")
	}
	var e cacheEntry
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return refuse("it is not an entry this tool wrote (" + err.Error() + ")")
	}
	if why := e.check(key, f); why != "" {
		return refuse(why)
	}
	return &e, ""
}

// check validates an entry read from disk against the module it claims.
func (e *cacheEntry) check(key string, f *sourceFile) string {
	switch {
	case e.Format != cacheFormat:
		return fmt.Sprintf("format %d, not %d", e.Format, cacheFormat)
	case e.Key != key:
		return "its key is another module's"
	case e.Module.Path != f.Rel:
		return fmt.Sprintf("it is the entry of %q", e.Module.Path)
	case len(e.Deps) == 0 || e.Deps[0].Path != f.Path:
		return "it does not depend on its own module's file"
	}
	rep := report.Report{Runs: e.Runs, Functions: e.Functions}
	if err := rep.Validate(); err != nil {
		return err.Error()
	}
	for _, fn := range e.Functions {
		file, _ := report.SplitID(fn.ID)
		if file != f.Rel {
			return fmt.Sprintf("it holds %q, which is not of %s", fn.ID, f.Rel)
		}
		switch fn.Verdict {
		case VerdictNondeterministic, VerdictDeterministic, VerdictLook, VerdictNotProbed:
		default:
			return fmt.Sprintf("%s has the verdict %q", fn.ID, fn.Verdict)
		}
	}
	return ""
}

// reuse puts a cached verdict in place of a fresh function's: its own
// file's facts (line, suppression, smells) stay the fresh ones.
func (e *cacheEntry) reuse(out *report.Function, runs []sandbox.RunConditions, seed uint64) bool {
	for _, c := range e.Functions {
		if c.ID != out.ID {
			continue
		}
		fresh := *out
		*out = *c
		out.Line, out.Suppressed, out.Smells, out.Kind = fresh.Line, fresh.Suppressed, fresh.Smells, fresh.Kind
		out.Moves, out.Ignored, out.InBaseline = nil, nil, false
		out.Cached = &report.Cached{Seed: e.Seed, Date: e.Date}
		if e.Seed != seed || !reflect.DeepEqual(e.Runs, runs) {
			out.Cached.Runs = e.Runs
		}
		return true
	}
	return false
}

// finish gives the reused modules their status and the report its
// count, and names again, on each culprit, what it moved: a reused
// verdict's culprit may be a fresh one's, and the other way round.
func (c *verdictCache) finish(rep *report.Report) {
	status := map[string]report.Module{}
	for _, e := range c.hits {
		status[e.Module.Path] = e.Module
	}
	for i := range rep.Modules {
		if m, ok := status[rep.Modules[i].Path]; ok {
			rep.Modules[i].Status, rep.Modules[i].Error = m.Status, m.Error
		}
	}
	reused := 0
	for mi := range c.probed {
		if c.hits[mi] != nil {
			reused++
		}
	}
	rep.Cache = &report.CacheUse{Modules: len(c.probed), Reused: reused}
	if reused == 0 {
		return
	}
	for _, f := range rep.Functions {
		if f.Cached != nil && f.MovedBy != nil && f.MovedBy.Culprit != "" {
			if culprit := rep.Function(f.MovedBy.Culprit); culprit != nil {
				culprit.AddMoves(f.ID)
			}
		}
	}
}

// store writes the entries of the modules this scan probed afresh: those
// whose every function has its verdict, whose processes said what they
// loaded, and none of whose runs failed to run.
func (c *verdictCache) store(s *scan, rep *report.Report, probes []*probe, res *results, now time.Time) {
	ignore := filepath.Join(c.dir, ".gitignore")
	if _, err := os.Lstat(ignore); errors.Is(err, fs.ErrNotExist) {
		_ = os.WriteFile(ignore, []byte("# nondet-sandbox's verdict cache: nothing here belongs in git.\n*\n"), 0o644)
	}
	byModule := map[int][]*probe{}
	for _, p := range probes {
		byModule[p.Module] = append(byModule[p.Module], p)
	}
	byRel := map[string]*sourceFile{}
	for i := range s.files {
		byRel[s.files[i].Rel] = &s.files[i]
	}
	modules := map[string]report.Module{}
	for _, m := range rep.Modules {
		modules[m.Path] = m
	}
	functions := map[string][]*report.Function{}
	for _, f := range rep.Functions {
		file, _ := report.SplitID(f.ID)
		functions[file] = append(functions[file], f)
	}
	for mi, ps := range byModule {
		f := &s.files[mi]
		if c.hits[mi] != nil || f.Func != "" || len(res.loaded[mi]) == 0 {
			continue
		}
		failed := false
		for _, p := range ps {
			failed = failed || len(res.shardError[p.Index]) > 0
		}
		if failed {
			continue
		}
		deps := []string{f.Path}
		for path := range res.loaded[mi] {
			if path != f.Path {
				deps = append(deps, path)
			}
		}
		// A culprit's module moved this one's answers: its file is a
		// dependency too.
		for _, fn := range functions[f.Rel] {
			if fn.MovedBy != nil && fn.MovedBy.Culprit != "" {
				file, _ := report.SplitID(fn.MovedBy.Culprit)
				if cf := byRel[file]; cf != nil && cf.Path != f.Path {
					deps = append(deps, cf.Path)
				}
			}
		}
		sort.Strings(deps[1:])
		e := cacheEntry{Format: cacheFormat, Key: c.key(f, s.ex.opts.OrderFree), Module: modules[f.Rel],
			Functions: functions[f.Rel], Seed: rep.Seed, Date: now.UTC().Format(time.DateOnly), Runs: rep.Runs}
		e.Module.Location = ""
		for _, d := range deps {
			e.Deps = append(e.Deps, cacheDep{Path: d, SHA: c.digest(d)})
		}
		if err := c.write(e); err != nil {
			note(c.notes, "cannot keep the verdicts of %s: %v", f.Rel, err)
			return
		}
	}
}

// seal is an entry's seal: its HMAC under the user's secret, in hex.
func (c *verdictCache) seal(body []byte) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write(body)
	return []byte(hex.EncodeToString(m.Sum(nil)))
}

// write replaces an entry whole: a scan killed while writing leaves the
// old entry or none.
func (c *verdictCache) write(e cacheEntry) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b := append(append(c.seal(body), '\n'), body...)
	tmp, err := os.CreateTemp(c.dir, ".entry*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), c.path(e.Key)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Clean empties a verdict cache folder: its entries and its .gitignore,
// then the folder. Anything else in it stays, and is named.
func Clean(dir string) (removed int, err error) {
	if why := untrustedDir(dir); why != "" && !strings.HasPrefix(why, "others may write") {
		return 0, fmt.Errorf("%s: %s", dir, why)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var left []string
	for _, e := range entries {
		name := e.Name()
		if name == ".gitignore" || name == ".secret" || strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".entry") {
			if os.Remove(filepath.Join(dir, name)) == nil {
				removed++
				continue
			}
		}
		left = append(left, name)
	}
	if len(left) > 0 {
		return removed, fmt.Errorf("%s holds what is not the cache's, left in place: %s", dir, strings.Join(left, ", "))
	}
	return removed, os.Remove(dir)
}
