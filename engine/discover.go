package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nondet-sandbox/nondet-sandbox/gate"
)

// ladders are the rungs' displays, by ladder key (the arity, and the kinds
// of the annotated parameters): rung -> each argument's display.
type ladders map[string][][]string

// discovery is what the worker's discover mode reported.
type discovery struct {
	modules map[string]*discoveredModule // by Rel
	ladder  ladders
}

type discoveredModule struct {
	Rel         string               `json:"rel"`
	Status      string               `json:"status"`
	Error       string               `json:"error"`
	Functions   []discoveredFunction `json:"functions"`
	ModuleFacts gate.Facts           `json:"module_facts"`
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
}

// discover parses every file in one sandboxed interpreter. Parsing never
// imports: nothing of the scanned code runs here.
func (s *scan) discover(ctx context.Context, files []sourceFile) (*discovery, error) {
	type reqFile struct {
		Path string `json:"path"`
		Rel  string `json:"rel"`
	}
	nonce := newScanID() + newScanID()
	// The gate's openers and the ladder's arity travel in the request, so
	// the worker and the engine cannot disagree on them.
	req := struct {
		Nonce    string    `json:"nonce"`
		Files    []reqFile `json:"files"`
		Openers  []string  `json:"openers"`
		MaxArity int       `json:"max_arity"`
		// On the host runtime, which has no cgroup, discovery's memory
		// is bounded by the worker's own address-space limit.
		ASLimit int64 `json:"address_space_limit,omitempty"`
	}{Nonce: nonce, Files: []reqFile{}, Openers: gate.Openers(), MaxArity: maxArity}
	if !s.opts.Runtime.Isolated() {
		req.ASLimit = s.opts.Limits.MemoryBytes
	}
	for _, f := range files {
		req.Files = append(req.Files, reqFile{Path: s.inside(f.Path), Rel: f.Rel})
	}
	d := &discovery{modules: map[string]*discoveredModule{}, ladder: ladders{}}
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
				Rungs map[string][][]string `json:"rungs"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				recErr = err
				return
			}
			for k, v := range l.Rungs {
				d.ladder[k] = v
			}
		case kindModule:
			var m discoveredModule
			if err := json.Unmarshal(line, &m); err != nil {
				recErr = err
				return
			}
			d.modules[m.Rel] = &m
		case kindDone:
			done = true
		}
	}
	// Parsing is fast; the limit only guards against a broken interpreter.
	limit := 60*time.Second + time.Duration(len(files))*200*time.Millisecond
	out, err := s.runJob(ctx, "discover", discoveryConditions(), "discover", req, limit, handle)
	if err != nil {
		return nil, err
	}
	if recErr != nil {
		return nil, fmt.Errorf("discovery: bad record: %w", recErr)
	}
	if !done {
		return nil, fmt.Errorf("%w: discovery with %s did not finish (%s)%s", ErrRuntime, s.opts.Python, out.describe(), out.stderrTail())
	}
	return d, nil
}
