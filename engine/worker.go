package engine

import _ "embed"

// workerSource is the Python side of every probe: discovery by ast, the
// ladder, canonical answers and the record channel. It is a real file in the
// tree (engine/worker.py), tested as Python too.
//
//go:embed worker.py
var workerSource []byte

// WorkerSource is the worker, for tools that measure against it (bench's
// floor calls exactly the worker's rungs).
func WorkerSource() []byte { return workerSource }
