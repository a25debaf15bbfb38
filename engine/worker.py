"""nondet-sandbox worker: runs inside the sandbox, one interpreter per (shard, run).

Three modes, each reading its JSON request from file descriptor 4 (which no
path leads to) and answering on a dedicated record channel (file descriptor
3), never on stdout or stderr, which belong to the scanned code:

  worker.py discover   parse modules with ast (never import them) and list
                       their functions, signatures and the facts the gate
                       needs; also print the ladder.
  worker.py probe      call each planned (function, rung) of a shard and
                       stream one canonical answer per call.
  worker.py posture    say what a probe sees of its sandbox (doctor).

In probe mode this process never runs scanned code: it forks a child per
stretch of one module's calls, which imports the module and calls it, and
reports over a pipe of its own. The parent passes on only what that child
may say (its own module's records, in turn), so scanned code can change the
verdicts of its own module and of no other; the channel, the nonce and the
plan are out of the child's reach (it closes the channel first; the
parent is not dumpable).

The ladder lives here, in LADDER, and nowhere else.

The protocol (engine/protocol.go reads it, with the same table): one JSON
object per line, each tagged "n" with the run's nonce, "k" its kind.

  kind     mode      fields                   meaning
  ladder   discover  rungs                    every ladder's rung displays, by key
  module   discover  rel status error ...     one parsed module and its functions; code
                     code                     its bytecode (a hash-checked pyc, base64)
                                              when asked
  posture  posture   cap_* seccomp uid ...    what a probe sees of its sandbox
  is       probe     m                        importing plan module m starts
  id       probe     m                        module m imported
  if       probe     m err                    module m's import raised err
  r        probe     i v o x th b v2          call i's answer: v canonical, o with sets
                                              sorted, x why it has no canonical form,
                                              th threads left running, b the breaker
                                              that fired and v2 its second answer
  nc       probe     i why                    call i's function is not callable
  gone     probe     m i why t to             module m's process died (t: was ended for
                                              writing what it may not; to: ran past its
                                              limit) in call i, in its import, or (no i)
                                              between calls: the rest of the module's
                                              calls are not made
  done     all       -                        the worker finished the plan

A call's start is not a record: the child marks it in memory it shares
with the parent (CallMark), which names the call a child dies or hangs in
and holds each call to its limit, and in the engine's mark file (fd 5,
mapped; 8-byte marks when fd 5 is a stream), which names it when the
parent itself is killed. Results go child -> parent -> engine in
batches (FLUSH_RECORDS, FLUSH_SECONDS); only an import's start and end wait
for the parent to have passed them on.

A probe plan's "segments" split its calls into lone runs, a child each.
A discover request's "code" asks for each module's bytecode; a probe plan's
"code_dir" is where the engine keeps it (CodeCache).
"""

import ast
import copy
import datetime as _dt
import enum
import gc
import hashlib
import io
import json
import os
import pathlib
import re
import select
import struct
import sys
import threading
import time
import types

# Everything the worker uses, imported before any scanned root is on
# sys.path: a scanned tree's own dataclasses.py or locale.py must never run
# inside the canonicaliser or the state restore (they would, imported
# lazily, with the scanned root first on sys.path).
import dataclasses  # noqa: E402,F401
import fcntl  # noqa: E402,F401
import importlib  # noqa: E402,F401
import importlib.machinery  # noqa: E402,F401
import importlib.util  # noqa: E402,F401
import marshal  # noqa: E402,F401
import locale  # noqa: E402,F401
import mmap  # noqa: E402,F401
import resource  # noqa: E402,F401
import signal  # noqa: E402,F401
import stat  # noqa: E402,F401
import errno  # noqa: E402,F401
import socket  # noqa: E402,F401

RECORD_FD = 3
REQUEST_FD = 4
MARK_FD = 5
# A call's answer longer than this is compared by digest and shown truncated.
MAX_TEXT = 4096

# The ladder: one fixed list of values, documented here and only here.
# Arity n uses every value repeated n times, then a few mixed rungs. The
# narrow (3-key) and wide (8-key) dicts are both here on purpose: a hash-order
# defect on 3 keys is missed by three runs 2.8% of the time, on 8 keys about
# once in a billion. Dates, times and paths come last: what real code takes
# (a "time since" formatter, a date parser that fills in today, a `~`
# expander) and what no scalar rung reaches; then one character, a number
# in a string, an encoding's name and two streams, which parsers, codecs and
# character tables take, and a function, which higher-order code takes.
class _BytesStream(io.BytesIO):
    """A BytesIO whose repr carries its content, not its address: a
    function that echoes its argument's repr must not look moved by the
    process."""

    def __repr__(self):
        return "io.BytesIO(%r)" % self.getvalue()


class _TextStream(io.StringIO):
    def __repr__(self):
        return "io.StringIO(%r)" % self.getvalue()


def _callback(x=None, *more, **options):
    """The ladder's function, for what takes a callback, a key or a
    function to decorate or inspect: it answers its first argument."""
    return x


FIVE_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]
LADDER = [
    0,
    7,
    -3,
    2 ** 70,
    3.14159,
    -0.5,
    "",
    "alpha",
    "Hello, World - \u00fcn\u00efcode",
    "  padded\ttext  ",
    None,
    True,
    False,
    [],
    FIVE_WORDS,
    ["b", "a", "c", "a"],
    [3, 1, 2],
    (1, 2, 3),
    ("x", "y"),
    {"red": 1, "green": 2, "blue": 3},
    {"k%d" % i: i for i in range(8)},
    [[1, 2], [3, [4, 5]]],
    b"bytes",
    _dt.date(2024, 2, 29),
    _dt.datetime(2024, 2, 29, 13, 45, 30),
    _dt.datetime(2024, 2, 29, 13, 45, 30, tzinfo=_dt.timezone.utc),
    _dt.timedelta(days=1, hours=2, minutes=3),
    _dt.time(13, 45, 30),
    "docs/readme.txt",
    "/usr/share/doc",
    "~/notes.txt",
    "a",
    "42",
    "utf-8",
    _BytesStream(b"alpha\nbeta\n"),
    _TextStream("alpha\nbeta\n"),
    _callback,
]
MIXED = {
    2: [(0, "alpha"), ("alpha", 0), (FIVE_WORDS, 2), ("alpha", "beta")],
    3: [(0, 1, 2), ("a", "b", "c"), (FIVE_WORDS, 0, 3), (1, "alpha", None)],
}
MAX_ARITY = 3  # the engine's maxArity comes in the discovery request
# Where the ladder's function lives differs from process to process; a
# function that echoes it (its repr URL-quoted, its id) is not moved by it.
_LADDER_IDS = (hex(id(_callback)), str(id(_callback)))

# What an annotation says a parameter takes, as a kind; the ladder tries the
# values of that kind first for that parameter (the rest follow, so every
# function of one arity has as many rungs). A path parameter gets the path
# rungs as pathlib.Path objects in place of the strings.
_PATHS = ("docs/readme.txt", "/usr/share/doc", "~/notes.txt")
KIND_VALUES = {
    "int": lambda v: type(v) is int,
    "float": lambda v: type(v) is float,
    "str": lambda v: type(v) is str,
    "bytes": lambda v: type(v) is bytes,
    "bool": lambda v: type(v) is bool,
    "list": lambda v: type(v) is list,
    "tuple": lambda v: type(v) is tuple,
    "dict": lambda v: type(v) is dict,
    "date": lambda v: type(v) is _dt.date,
    "datetime": lambda v: type(v) is _dt.datetime,
    "timedelta": lambda v: type(v) is _dt.timedelta,
    "time": lambda v: type(v) is _dt.time,
    "path": lambda v: False,
    "stream": lambda v: isinstance(v, (io.BytesIO, io.StringIO)),
    "callable": lambda v: v is _callback,
}
# Annotation names (the last dotted part, any subscript dropped) and the
# kind each means.
ANNOTATION_KINDS = {
    "int": "int", "float": "float", "str": "str", "bytes": "bytes", "bool": "bool",
    "list": "list", "List": "list", "Sequence": "list", "MutableSequence": "list", "Iterable": "list",
    "Collection": "list", "Iterator": "list",
    "tuple": "tuple", "Tuple": "tuple",
    "dict": "dict", "Dict": "dict", "Mapping": "dict", "MutableMapping": "dict",
    "date": "date", "datetime": "datetime", "timedelta": "timedelta", "time": "time",
    "Path": "path", "PurePath": "path", "PosixPath": "path", "PathLike": "path",
    "IO": "stream", "BinaryIO": "stream", "TextIO": "stream", "BytesIO": "stream", "StringIO": "stream",
    "IOBase": "stream", "RawIOBase": "stream", "BufferedIOBase": "stream", "TextIOBase": "stream",
    "Callable": "callable",
}


def _column(kind):
    if kind == "path":
        rest = [v for v in LADDER if not (type(v) is str and v in _PATHS)]
        return [pathlib.Path(p) for p in _PATHS] + rest
    test = KIND_VALUES.get(kind)
    if test is None:
        return LADDER
    first = [v for v in LADDER if test(v)]
    return first + [v for v in LADDER if not test(v)]


def rungs(arity, kinds=None):
    """The rungs of a function of this arity whose required parameters
    have these kinds (None or "" for a parameter that says nothing)."""
    if arity == 0:
        return [()]
    kinds = list(kinds or [])[:arity] + [""] * max(0, arity - len(kinds or []))
    cols = [_column(k) for k in kinds]
    return [tuple(c[j] for c in cols) for j in range(len(LADDER))] + MIXED.get(arity, [])


def ladder_key(arity, kinds):
    """Names one ladder: functions with the same key get the same rungs."""
    kinds = [k or "" for k in list(kinds or [])[:arity]]
    while kinds and not kinds[-1]:
        kinds.pop()
    return "%d:%s" % (arity, ",".join(kinds)) if kinds else str(arity)


_RUNGS = {}


def rungs_of(arity, kinds):
    key = ladder_key(arity, kinds)
    if key not in _RUNGS:
        _RUNGS[key] = rungs(arity, kinds)
    return _RUNGS[key]


def annotation_kind(node):
    """The kind an annotation names, or "" when it names none the ladder
    knows: int, list[str], Optional[datetime], "Path", os.PathLike..."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        return annotation_kind(node.left) or annotation_kind(node.right)
    if isinstance(node, ast.Subscript):
        base = _last_name(node.value)
        if base in ("Optional", "Union"):
            inner = node.slice
            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            for part in parts:
                k = annotation_kind(part)
                if k:
                    return k
            return ""
        if base == "Annotated":
            inner = node.slice
            return annotation_kind(inner.elts[0] if isinstance(inner, ast.Tuple) else inner)
        return ANNOTATION_KINDS.get(base, "")
    return ANNOTATION_KINDS.get(_last_name(node), "")


def _last_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


# ---------------------------------------------------------------- canonical


class NoCanon(Exception):
    """The value has no canonical form (its repr carries an address)."""


# A repr with an address in it means nothing from one process to the next;
# a repr shaped <...> without one (an enum member, a sentinel) is canonical.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{8,}")
_AT_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# Inside a <...> repr a long decimal is an address too: a thread's ident,
# an id().
_ANGLE_ID = re.compile(r"^<.*\b\d{12,}\b.*>$", re.S)

# A lazy answer (a generator, a map or zip object, any iterator) is consumed
# up to this many items: enough to show its values and their order, while an
# endless one (itertools.count) still ends. One cut off says so.
MAX_ITEMS = 1000


def _typename(t):
    mod = getattr(t, "__module__", "")
    name = getattr(t, "__qualname__", getattr(t, "__name__", "?"))
    return name if mod in ("builtins", "", None) else mod + "." + name


# json.dumps(s, ensure_ascii=False) for a str, without the encoder object
# json.dumps builds on every call: the canonicaliser quotes every string.
_quote = json.encoder.encode_basestring


def canon_text(x, sort_sets=False, memo=None, dict_order=False):
    """Canonical text of a value. Dict key order is not semantic, list and
    tuple order is, a set is written in its iteration order (or sorted, when
    sort_sets asks whether two answers differ by order only). memo keeps
    what iterators gave, so a second pass over one value sees the same
    items; dict_order writes dicts as they are ordered (how an argument is
    shown, never how answers compare)."""
    out = []
    sets = [False]
    ctx = (sort_sets, sets, {} if memo is None else memo, dict_order)
    _canon(x, out, set(), ctx)
    return "".join(out), sets[0]


def _canon(x, out, path, ctx):
    t = type(x)
    if x is None or t is bool or t is int or t is float or t is complex:
        if t is int:
            try:
                out.append(repr(x))
            except ValueError:  # more digits than int->str allows
                out.append("int:0x%x" % x)
        else:
            out.append(repr(x))
        return
    if t is str:
        # A string can carry an address (a repr echoed back, even quoted or
        # escaped): masked, as a value whose repr holds one has no canonical
        # form; so is the ladder's own function's address, in hex or as an
        # id, however the function wrote it.
        if " at 0x" in x:
            x = _AT_ADDRESS.sub(" at 0x…", x)
        for mark in _LADDER_IDS:
            if mark in x:
                x = x.replace(mark, "<ladder address>")
        out.append(_quote(x))
        return
    if t is bytes or t is bytearray:
        out.append(repr(x))
        return
    ident = id(x)
    if ident in path:
        out.append("<cycle>")
        return
    if isinstance(x, (list, tuple, set, frozenset, dict)):
        _inside(path, ident, _canon_container, x, t, out, path, ctx)
        return
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        _inside(path, ident, _canon_dataclass, x, t, out, path, ctx)
        return
    if isinstance(x, type):
        out.append("class:" + _typename(x))
        return
    if t.__name__ == "module":
        out.append("module:" + x.__name__)
        return
    if isinstance(x, enum.Enum):
        out.append(_typename(t) + "." + str(x.name))
        return
    if t is types.FunctionType:
        # A function is its name: where it lives is the same in every run.
        out.append("function:" + getattr(x, "__module__", "?") + "." + getattr(x, "__qualname__", "?"))
        return
    if isinstance(x, (io.BytesIO, io.StringIO)):
        # A stream is its content and where it has been read to.
        name = "BytesIO" if isinstance(x, io.BytesIO) else "StringIO"
        out.append("io.%s(%r, pos=%d)" % (name, x.getvalue(), x.tell()))
        return
    if _lazy(x):
        _inside(path, ident, _canon_lazy, x, t, out, path, ctx)
        return
    r = repr(x)
    if _ADDRESS.search(r) or _ANGLE_ID.match(r):
        raise NoCanon(_typename(t))
    out.append(_typename(t) + ":" + r)


def _inside(path, ident, canon, *args):
    """Canonicalises a value that can hold itself, with its id on the path
    of the values being written, so a cycle is written <cycle>."""
    path.add(ident)
    try:
        canon(*args)
    finally:
        path.discard(ident)


def _canon_dataclass(x, t, out, path, ctx):
    out.append(_typename(t) + "(")
    for i, f in enumerate(dataclasses.fields(x)):
        if i:
            out.append(",")
        out.append(f.name + "=")
        _canon(getattr(x, f.name), out, path, ctx)
    out.append(")")


def _lazy(x):
    """An iterator whose items are the answer; never a file, whose
    iteration reads (or blocks on) the world outside the value."""
    return hasattr(type(x), "__next__") and hasattr(type(x), "__iter__") and not isinstance(x, io.IOBase)


def _canon_lazy(x, t, out, path, ctx):
    memo = ctx[2]
    got = memo.get(id(x))
    if got is None:
        items, end = [], ""
        try:
            for item in x:
                if len(items) == MAX_ITEMS:
                    end = "…cut at %d" % MAX_ITEMS
                    break
                items.append(item)
        except Exception as e:  # raising mid-way is part of the answer
            end = "!E:" + _typename(type(e))
        got = memo[id(x)] = (items, end, x)  # x kept alive: its id stays its own
    items, end, _ = got
    out.append("iter:" + _typename(t) + "[")
    for i, e in enumerate(items):
        if i:
            out.append(",")
        _canon(e, out, path, ctx)
    if end:
        out.append(("," if items else "") + end)
    out.append("]")


def _canon_container(x, t, out, path, ctx):
    sort_sets, sets, _, dict_order = ctx
    prefix = "" if t in (list, tuple, dict, set, frozenset) else _typename(t)
    if isinstance(x, dict):
        items = []
        for k, v in x.items():
            kt, vt = [], []
            _canon(k, kt, path, ctx)
            _canon(v, vt, path, ctx)
            items.append("".join(kt) + ":" + "".join(vt))
        if not dict_order:
            items.sort()
        out.append(prefix + "{" + ",".join(items) + "}")
        return
    if isinstance(x, (set, frozenset)):
        sets[0] = True
        parts = []
        for e in x:
            p = []
            _canon(e, p, path, ctx)
            parts.append("".join(p))
        if sort_sets:
            parts.sort()
        name = "frozenset" if isinstance(x, frozenset) else "set"
        out.append((prefix or name) + "[" + ",".join(parts) + "]")
        return
    fields = getattr(t, "_fields", None)
    if isinstance(x, tuple) and fields:  # namedtuple: its fields are its meaning
        out.append(_typename(t) + "(")
        for i, (f, v) in enumerate(zip(fields, x)):
            if i:
                out.append(",")
            out.append(f + "=")
            _canon(v, out, path, ctx)
        out.append(")")
        return
    opening, closing = ("(", ")") if isinstance(x, tuple) else ("[", "]")
    if (t is list or t is tuple) and x and _plain_strings(x):
        # The common answer, a list of plain strings, in one pass.
        out.append(opening + ",".join(map(_quote, x)) + ("," if t is tuple and len(x) == 1 else "") + closing)
        return
    out.append(prefix + opening)
    for i, e in enumerate(x):
        if i:
            out.append(",")
        _canon(e, out, path, ctx)
    if isinstance(x, tuple) and len(x) == 1:
        out.append(",")
    out.append(closing)


def _plain_strings(x):
    """Every item an exact str that carries no address to mask."""
    for e in x:
        if type(e) is not str:
            return False
    joined = "\x00".join(x)
    return " at 0x" not in joined and not any(m in joined for m in _LADDER_IDS)


def shorten(text):
    if len(text) <= MAX_TEXT:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return "%s…#sha256:%s(%d chars)" % (text[:160], digest, len(text))


def answer(value):
    """Returns (canonical, order_free) for a returned value; order_free is
    set only when the value holds a set, so "order only" can be told."""
    memo = {}
    text, had_set = canon_text(value, memo=memo)
    free = None
    if had_set:
        free = "V:" + shorten(canon_text(value, sort_sets=True, memo=memo)[0])
    return "V:" + shorten(text), free


def raised(exc):
    return "E:" + _typename(type(exc))


def display(args):
    """How a rung is shown in a report: as the function received it (dicts
    in the order of their keys), with sets sorted, so the text does not
    depend on the hash seed of the process that wrote it."""
    if not isinstance(args, tuple):
        raise TypeError("display takes a rung: a tuple of arguments")
    return [canon_text(a, sort_sets=True, dict_order=True)[0] for a in args]


# ----------------------------------------------------------------- channel


class Channel:
    """Where records go: the engine's channel (fd 3, tagged with the nonce),
    or a child's pipe to the parent (fd given, no nonce)."""

    def __init__(self, nonce, fd=RECORD_FD, acks=None):
        # Move the channel out of the low descriptors a hostile function is
        # likely to scribble on, and out of its children's inheritance.
        self.fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 900)
        os.close(fd)
        self.nonce = nonce
        self.acks = None
        if acks is not None:
            self.acks = fcntl.fcntl(acks, fcntl.F_DUPFD_CLOEXEC, 900)
            os.close(acks)
        self.pending = []
        self.since = 0.0

    def step(self, rec):
        """Sends the start or the end of an import and, in a child, waits
        until the parent has passed it on: the engine knows which module
        runs, and that its import is over, before any of it runs, whatever
        it then does to the parent."""
        self.send(rec, flush=True)
        if self.acks is not None and os.read(self.acks, 1) != b".":
            os._exit(0)  # the parent is gone

    def send(self, rec, flush=False):
        """Queues a record; the queue goes out when it is large or old
        (FLUSH_RECORDS, FLUSH_SECONDS), or now when flush is set. A child
        that dies loses its queue: the parent starts the next child at the
        first call it has no answer for."""
        if self.nonce is not None:
            rec["n"] = self.nonce
        if not self.pending:
            self.since = time.monotonic()
        self.pending.append(_encode(rec))
        if flush or len(self.pending) >= FLUSH_RECORDS or time.monotonic() - self.since > FLUSH_SECONDS:
            self.flush()

    def flush(self):
        if not self.pending:
            return
        data = ("\n".join(self.pending) + "\n").encode()
        self.pending = []
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            # The scanned code closed or broke the channel: nothing more can
            # be reported from this process, so end it; the engine names the
            # call in progress and resumes after it.
            os._exit(97)


_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode

# A child's records go to its parent in batches: at most this many, at
# most this old. The parent passes them on in the same batches.
FLUSH_RECORDS = 256
FLUSH_SECONDS = 0.05
# How often the parent looks at a child's mark when no call is marked.
MARK_POLL = 0.05


# The engine's mark file, mapped, when fd 5 is a file (the runtime passed
# it straight through): its first 8 bytes hold the last call started, and
# a call's start costs a store, not a write to a pipe the engine wakes for.
_MARKS = None


def _map_marks():
    """Maps fd 5 when it is the engine's mark file, and closes it: no
    process of the probe holds a descriptor of it after that. (Python's
    mmap would keep a duplicate at the lowest free descriptor, where the
    scanned code writes when it writes to fd 3.)"""
    global _MARKS
    try:
        st = os.fstat(MARK_FD)
        if not (stat.S_ISREG(st.st_mode) and st.st_size >= 8):
            return
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        addr = libc.mmap(None, 8, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, MARK_FD, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return
        _MARKS = ctypes.c_int64.from_address(addr)  # little-endian on every host the engine runs on
        os.close(MARK_FD)
    except (OSError, ValueError, AttributeError):
        _MARKS = None


class CallMark:
    """The call a child is in, in memory it shares with its parent: the
    parent names the call that dies or hangs from here, so a call costs no
    record and no round trip to say that it starts. Two doubles: the
    call's index (-1 between calls) and when it started (monotonic). Each
    start also reaches the engine's mark channel (fd 5: a store into the
    mapped mark file, else 8 bytes on a stream), so the engine names the
    call even if the parent itself was killed."""

    def __init__(self):
        self.mem = mmap.mmap(-1, 16)
        self.end()

    def start(self, idx):
        struct.pack_into("d", self.mem, 8, time.monotonic())
        struct.pack_into("d", self.mem, 0, float(idx))
        if _MARKS is not None:
            _MARKS.value = idx
            return
        try:
            os.write(MARK_FD, idx.to_bytes(8, "little", signed=True))
        except OSError:
            pass  # no mark channel (or the scanned code closed it)

    def end(self):
        struct.pack_into("d", self.mem, 0, -1.0)

    def read(self):
        """(index, start): index -1 between calls; read twice so a call
        that started meanwhile is not given the last one's start."""
        while True:
            idx, t = struct.unpack_from("dd", self.mem, 0)
            if struct.unpack_from("d", self.mem, 0)[0] == idx:
                return int(idx), t


# ---------------------------------------------------------------- discover


def discover(req):
    global OPENERS
    ch = Channel(req.get("nonce", ""))
    limit = req.get("address_space_limit")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if req.get("openers"):
        OPENERS = set(req["openers"])
    max_arity = req.get("max_arity", MAX_ARITY)
    keys = {str(a): (a, []) for a in range(max_arity + 1)}
    for f in req["files"]:
        rec = describe_module(f["path"], f["rel"], req.get("code", False))
        for fn in rec.get("functions", []):
            if fn["required"] <= max_arity:
                keys.setdefault(fn["ladder"], (fn["required"], fn["kinds"]))
        ch.send(rec)
    ch.send({"k": "ladder", "rungs": {k: [display(r) for r in rungs_of(a, kinds)] for k, (a, kinds) in sorted(keys.items())}})
    ch.send({"k": "done"}, flush=True)


def describe_module(path, rel, code=False):
    if not isinstance(path, str) or not isinstance(rel, str):
        # open() of an int would open (and close) a file descriptor.
        raise TypeError("describe_module takes a path and a relative path")
    rec = {"k": "module", "rel": rel}
    try:
        src = _read_source(path)
        if src is None:
            rec["status"] = "too-large"
            rec["error"] = "larger than %d bytes, the bound on a source file (a generated table, or a file made to exhaust memory): skipped" % MAX_SOURCE
            return rec
        tree = compile(src, rel, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except OSError as e:
        rec["status"] = "unreadable"
        rec["error"] = "%s: %s" % (type(e).__name__, e.strerror or e)
        if isinstance(e, PermissionError):
            rec["error"] += " (the probe user reads the tree as others do: chmod -R o+rX, or --runtime host)"
        return rec
    except Exception as e:  # SyntaxError, bytes that are not UTF-8, an AST too deep
        rec["status"] = "unparseable"
        rec["error"] = "%s: %s" % (type(e).__name__, _one_line(e))
        return rec
    rec["status"] = "ok"
    aliases = {}
    top_level = []
    for node in tree.body:
        _collect_imports(node, aliases)
    defs = []
    _module_level(tree.body, defs, top_level)
    names = {n.name for n in defs}
    funcs, by_name = [], {}
    for node in defs:
        by_name.setdefault(node.name, []).append(node)
    for name, nodes in by_name.items():
        funcs.append(_describe_name(nodes, aliases, names))
    funcs.sort(key=lambda f: f["line"])
    for f in funcs:
        f["ladder"] = ladder_key(f["required"], f["kinds"])
    rec["functions"] = funcs
    rec["module_facts"] = _facts(top_level, aliases, names)
    del tree, top_level, defs, by_name  # compiling parses the source again
    if code and len(src) <= MAX_MODULE_RECORD:
        pyc = bytecode(src, path)
        if pyc is not None:
            import base64  # discovery only: no scanned root is on sys.path here
            text = base64.b64encode(pyc).decode("ascii")
            # The record must stay within the engine's longest line, or the
            # module itself would be lost: the code is only a saving.
            if len(text) + len(_encode(rec)) <= MAX_MODULE_RECORD:
                rec["code"] = text
    return rec


# The longest module record discovery sends with its code: well within the
# engine's longest record line (maxRecord, 1 MiB).
MAX_MODULE_RECORD = 768 << 10


def bytecode(src, path):
    """The module's code as a hash-checked pyc (PEP 552), compiled as
    import compiles it (from the source's bytes, named by the path import
    finds it at): discovery compiles each module once per scan and every
    probe child loads it (CodeCache) instead of compiling it again. None
    when it cannot be compiled or holds a frozenset constant, whose
    iteration order would be the compiling process's rather than the
    probe's. (describe_module bounds its size by its record's.)"""
    try:
        co = compile(src, path, "exec", dont_inherit=True)
        if _has_frozenset(co):
            return None
        return _PYC_HEAD + importlib.util.source_hash(src) + marshal.dumps(co)
    except Exception:  # whatever the source is, its module is still described
        return None


# A pyc's header before the source's hash (PEP 552): this interpreter's
# magic number, then flags 3: hash-based, checked against the source.
_PYC_HEAD = importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little")


def _has_frozenset(co):
    """Whether a frozenset is among the constants of co or of any code or
    tuple nested in them (walked without recursion: nesting is the
    source's to choose)."""
    todo = [co]
    while todo:
        c = todo.pop()
        if isinstance(c, frozenset):
            return True
        if isinstance(c, types.CodeType):
            todo.extend(c.co_consts)
        elif isinstance(c, tuple):
            todo.extend(c)
    return False


def code_name(path):
    """The file a module's bytecode is kept in, in the scan's code folder:
    named after the path the module is imported from (the engine names it
    the same way)."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".pyc"


class CodeCache:
    """Loads a scanned module's bytecode from the scan's code folder
    (read-only in every probe, written by the engine from discovery's
    records) when its hash matches the source as read now; anything else
    compiles as usual. Installed as a path hook in the probe's parent,
    before any scanned root is on sys.path."""

    def __init__(self, folder):
        self.folder = folder
        cache = self

        class SourceFileLoader(importlib.machinery.SourceFileLoader):
            def get_code(self, fullname):
                code = cache.load(self.path, self.get_data)
                return code if code is not None else super().get_code(fullname)

        self.loader = SourceFileLoader

    def load(self, path, get_data):
        try:
            with _open_code(os.path.join(self.folder, code_name(path))) as fh:
                data = fh.read()
        except (OSError, ValueError, TypeError):
            return None
        try:
            if data[:8] != _PYC_HEAD:
                return None
            if data[8:16] != importlib.util.source_hash(get_data(path)):
                return None
            code = marshal.loads(memoryview(data)[16:])
        except (OSError, ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, types.CodeType) else None

    def install(self):
        m = importlib.machinery
        hook = m.FileFinder.path_hook(
            (m.ExtensionFileLoader, m.EXTENSION_SUFFIXES),
            (self.loader, m.SOURCE_SUFFIXES),
            (m.SourcelessFileLoader, m.BYTECODE_SUFFIXES))
        sys.path_hooks.insert(0, hook)


# The loader opens the kept code as import opens files, through the
# function captured before anything scanned runs: a module that replaces
# io.open_code or open in its child does not choose what its own later
# imports load from the code folder.
_open_code = io.open_code


# Statements whose bodies run at import, and so can define module-level
# functions: version switches, optional imports, context managers.
_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _module_level(body, defs, top_level):
    """Every def that binds a module-level name, however deep in if, try
    and with blocks, and the code that runs at import."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append(node)
            # Decorators and default values run at import, not at call.
            top_level.extend(node.decorator_list)
            top_level.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
        elif isinstance(node, ast.ClassDef):
            # A class body runs at import; its methods' bodies do not.
            top_level.extend(node.decorator_list + node.bases + node.keywords)
            top_level.extend(n for n in node.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        elif isinstance(node, _BLOCKS):
            if isinstance(node, ast.If):
                top_level.append(node.test)
                blocks = [node.body, node.orelse]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                top_level.extend(node.items)
                blocks = [node.body]
            else:
                top_level.extend(h.type for h in node.handlers if h.type is not None)
                blocks = [node.body, node.orelse, node.finalbody] + [h.body for h in node.handlers]
            for b in blocks:
                _module_level(b, defs, top_level)
        elif not isinstance(node, (ast.Import, ast.ImportFrom)):
            top_level.append(node)


def _is_overload(node):
    for d in node.decorator_list:
        if _last_name(d.func if isinstance(d, ast.Call) else d) == "overload":
            return True
    return False


def _describe_name(nodes, aliases, names):
    """One entry per module-level name: what the import binds is what gets
    probed. @overload stubs fold into the implementation; of several
    definitions (an if/else version switch) the first real one gives the
    signature and the line, and the gate sees all of their calls."""
    real = [n for n in nodes if not _is_overload(n)] or nodes[-1:]
    out = _describe_function(real[0], aliases, names)
    for other in nodes:
        if other is real[0]:
            continue
        more = _describe_function(other, aliases, names)["facts"]
        out["facts"]["calls"].extend(more["calls"])
        out["facts"]["set_iters"] = sorted(set(out["facts"]["set_iters"]) | set(more["set_iters"]))
    if len(real) > 1:
        out["definitions"] = len(real)
    return out


# The largest source file discovery reads. Hand-written modules are far
# smaller; a bigger one (a generated table, an 8 GiB sparse file planted to
# exhaust memory) is listed as too large and skipped.
MAX_SOURCE = 4 << 20


def _read_source(path):
    """A source file's bytes, or None when it is above MAX_SOURCE. Only a
    regular file is read, without blocking: a FIFO, a device or a procfs
    file behind a link is an error, never a stalled discovery."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > MAX_SOURCE:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_SOURCE + 1)
        return None if len(data) > MAX_SOURCE else data
    finally:
        os.close(fd)


def _one_line(e):
    if isinstance(e, SyntaxError):
        return "%s (line %s)" % (e.msg, e.lineno)
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _collect_imports(node, aliases):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Import):
            for a in sub.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
            for a in sub.names:
                aliases[a.asname or a.name] = sub.module + "." + a.name


def _describe_function(node, aliases, names):
    a = node.args
    positional = a.posonlyargs + a.args
    required = len(positional) - len(a.defaults)
    kwonly_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    kinds = [annotation_kind(p.annotation) for p in positional[:required]]
    local = dict(aliases)
    _collect_imports(node, local)
    return {
        "name": node.name,
        "line": node.lineno,
        "async": isinstance(node, ast.AsyncFunctionDef),
        "required": required,
        "vararg": a.vararg.arg if a.vararg else "",
        "varkw": a.kwarg.arg if a.kwarg else "",
        "kwonly_required": kwonly_required,
        "params": [p.arg for p in positional],
        "kinds": kinds,
        "facts": _facts(node.body, local, names),
    }


def _dotted(expr, aliases):
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        if expr.id in aliases:
            return ".".join([aliases[expr.id]] + parts[::-1])
        if parts:  # a method on a local value: only its name is known
            return "." + parts[0]
        return expr.id
    if parts:  # a method on something computed: only its name is known
        return "." + parts[0]
    return ""


def _facts(body, aliases, names):
    """What the gate and the smell linter need: each call's dotted name, the
    mode of every open(), and loops over sets."""
    calls, set_iters = [], []
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call):
                name = _dotted(n.func, aliases)
                if not name:
                    continue
                rec = {"name": name, "line": n.lineno}
                if n.args or n.keywords:
                    rec["args"] = len(n.args) + len(n.keywords)
                if name in names:
                    rec["local"] = True
                if name in OPENERS:
                    rec["mode"] = _open_mode(n)
                calls.append(rec)
                if name in ("list", "tuple", "sorted", "enumerate", "iter", "next") and n.args and _is_set(n.args[0]):
                    set_iters.append(n.lineno)
            elif isinstance(n, (ast.For, ast.comprehension)) and _is_set(n.iter):
                set_iters.append(getattr(n, "lineno", getattr(n.iter, "lineno", 0)))
    return {"calls": calls, "set_iters": sorted(set(set_iters))}


# The calls whose mode discovery records for the gate: the engine sends the
# gate's own list in the discovery request ("openers"), so the two never
# drift apart; this default is for the worker's Python tests.
OPENERS = {"open", "builtins.open", "io.open", "codecs.open", "os.fdopen", ".open"}


def _is_set(e):
    if isinstance(e, (ast.Set, ast.SetComp)):
        return True
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("set", "frozenset")


def _open_mode(call):
    mode = None
    if len(call.args) >= 2:
        mode = call.args[1]
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return "r"
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return mode.value
    return "?"


# ------------------------------------------------------------------- probe


def probe(plan):
    """The parent: it never imports or calls anything scanned. Each stretch
    of one module's calls runs in a child forked from it, which reports
    over a pipe of its own; the parent checks every record against the plan
    (the child may speak only of its own module's calls, in turn) and
    passes it on. The channel, the nonce and the plan stay here: the child
    closes the channel before anything scanned runs, so scanned code can
    change the verdicts of its own module only."""
    ch = Channel(plan.pop("nonce"))
    _harden()
    _map_marks()
    if plan.get("code_dir"):
        CodeCache(plan["code_dir"]).install()
    if plan.get("umask"):
        os.umask(int(plan["umask"], 8))
    limit = plan.get("address_space_limit")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    calls, functions = plan["calls"], plan["functions"]
    skip = set(plan.get("skip", []))
    dead = set()  # modules whose import failed or whose child died outside a call
    cuts = set(plan.get("segments") or ()) | {plan.get("start", 0), len(calls)}
    prev = None
    for idx in range(plan.get("start", 0), len(calls)):
        mi = functions[calls[idx][0]]["module"]
        if mi != prev:
            cuts.add(idx)
            prev = mi
    bounds = sorted(c for c in cuts if c >= plan.get("start", 0))
    for lo, hi in zip(bounds, bounds[1:]):
        mi = functions[calls[lo][0]]["module"]
        while lo < hi and mi not in dead:
            lo = _run_child(plan, ch, lo, hi, mi, skip, dead)
        _sweep_children()
    ch.send({"k": "done"}, flush=True)


def _harden():
    """The parent is not dumpable (no child may read its memory or its
    descriptors through /proc, or trace it) and reaps every orphan its
    children leave, so it can end them before the next module runs."""
    global _PRCTL
    try:
        import ctypes
        _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
        _PRCTL(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE
        _PRCTL(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


# libc's prctl, looked up once by the parent: a child only calls it.
_PRCTL = None


def _child_dumpable():
    if _PRCTL is not None:
        _PRCTL(4, 1, 0, 0, 0)


def _sweep_children():
    """Kill whatever the last child left running (a daemon it forked
    reparents here): nothing of one module outlives its stretch."""
    me = os.getpid()
    for _ in range(1000):
        kids = _children(me)
        if not kids:
            break
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        for k in kids:
            try:
                os.waitpid(k, 0)
            except OSError:
                pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        pass
    kids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as fh:
                    if int(fh.read().rsplit(b")", 1)[1].split()[1]) == pid:
                        kids.append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    return kids


# What a child may say, and the type of each field it may set. The parent
# passes on exactly these fields.
_CHILD_FIELDS = {
    "is": {"m": int}, "id": {"m": int}, "if": {"m": int, "err": str},
    "nc": {"i": int, "why": str},
    "r": {"i": int, "v": str, "o": str, "x": str, "th": int, "b": str, "v2": str},
    "end": {},
}
MAX_RECORD = 1 << 20


def _run_child(plan, ch, lo, hi, mi, skip, dead):
    """Runs calls lo..hi (all of module mi) in a child and relays its
    records. Returns where the stretch goes on: hi when it is done; when
    the child died, the first call it has no answer for (the call it died
    in is charged and its function skipped)."""
    r, w = os.pipe()
    ar, aw = os.pipe()
    mark = CallMark()
    # Everything the parent holds moves to the permanent generation: the
    # child's collector then never touches it, so the child copies only the
    # pages it really writes.
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            os.close(aw)
            os.close(ch.fd)
            _child_dumpable()
            own = Channel(None, w, ar)
            run_calls(plan, own, lo, hi, skip, mark)
            own.send({"k": "end"}, flush=True)
        except BaseException:
            code = 98
        _flush_streams()
        os._exit(code)
    os.close(w)
    os.close(ar)
    relay = _Relay(plan, ch, lo, hi, mi, skip, aw, mark)
    status = relay.run(r, pid)
    os.close(r)
    os.close(aw)
    ch.flush()
    if relay.ended:
        if relay.failed:
            dead.add(mi)
        return hi
    # The child died, hung or said what it may not: name the step it was in.
    rec = {"k": "gone", "m": mi, "why": relay.tampered or relay.timeout or _describe(status)}
    if relay.tampered:
        rec["t"] = True
    if relay.timeout:
        rec["to"] = True
    call = -1 if relay.step == "import" else relay.in_call()
    if call >= 0:
        rec["i"] = call
    ch.send(rec, flush=True)
    if call >= 0:
        skip.add(plan["calls"][call][0])
        return relay.last + 1
    dead.add(mi)
    return hi


def _describe(status):
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        try:
            return "killed by " + signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            return "killed by signal %d" % os.WTERMSIG(status)
    return "exit status %d" % os.WEXITSTATUS(status)


class _Relay:
    """The parent's check of one child's records: the kinds and fields
    above, about module mi and calls lo..hi only, each in turn; and the
    child's limits (an import, a call) kept from its call mark."""

    def __init__(self, plan, ch, lo, hi, mi, skip, acks, mark):
        self.plan, self.ch, self.lo, self.hi, self.mi, self.skip = plan, ch, lo, hi, mi, skip
        self.acks, self.mark = acks, mark
        self.call_limit = plan.get("call_timeout") or 10.0
        self.import_limit = plan.get("import_timeout") or 30.0
        self.step = None  # "import" while the module's import runs
        self.import_started = 0.0
        self.last = lo - 1  # the last call answered (or found not callable)
        self.imported = False
        self.failed = False  # the import raised
        self.ended = False
        self.tampered = ""
        self.timeout = ""

    def in_call(self):
        """The call the child is in by its mark, when the mark names one of
        its own calls that it has not answered; -1 otherwise."""
        idx, _ = self.mark.read()
        calls, functions = self.plan["calls"], self.plan["functions"]
        if self.last < idx < self.hi and functions[calls[idx][0]]["module"] == self.mi and calls[idx][0] not in self.skip:
            return idx
        return -1

    def _deadline(self):
        if self.step == "import":
            return self.import_started + self.import_limit
        idx, started = self.mark.read()
        if idx >= 0:
            return started + self.call_limit
        return None

    def run(self, r, pid):
        """Relays until the child ends; returns its wait status."""
        os.set_blocking(r, False)
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        poller = select.poll()
        poller.register(r, select.POLLIN)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        buf = b""
        status = None
        try:
            while status is None and not self.tampered and not self.timeout:
                deadline = self._deadline()
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                # Between calls, look again soon: the next call's mark
                # brings a deadline that no record announces.
                if wait is None:
                    wait = MARK_POLL
                elif pidfd is None:  # no pidfd: a child's exit is seen by polling too
                    wait = min(wait, MARK_POLL)
                events = dict(poller.poll(int(wait * 1000) + 1))
                buf, eof = self._drain(r, buf)
                self.ch.flush()
                if self.tampered:
                    break
                if eof or pidfd in events or pidfd is None:
                    got, st = os.waitpid(pid, 0 if eof or pidfd in events else os.WNOHANG)
                    if got:
                        status = st
                if status is None and not events and deadline is not None and time.monotonic() >= deadline:
                    self.timeout = ("import ran past %gs" % self.import_limit if self.step == "import"
                                    else "ran past the %gs call limit" % self.call_limit)
            if status is not None and not self.tampered:
                buf, _ = self._drain(r, buf)  # what it wrote last
        finally:
            if pidfd is not None:
                os.close(pidfd)
        if status is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            status = os.waitpid(pid, 0)[1]
        return status

    def _drain(self, r, buf):
        while not self.tampered:
            try:
                data = os.read(r, 1 << 16)
            except BlockingIOError:
                return buf, False
            if not data:
                return buf, True
            buf = self._lines(buf + data)
        return buf, False

    def _lines(self, buf):
        *lines, rest = buf.split(b"\n")
        for line in lines:
            if self.tampered or self.ended:
                return b""
            self._one(line)
        if self.tampered or self.ended:
            return b""
        if len(rest) > MAX_RECORD:
            self.tampered = "wrote a record longer than %d bytes to its channel" % MAX_RECORD
        return rest

    def _one(self, line):
        try:
            rec = json.loads(line)
            kind = rec["k"]
            fields = _CHILD_FIELDS[kind]
        except (ValueError, KeyError, TypeError):
            self.tampered = "wrote to its record channel"
            return
        out = {"k": kind}
        for key, value in rec.items():
            if key == "k":
                continue
            want = fields.get(key)
            if want is None or type(value) is not want:
                self.tampered = "wrote a record field it may not (%s)" % key[:40]
                return
            out[key] = value
        if not self._in_turn(kind, out):
            self.tampered = "wrote a record out of turn (%s)" % kind
            return
        if kind != "end":
            self.ch.send(out, flush=kind in ("is", "id", "if"))
        if kind in ("is", "id", "if"):
            try:
                os.write(self.acks, b".")
            except OSError:
                pass

    def _in_turn(self, kind, rec):
        calls, functions = self.plan["calls"], self.plan["functions"]
        if kind == "is":
            ok = self.step is None and not self.imported and rec.get("m") == self.mi
            if ok:
                self.step, self.import_started = "import", time.monotonic()
            return ok
        if kind in ("id", "if"):
            ok = self.step == "import" and rec.get("m") == self.mi
            if ok:
                self.step, self.imported = None, True
                self.failed = kind == "if"
            return ok
        if kind in ("r", "nc"):
            i = rec.get("i")
            ok = (self.step is None and self.imported and i is not None and self.last < i < self.hi
                  and i >= self.lo and calls[i][0] not in self.skip
                  and functions[calls[i][0]]["module"] == self.mi)
            if ok:
                self.last = i
                if kind == "nc":
                    self.skip.add(calls[i][0])
            return ok
        if kind == "end":
            ok = self.step is None
            self.ended = ok
            return ok
        return False


def run_calls(plan, ch, lo, hi, skip, mark):
    """Calls plan["calls"][lo:hi] in order, importing each module at its
    first call, marking each call's start in mark and queueing a result
    record per call."""
    state = ProcessState()
    modules = plan["modules"]
    loaded = {}
    skip = set(skip)
    calls = plan["calls"]
    functions = plan["functions"]
    for idx in range(lo, hi):
        fi, ri = calls[idx]
        if fi in skip:
            continue
        fn = functions[fi]
        mi = fn["module"]
        if mi not in loaded:
            ch.step({"k": "is", "m": mi})
            loaded[mi] = _import(modules[mi])
            state.after_import()
            state.restore()
            if isinstance(loaded[mi], str):
                ch.step({"k": "if", "m": mi, "err": loaded[mi]})
            else:
                # Acknowledged too: a function that kills the parent must
                # not leave the engine believing the import still runs.
                ch.step({"k": "id", "m": mi})
        mod = loaded[mi]
        if isinstance(mod, str):
            continue
        # The mark goes first: looking the name up can run scanned code
        # (a module __getattr__), and that must be under the call's limit.
        mark.start(idx)
        try:
            target = getattr(mod, fn["name"], _UNBOUND)
        except BaseException as e:
            target = e
        if target is _UNBOUND:
            ch.send({"k": "nc", "i": idx, "why": "after import the module has no attribute %s: defined in a block that did not run here, or deleted" % fn["name"]})
            mark.end()
            skip.add(fi)
            state.restore()
            continue
        if not callable(target) or isinstance(target, BaseException):
            ch.send({"k": "nc", "i": idx, "why": "after import, %s is %s, not a function" % (fn["name"], type(target).__name__)})
            mark.end()
            skip.add(fi)
            state.restore()
            continue
        base = rungs_of(fn["arity"], fn.get("kinds"))[ri]
        threads = threading.active_count()
        before = set(threading.enumerate()) if threads > 1 else None
        rec = {"k": "r", "i": idx}
        v, free, why, breaker, v2 = probe_call(target, base, state.restore, fn.get("order_free", ()))
        if v is None:
            rec["x"] = why
        else:
            rec["v"] = v
            if free is not None:
                rec["o"] = free
            if breaker:
                rec["b"], rec["v2"] = breaker, v2
        mark.end()
        # Threads are counted first: enumerating them costs more than a
        # call, and almost no call leaves one.
        if threading.active_count() > 1:
            leaked = [t for t in threading.enumerate() if (before is None or t not in before)
                      and t is not threading.main_thread() and not t.daemon and t.is_alive()]
            if leaked:
                rec["th"] = len(leaked)
                state.restore()  # the thread may have moved it since
        ch.send(rec)


_UNBOUND = object()
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), _dt.date, _dt.timedelta, _dt.time, pathlib.PurePath)


def _immutable(x):
    if isinstance(x, tuple):
        return all(_immutable(e) for e in x)
    return isinstance(x, _IMMUTABLE)


def fresh(args):
    """A copy of a rung that the call may change without changing the
    ladder; an immutable rung is its own copy. How to copy each rung is
    decided once (the ladder's rungs live as long as the process)."""
    how = _COPIERS.get(id(args))
    if how is None or how[0] is not args:
        how = _COPIERS[id(args)] = (args, _copier(args))
    return how[1](args)


_COPIERS = {}
_FLAT = {list: list, dict: dict, set: set, bytearray: bytearray}


def _copier(args):
    """The cheapest copy of args that is as deep as copy.deepcopy's: the
    rung itself when immutable; a shallow copy of each list, dict, set or
    bytearray that holds only immutables (and appears once); deepcopy for
    anything else."""
    if _immutable(args):
        return lambda a: a
    if type(args) is not tuple:
        return copy.deepcopy
    seen = set()
    kinds = []
    for a in args:
        if _immutable(a):
            kinds.append(None)
            continue
        flat = _FLAT.get(type(a))
        items = a.items() if type(a) is dict else a
        if flat is None or id(a) in seen or not all(_immutable(e) for e in items):
            return copy.deepcopy
        seen.add(id(a))
        kinds.append(flat)
    return lambda a: tuple(a[i] if k is None else k(a[i]) for i, k in enumerate(kinds))


def call(target, args):
    """One call: (canonical, order_free, None), or (None, None, why) when
    the answer has no canonical form."""
    try:
        value = target(*args)
    except BaseException as e:  # raising is an answer: its type is canonical
        return raised(e), None, None
    try:
        v, free = answer(value)
        return v, free, None
    except NoCanon as e:
        return None, None, str(e)
    except RecursionError:
        return None, None, "nested too deeply to canonicalise"
    except MemoryError:
        return None, None, "too large to canonicalise"
    except BaseException as e:  # a __repr__ that raises is the value's, not the worker's
        return None, None, "its repr raised %s" % _typename(type(e))


def probe_call(target, base, reset=lambda: None, order_free=()):
    """One rung: the call, then the governor's in-process breakers. Every
    call is made from this one line, so a function that looks at its
    caller's stack sees the same stack each time. Returns (canonical,
    order_free, why, breaker, second answer)."""
    first = first_free = None
    for breaker, args in _breaker_inputs(base, order_free):
        v, free, why = call(target, args)
        reset()
        if breaker is None:
            if v is None:
                return None, None, why, None, None
            first, first_free = v, free
        elif v is not None and v != first:
            return first, first_free, None, breaker, v
    return first, first_free, None, None, None


def _breaker_inputs(base, order_free=()):
    """The rung, then the governor's breakers' inputs: the identical input
    again (hidden state, clocks, RNGs break here), every dict rebuilt in
    reversed key order (reliance on insertion order breaks here), and each
    argument declared order-free reversed (an order that should not matter
    but does breaks here)."""
    yield None, fresh(base)
    yield "repeat", fresh(base)
    if _has_dict(base):
        yield "dict-order", _reverse_dicts(copy.deepcopy(base))
    for i in order_free:
        if i < len(base) and isinstance(base[i], (list, tuple)) and len(base[i]) > 1:
            args = copy.deepcopy(base)
            yield "order-free", args[:i] + (type(args[i])(reversed(args[i])),) + args[i + 1:]


def _has_dict(x):
    if isinstance(x, dict):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_dict(e) for e in x)
    return False


def _reverse_dicts(x, memo=None):
    """A copy with every dict in reversed key order; an object that appears
    twice in the input appears twice in the copy, as one object."""
    if memo is None:
        memo = {}
    if id(x) in memo:
        return memo[id(x)]
    if isinstance(x, dict):
        out = memo[id(x)] = {}
        for k, v in reversed(list(x.items())):
            out[k] = _reverse_dicts(v, memo)
        return out
    if isinstance(x, list):
        out = memo[id(x)] = []
        out.extend(_reverse_dicts(e, memo) for e in x)
        return out
    if isinstance(x, tuple):
        out = memo[id(x)] = tuple(_reverse_dicts(e, memo) for e in x)
        return out
    return x


class ProcessState:
    """What one call may change that would leak into the next function's
    calls and make it look nondeterministic: the working directory, the
    standard streams, the environment, sys.path, sys.argv, the umask, the
    locale.
    Restored after every call; the probe is about the function, not about
    whatever ran before it."""

    def __init__(self):
        self.locale = locale
        self.cwd = os.getcwd()
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        # Copies of descriptors 0-2, so a call that closes or replaces one
        # does not change what the next call sees.
        self.fds = {}
        for fd in (0, 1, 2):
            try:
                st = os.fstat(fd)
                self.fds[fd] = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 800), st.st_dev, st.st_ino)
            except OSError:
                pass
        # os.environ compares slowly (it decodes every key); its raw
        # mapping compares fast.
        self.raw = getattr(os.environ, "_data", None)
        self.environ = dict(os.environ)
        self.raw_copy = dict(self.raw) if self.raw is not None else None
        self.path = list(sys.path)
        self.argv = list(sys.argv)
        self.umask = os.umask(0)
        os.umask(self.umask)
        try:
            self.locale_name = locale.setlocale(locale.LC_ALL, None)
        except locale.Error:
            self.locale_name = None

    def restore(self):
        try:
            if os.getcwd() != self.cwd:  # cheaper than a chdir every time
                os.chdir(self.cwd)
        except OSError:
            try:
                os.chdir(self.cwd)
            except OSError:
                pass
        sys.stdin, sys.stdout, sys.stderr = self.streams
        for fd, (copy_fd, dev, ino) in self.fds.items():
            try:
                st = os.fstat(fd)
                same = st.st_dev == dev and st.st_ino == ino
            except OSError:
                same = False
            if not same:
                try:
                    os.dup2(copy_fd, fd, inheritable=True)
                except OSError:
                    pass
        if (self.raw != self.raw_copy) if self.raw is not None else (os.environ != self.environ):
            os.environ.clear()
            os.environ.update(self.environ)
            self.raw = getattr(os.environ, "_data", None)
        if sys.path != self.path:
            sys.path[:] = self.path
        # A command-line entry point that rewrites sys.argv (profile.main
        # does) must not change what the next one parses.
        if sys.argv != self.argv:
            sys.argv[:] = self.argv
        os.umask(self.umask)
        if self.locale_name is not None:
            try:
                if self.locale.setlocale(self.locale.LC_ALL, None) != self.locale_name:
                    self.locale.setlocale(self.locale.LC_ALL, self.locale_name)
            except self.locale.Error:
                pass

    def after_import(self):
        """An import may rightly extend sys.path; keep what it did."""
        self.path = list(sys.path)


def _import(m):
    """Import a module by its dotted name with its package root first on
    sys.path, so relative imports work. A name that is already taken by a
    different module (the worker's own, or the standard library's) is loaded
    from its file under a private name instead."""
    root, name, path = m["root"], m["name"], m["path"]
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        top = name.split(".")[0]
        existing = sys.modules.get(top)
        if existing is not None and not _same_root(existing, root):
            if "." in name:
                return "ImportError: package %s is shadowed by an already imported module of that name" % top
            alias = "_nondet_%d_%s" % (m["index"], name)
            spec = importlib.util.spec_from_file_location(alias, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[alias] = mod
            spec.loader.exec_module(mod)
            return mod
        return importlib.import_module(name)
    except BaseException as e:
        msg = str(e).splitlines()[0] if str(e) else ""
        return "%s: %s" % (_typename(type(e)), msg[:300])


def _same_root(module, root):
    f = getattr(module, "__file__", None)
    if not f:
        return False
    return os.path.realpath(f).startswith(os.path.realpath(root) + os.sep)


# ----------------------------------------------------------------- posture


def _io_uring_errno():
    """What io_uring_setup answers: EPERM (1) under the seccomp profile;
    EFAULT (14) when the kernel got as far as reading its arguments."""
    try:
        import ctypes
        import platform
        if platform.machine() not in ("x86_64", "aarch64"):
            return -1
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(425, 1, ctypes.c_void_p(0)) != -1:
            return 0
        return ctypes.get_errno()
    except (OSError, AttributeError):
        return -1


def _cpu_share():
    """The CPU time one busy thread gets per second of wall time, over half
    a second: about 1 without a quota, at most about the quota with one
    (the cgroup files are not mounted in a probe; this is what a probe can
    see of its CPU limit)."""
    import time
    wall0, cpu0 = time.monotonic(), time.process_time()
    while time.monotonic() - wall0 < 0.5:
        pass
    return round((time.process_time() - cpu0) / (time.monotonic() - wall0), 2)


def posture(req):
    """What a probe sees of its sandbox, for `nondet-sandbox doctor`."""
    ch = Channel(req.get("nonce", ""))
    rec = {"k": "posture"}
    status = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                status[key] = value.strip()
    except OSError:
        pass
    rec["cap_effective"] = status.get("CapEff", "")
    rec["cap_bounding"] = status.get("CapBnd", "")
    rec["cap_permitted"] = status.get("CapPrm", "")
    rec["seccomp"] = status.get("Seccomp", "")
    rec["no_new_privs"] = status.get("NoNewPrivs", "")
    rec["uid"], rec["gid"], rec["pid"] = os.getuid(), os.getgid(), os.getpid()
    try:
        import socket
        rec["hostname"] = socket.gethostname()
    except OSError:
        rec["hostname"] = ""
    try:
        with open("/proc/self/uid_map") as fh:
            rec["uid_map"] = " ".join(fh.read().split())
    except OSError:
        rec["uid_map"] = ""
    interfaces = []
    try:
        with open("/proc/net/dev") as fh:
            for line in fh.readlines()[2:]:
                interfaces.append(line.split(":")[0].strip())
    except OSError:
        pass
    rec["interfaces"] = sorted(interfaces)
    writable, readonly = [], []
    try:
        with open("/proc/self/mountinfo") as fh:
            points = sorted({line.split()[4] for line in fh if line.strip()})
    except OSError:
        points = []
    # Outside a container the mount points are the host's own: nothing is
    # written there, the permission bits answer instead.
    write = req.get("write_test", True)
    for point in points:
        if point.startswith(("/proc", "/sys")):
            continue
        if not write:
            (writable if os.access(point, os.W_OK) else readonly).append(point)
            continue
        probe_path = os.path.join(point, ".nondet-sandbox-write-test-%d" % os.getpid())
        try:
            fd = os.open(probe_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError:
            readonly.append(point)
            continue
        os.close(fd)
        os.unlink(probe_path)
        writable.append(point)
    rec["writable"], rec["readonly"] = writable, readonly
    limits = {}
    try:
        for name in ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_CORE"):
            soft, _ = resource.getrlimit(getattr(resource, name))
            limits[name] = soft
    except (ImportError, OSError, ValueError):
        pass
    rec["rlimits"] = limits
    rec["cpu_share"] = _cpu_share()
    rec["io_uring_errno"] = _io_uring_errno()
    rec["env"] = sorted(os.environ)
    ch.send(rec)
    ch.send({"k": "done"}, flush=True)


def _flush_streams():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


# The exit status of a worker that found a network it can reach and ran
# nothing (sandbox/kubernetes.NetworkExit).
NETWORK_EXIT = 86


def reachable(timeout=1.5, route="/proc/net/route", route6="/proc/net/ipv6_route", environ="/proc/1/environ"):
    """Where a probe here could connect beyond loopback, or "" when
    nowhere: every route's gateway and first address, the world when there
    is a default route, the cluster's API service (from pid 1's
    environment). A connection made or refused is reachable (a packet came
    back); only unreachable and silence are not."""
    targets = []
    try:
        with open(route) as fh:
            for line in fh.read().splitlines()[1:]:
                f = line.split()
                if len(f) < 8 or f[0] == "lo":
                    continue
                dest, gw, mask = int(f[1], 16), int(f[2], 16), int(f[7], 16)
                if gw:
                    targets += [(socket.inet_ntoa(struct.pack("<I", gw)), p) for p in (53, 80, 443, 6443, 10250)]
                elif mask != 0xFFFFFFFF:
                    first = socket.ntohl(dest) + 1
                    targets += [(socket.inet_ntoa(struct.pack(">I", first)), p) for p in (53, 80, 443, 10250)]
                if dest == 0:
                    targets += [("1.1.1.1", 53), ("8.8.8.8", 53), ("1.1.1.1", 443)]
    except (OSError, ValueError):
        return "cannot read the routing table"
    try:
        with open(route6) as fh:
            for line in fh.read().splitlines():
                f = line.split()
                if len(f) >= 10 and f[9] != "lo" and f[1] == "00":
                    targets.append(("2606:4700:4700::1111", 443))
    except OSError:
        pass
    try:
        with open(environ, "rb") as fh:
            env = dict(kv.split(b"=", 1) for kv in fh.read().split(b"\0") if b"=" in kv)
        host = env.get(b"KUBERNETES_SERVICE_HOST")
        if host:
            targets.append((host.decode(), int(env.get(b"KUBERNETES_SERVICE_PORT", b"443"))))
    except (OSError, ValueError):
        pass
    pending = {}
    found = ""
    for host, port in dict.fromkeys(targets):
        try:
            fam = socket.AF_INET6 if ":" in host else socket.AF_INET
            sk = socket.socket(fam, socket.SOCK_STREAM)
        except OSError:
            continue
        sk.setblocking(False)
        rc = sk.connect_ex((host, port))
        if rc in (0, errno.ECONNREFUSED):
            found = found or "%s port %d" % (host, port)
            sk.close()
        elif rc == errno.EINPROGRESS:
            pending[sk] = (host, port)
        else:
            sk.close()
    end = time.monotonic() + timeout
    while pending and not found:
        left = end - time.monotonic()
        if left <= 0:
            break
        _, done, _ = select.select([], list(pending), [], left)
        for sk in done:
            host, port = pending.pop(sk)
            if sk.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) in (0, errno.ECONNREFUSED):
                found = found or "%s port %d" % (host, port)
            sk.close()
    for sk in pending:
        sk.close()
    return found


def deny_io_uring():
    """Refuses io_uring (EPERM) to this process and all it starts, with a
    seccomp filter of its own on top of the platform's: a cluster's
    RuntimeDefault profile may be older than the one every other runtime
    applies, which refuses it."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]

    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | errno.EPERM
    code = [
        (ld, 0, 0, 4),                 # the architecture
        (jeq, 2, 0, 0xC000003E),       # x86_64
        (jeq, 1, 0, 0xC00000B7),       # aarch64
        (ret, 0, 0, allow),
        (ld, 0, 0, 0),                 # the syscall's number
        (jeq, 3, 0, 425),              # io_uring_setup
        (jeq, 2, 0, 426),              # io_uring_enter
        (jeq, 1, 0, 427),              # io_uring_register
        (ret, 0, 0, allow),
        (ret, 0, 0, eperm),
    ]
    insns = (Insn * len(code))(*[Insn(*c) for c in code])
    prog = Prog(len(code), insns)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


def main(argv):
    if len(argv) != 2 or argv[1] not in ("discover", "probe", "posture"):
        sys.stderr.write("usage: worker.py discover|probe|posture 4<REQUEST.json\n")
        return 2
    # The request comes on fd 4, which no path leads to; closed before
    # anything scanned runs.
    with open(REQUEST_FD, encoding="utf-8", closefd=True) as fh:
        req = json.load(fh)
    if req.get("check_network"):
        # The platform's sandbox, not ours: fail closed where anything
        # could be reached, and refuse io_uring as every other runtime does.
        if reachable():
            os._exit(NETWORK_EXIT)
        deny_io_uring()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    if argv[1] == "discover":
        discover(req)
    elif argv[1] == "posture":
        posture(req)
    else:
        probe(req)
    _flush_streams()
    # Leave at once: a non-daemon thread the scanned code left running would
    # otherwise hold the interpreter open at shutdown.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
