"""nondet-sandbox worker: runs inside the sandbox, one interpreter per (shard, run).

The engine writes this package to each scan's shared folder, as
_nondet_worker (engine/worker.go), and runs the folder: `python -s FOLDER
MODE` (__main__.py). Three modes, each reading its JSON request from file
descriptor 4 (which no path leads to) and answering on a dedicated record
channel (file descriptor 3), never on stdout or stderr, which belong to the
scanned code:

  FOLDER discover      parse modules with ast (never import them) and list
                       their functions, signatures and the facts the gate
                       needs; also print the ladder (discover.py).
  FOLDER probe         call each planned (function, rung) of a shard and
                       stream one canonical answer per call (probe.py).
  FOLDER posture       say what a probe sees of its sandbox (doctor;
                       posture.py).

In probe mode this process never runs scanned code: it forks a child per
stretch of one module's calls, which imports the module and calls it
(calls.py), and reports over a pipe of its own. The parent passes on only
what that child may say (its own module's records, in turn: relay.py);
the channel, the nonce and the plan are out of the child's reach (it closes
the channel first; the parent is not dumpable). The stretches of a
package's modules are forked from a zygote that imported the package once
in that run (zygote.py), so scanned code can change the verdicts of its
own top-level package and of no other.

The ladder lives in ladder.py, in LADDER, and nowhere else.

The protocol (engine/protocol.go reads it, with the same table): one JSON
object per line, each tagged "n" with the run's nonce, "k" its kind.

  kind     mode      fields                   meaning
  ladder   discover  rungs                    every ladder's rung displays, by key
  module   discover  rel status error ...     one parsed module and its functions; code
                     code                     its bytecode (a hash-checked pyc, base64)
                                              when asked
  posture  posture   cap_* seccomp uid ...    what a probe sees of its sandbox
  is       probe     m                        importing plan module m starts
  id       probe     m us                     module m imported, in us microseconds
  if       probe     m err us                 module m's import raised err
  r        probe     i v o x th b v2 rb sx    call i's answer: v canonical, o with sets
                     rv tr us                 sorted, x why it has no canonical form,
                                              th threads left running, b the breaker
                                              that fired and v2 its second answer, rb
                                              1 when the call entered the function's
                                              own frame, 0 when it did not (absent:
                                              no code object to tell), sx the trace a
                                              sandbox may have left on what it raised
                                              (calls.sandbox_trace). A method whose
                                              receiver's constructor raised answers
                                              v "E:<Type> (constructor)"; us the
                                              microseconds it took, breakers included;
                                              rv a digest of the receiver when another
                                              callee built it; tr, for a call the plan
                                              asked to trace, each traced call's line
                                              events (tracing): one, or a repeat's two
  nc       probe     i why                    call i's function is not callable
  ob       probe     i us below               call i is not made: its function has spent
                                              us microseconds in calls this run, its
                                              budget, and is now called only on rungs
                                              below below (the calls it had made then)
  gone     probe     m i why t to us          module m's process died (t: was ended for
                                              writing what it may not; to: ran past its
                                              limit, or was blocked using no CPU past the
                                              idle limit, us after how long) in call i, in
                                              its import, or (no i) between calls: the
                                              rest of the module's calls are not made
  fl       probe     m f                      the files of the modules module m's child had
                                              loaded when its stretch ended (the verdict
                                              cache's key)
  done     all       -                        the worker finished the plan

A call's start is not a record: the child marks it in memory it shares
with the parent (CallMark, channel.py), which names the call a child dies
or hangs in and holds each call to its limit, and in the engine's mark file
(fd 5, mapped; 8-byte marks when fd 5 is a stream), which names it when the
parent itself is killed. Results go child -> parent -> engine in batches
(FLUSH_RECORDS, FLUSH_SECONDS); only an import's start and end wait for
the parent to have passed them on.

A probe plan's "segments" split its calls into lone runs, a child each;
"no_zygotes" has every package's zygote import nothing (the engine asks
for it when a worker died outside any module's import or call).
A discover request's "code" asks for each module's bytecode; a probe plan's
"code_dir" is where the engine keeps it (CodeCache, bytecode.py).

The modules:

  __main__.py    the entry: everything imported before anything scanned, then main
  main.py        main(argv): the request, the network check, one mode
  ladder.py      the ladder: LADDER, rungs, ladder keys, receivers
  kinds.py       what a parameter takes, by its annotation or its name
  values.py      the ladder's values that are objects, built anew per call
  canon.py       canonical answers
  addresses.py   which numbers in an answer are this process's addresses
  channel.py     the record channel and the call marks
  discover.py    discover mode: each module's record, the ladders
  signatures.py  a function's signature and doctests, a class's methods
  facts.py       the gate's facts of a function's body
  builders.py    how a class's own users build it: a method's receivers
  testcases.py   test classes, and a test method called as its runner does
  bytecode.py    a module's bytecode, compiled by discovery, loaded by probes
  probe.py       probe mode's parent and the children it forks
  forking.py     how a process that runs scanned code is forked
  relay.py       the parent's check of a child's records and limits
  zygote.py      a package's zygote: its import once per run, its children
  calls.py       a child's calls and the governor's breakers
  fresh.py       a call's inputs, fresh, and the breakers' inputs
  instances.py   a method's fresh instance per call
  tracing.py     a witness call traced line by line (the divergence)
  state.py       the process state restored after each call; a module's import
  posture.py     posture mode; the network check
  seccomp.py     the filter that refuses io_uring
  tests/         the package's tests, run by engine/worker_py_test.go (not shipped)
"""

# What imports the package to call exactly the worker's rungs (bench's
# floor, cmd/nondet-sandbox/floor.py) finds them here.
from .ladder import LADDER, rungs  # noqa: F401
