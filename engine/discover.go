package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/gate"
	"github.com/nondet-sandbox/nondet-sandbox/sandbox"
)

// ladders are the rungs' displays, by ladder key (the arity, and the kinds
// of the annotated parameters): rung -> each argument's display.
type ladders map[string][][]string

// discovery is what the worker's discover mode reported.
type discovery struct {
	modules map[string]*discoveredModule // by Rel
	ladder  ladders
	// receivers are the constructor inputs of a method ladder's rungs, by
	// the same key: rung -> each constructor argument's display; callees,
	// for a receiver not built by the method's class itself, what builds
	// it (Version.parse, a factory, a subclass), by rung.
	receivers ladders
	callees   map[string][]string
}

type discoveredModule struct {
	Rel         string               `json:"rel"`
	Status      string               `json:"status"`
	Error       string               `json:"error"`
	Functions   []discoveredFunction `json:"functions"`
	ModuleFacts gate.Facts           `json:"module_facts"`
	// Code is the module's bytecode, compiled by discovery (see
	// keepCode); dropped once written.
	Code []byte `json:"code,omitempty"`
}

type discoveredFunction struct {
	Name           string     `json:"name"`
	Line           int        `json:"line"`
	Async          bool       `json:"async"`
	Required       int        `json:"required"`
	Vararg         string     `json:"vararg"`
	Varkw          string     `json:"varkw"`
	KwonlyRequired []string   `json:"kwonly_required"`
	Params         []string   `json:"params"`
	Kinds          []string   `json:"kinds"`  // what each required parameter's annotation says it takes
	Ladder         string     `json:"ladder"` // the key of its rungs in the discovery's ladders
	Definitions    int        `json:"definitions,omitempty"`
	Facts          gate.Facts `json:"facts"`
	// A method's class, its name there and its kind (method, classmethod,
	// staticmethod, property); Name is then Class.name.
	Class string `json:"class,omitempty"`
	Attr  string `json:"attr,omitempty"`
	Kind  string `json:"kind,omitempty"`
	// Receiver is what the constructor of an instance method's class
	// requires; Skip why the class's methods are not probed.
	Receiver *receiverSig `json:"receiver,omitempty"`
	Skip     string       `json:"skip,omitempty"`
	// TestCase: the method's class is a test case (a *TestCase
	// subclass, or a Test* class of a test file).
	TestCase bool `json:"test_case,omitempty"`
	// Doctests are the arguments of the calls in its docstring's
	// examples, as literal source: its first rungs.
	Doctests [][]string `json:"doctests,omitempty"`
	// Lines are the first decorator's line and the signature's last, where
	// a suppression comment may sit, when they are not just Line.
	Lines []int `json:"lines,omitempty"`
}

// receiverSig is a constructor's signature as the ladder sees it, and
// the other ways its package builds the class (the worker's builders.py):
// the engine passes them on to the probes unread.
type receiverSig struct {
	Arity  int             `json:"arity"`
	Kinds  []string        `json:"kinds,omitempty"`
	Builds json.RawMessage `json:"builds,omitempty"`
}

// receiverExpr is how a witness shows the instance a method was called
// on: what built it (the class, or callee) and its arguments.
func receiverExpr(class, callee string, args []string) string {
	return cmp.Or(callee, class) + "(" + strings.Join(args, ", ") + ")"
}

// discover parses every file in one sandboxed interpreter. Parsing never
// imports: nothing of the scanned code runs here.
func (s *scan) discover(ctx context.Context, files []sourceFile) (*discovery, error) {
	// Module and Root (an index: the roots' paths stay here) let the
	// worker build a method's receiver with a class of another module of
	// its import root.
	type reqFile struct {
		Path   string `json:"path"`
		Rel    string `json:"rel"`
		Module string `json:"module"`
		Root   int    `json:"root"`
	}
	nonce := newScanID() + newScanID()
	// The gate's openers and the ladder's arity travel in the request, so
	// the worker and the engine cannot disagree on them.
	req := &struct {
		envelope
		Files    []reqFile `json:"files"`
		Openers  []string  `json:"openers"`
		Moving   []string  `json:"moving"`
		MaxArity int       `json:"max_arity"`
		// MaxReceiverArity bounds a receiver's constructor arguments.
		MaxReceiverArity int `json:"max_receiver_arity"`
		// On the host runtime, which has no cgroup, discovery's memory
		// is bounded by the worker's own address-space limit.
		ASLimit int64 `json:"address_space_limit,omitempty"`
		// Code asks for each module's bytecode (see keepCode).
		Code bool `json:"code,omitempty"`
	}{envelope: envelope{Nonce: nonce}, Files: []reqFile{}, Openers: gate.Openers(), Moving: gate.MovingCalls(), MaxArity: maxArity, MaxReceiverArity: maxReceiverArity, Code: !s.ex.opts.Runtime.Capabilities().FixedBinds}
	if !s.ex.opts.Runtime.Isolated() {
		req.ASLimit = s.ex.opts.Limits.MemoryBytes
	}
	importPath := map[string]string{} // by Rel: where the probes import it from
	roots := map[string]int{}
	for _, f := range files {
		importPath[f.Rel] = s.ex.inside(f.Path)
		if _, ok := roots[f.Root]; !ok {
			roots[f.Root] = len(roots)
		}
		req.Files = append(req.Files, reqFile{Path: importPath[f.Rel], Rel: f.Rel, Module: f.Name, Root: roots[f.Root]})
	}
	d := &discovery{modules: map[string]*discoveredModule{}, ladder: ladders{}, receivers: ladders{}, callees: map[string][]string{}}
	done := false
	var recErr error
	handle := func(line []byte) {
		var head struct {
			N string     `json:"n"`
			K recordKind `json:"k"`
		}
		if json.Unmarshal(line, &head) != nil || head.N != nonce {
			return
		}
		switch head.K {
		case kindLadder:
			var l struct {
				Rungs     map[string][][]string `json:"rungs"`
				Receivers map[string][][]string `json:"receivers"`
				Callees   map[string][]string   `json:"callees"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				recErr = err
				return
			}
			for k, v := range l.Rungs {
				d.ladder[k] = v
			}
			for k, v := range l.Receivers {
				d.receivers[k] = v
			}
			for k, v := range l.Callees {
				d.callees[k] = v
			}
		case kindModule:
			var m discoveredModule
			if err := json.Unmarshal(line, &m); err != nil {
				recErr = err
				return
			}
			if len(m.Code) > 0 {
				if path, ok := importPath[m.Rel]; ok {
					if err := s.ex.keepCode(path, m.Code); err != nil {
						recErr = err
						return
					}
				}
				m.Code = nil
			}
			d.modules[m.Rel] = &m
		case kindDone:
			done = true
		}
	}
	// Parsing is fast; the limit only guards against a broken interpreter.
	limit := 60*time.Second + time.Duration(len(files))*200*time.Millisecond
	out, err := s.ex.runJob(ctx, "discover", discoveryConditions(), "discover", req, limit, handle)
	if err != nil {
		return nil, err
	}
	if recErr != nil {
		return nil, fmt.Errorf("discovery: bad record: %w", recErr)
	}
	if !done {
		return nil, fmt.Errorf("%w: discovery with %s did not finish (%s)%s", ErrRuntime, s.ex.opts.Python, out.describe(), out.stderrTail())
	}
	s.ex.bindCode(s.ex.opts.Runtime.Isolated())
	return d, nil
}

// codeTarget is where a container sees the scan's code folder.
const codeTarget = "/nondet-code"

// keepCode writes one module's bytecode, compiled by discovery, into the
// scan's code folder, named after the path the module is imported from
// (the worker's code_name), as its record arrives. Each probe child then
// loads the module's code instead of compiling it: compiled once per
// scan, not once per module per run (no probe writes bytecode). The code
// comes from discovery, where nothing scanned runs; the worker uses it
// only while its hash matches the source it reads, and compiles a scanned
// module's source where none was kept.
func (x *executor) keepCode(path string, code []byte) error {
	dir := filepath.Join(x.scratch, "code")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("code folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, codeName(path)), code, 0o644); err != nil {
		return fmt.Errorf("code folder: %w", err)
	}
	x.codeKept = true
	return nil
}

// bindCode binds the code folder read-only into every later job, once
// discovery has kept any code: at codeTarget in a container, where it is
// on the host. (The kubernetes runtime packs the tree of a
// job's binds: its later pods get the folder with it.)
func (x *executor) bindCode(isolated bool) {
	if x.codeKept && x.codeDir == "" {
		src, target := filepath.Join(x.scratch, "code"), codeTarget
		if !isolated {
			target = src // the host's guard lets probes read it, not write it
		}
		x.binds = append(x.binds, sandbox.Bind{Source: src, Target: target})
		x.codeDir = target
	}
}

// codeName is the worker's code_name: the file a module's bytecode is
// kept in, named after the path the module is imported from.
func codeName(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:16]) + ".pyc"
}
