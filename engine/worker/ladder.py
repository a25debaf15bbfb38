"""The ladder: the values every function is called with, by arity and by
what its parameters' annotations say they take. It lives here and nowhere
else."""

import ast
import datetime as _dt
import io
import pathlib

from .values import (_BytesStream, _TextStream, _built, _callback, _color, _connected, _module, _plain, _point,
                     _point_class, _Readline, _trees, _with_source)


# The ladder: one fixed list of values, documented here and only here.
# Arity n uses every value repeated n times, then a few mixed rungs. The
# narrow (3-key) and wide (8-key) dicts are both here on purpose: a hash-order
# defect on 3 keys is missed by three runs 2.8% of the time, on 8 keys about
# once in a billion. Dates, times and paths come last: what real code takes
# (a "time since" formatter, a date parser that fills in today, a `~`
# expander) and what no scalar rung reaches; then one character, a number
# in a string, an encoding's name and two streams, which parsers, codecs and
# character tables take, and a function, which higher-order code takes.
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
    "data": lambda v: type(v) is bytes,
    "callable": lambda v: v is _callback,
    "socket": lambda v: False,
}


# Values of a shape real code takes, tried first for a parameter whose
# name asks for one (name_kind) and whose annotation says nothing (or str,
# for the string kinds): a version parser, a URL splitter, a zone lookup,
# a codec helper, an AST walker, a class decorator never reach their body
# with the plain values of the ladder. They come before the whole ladder,
# so such a parameter has as many rungs more. Only names that mean one
# thing in most code ask: `key` or `b` never do; `file` and `data` ask for
# a stream and bytes first, and the ladder's paths and strings still
# follow.
TYPED_VALUES = {
    "version": ["1.2.3", "2.0.0-rc.1", "0.9"],
    "url": ["https://example.org/a/b?q=1#top", "http://localhost:8080/", "example.org/path"],
    "email": ["user@example.org", "Jane Doe <jane@example.org>", "user+tag@mail.example.org"],
    "zone": ["Europe/Berlin", "America/New_York", "UTC"],
    "localename": ["de_DE.UTF-8", "en_US", "C"],
    "isodate": ["2024-02-29", "2024-02-29T13:45:30", "2024-02-29T13:45:30+00:00"],
    "json": ['{"a": 1, "b": [1, 2]}', "[]", '"text"'],
    "encoding": ["utf-8", "latin-1", "ascii"],
    "errors": ["strict", "replace", "ignore"],
    "digest": ["sha256", "md5", "sha1"],
    "format": ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%s"],
    "pattern": ["^a", r"(\w+)@(\w+)", "[0-9]+"],
    "source": ["x = 1\n", "1 + 1", "def f(a):\n    return a\n"],
    "attr": ["__name__", "__doc__", "real"],
    "modname": ["json", "os.path", "colorsys"],
    "timetuple": [(2024, 2, 29, 13, 45, 30, 3, 60, 0)],
}


TYPED_VALUES.update({
    "module": ["json", "os.path", _built(_module)],
    "class": [_built(_color), _built(_point_class), _built(_plain)],
    "object": [_built(_with_source), _built(_point), _built(_module)],
    "node": [_built(lambda i=i: _trees()[i]) for i in range(3)],
    "readline": [_built(lambda: _Readline([b"x = 1\n", b"y = 2\n"])), _built(lambda: _Readline(["x = 1\n", "y = 2\n"]))],
    # Built anew per call: zero bytes (a binary reader's lengths and
    # counts, which lines of text would make huge) and a few lines of text
    # (a parser's, a line counter's); the ladder's own streams follow.
    "stream": [_built(lambda: _BytesStream(bytes(8))), _built(lambda: _TextStream("alpha\nbeta\ngamma\n"))],
    "data": [b"alpha\nbeta\ngamma\n", b"\x00\x01\x7f\x80\xff"],
})
try:  # a sandbox may refuse even a pair of connected sockets
    TYPED_VALUES["socket"] = [_built(_connected)]
except OSError:
    TYPED_VALUES["socket"] = []


def _column(kind):
    typed = TYPED_VALUES.get(kind, [])
    if kind == "path":
        rest = [v for v in LADDER if not (type(v) is str and v in _PATHS)]
        return [pathlib.Path(p) for p in _PATHS] + rest
    test = KIND_VALUES.get(kind)
    if test is None:
        return typed + LADDER
    first = [v for v in LADDER if test(v)]
    rest = [v for v in LADDER if not test(v)]
    if kind == "int":
        first, rest = [v for v in first if not _huge(v)], rest + [v for v in first if _huge(v)]
    return typed + first + rest


def _huge(v):
    return type(v) is int and abs(v) > 2 ** 32


# Where a parameter's kind reorders its column, the huge int of the other
# columns goes last: it then meets the ladder's last values, not a real
# container a reordered column put beside it (divide(2**70, [3, 1, 2])
# only runs into the call limit).
_TAME = [v for v in LADDER if not _huge(v)] + [v for v in LADDER if _huge(v)]


def rungs(arity, kinds=None):
    """The rungs of a function of this arity whose required parameters
    have these kinds (None or "" for a parameter that says nothing)."""
    if arity == 0:
        return [()]
    kinds = list(kinds or [])[:arity] + [""] * max(0, arity - len(kinds or []))
    cols = [_column(k) if k or not any(kinds) else _TAME for k in kinds]
    n = max(len(c) for c in cols)
    return [tuple(c[j % len(c)] for c in cols) for j in range(n)] + MIXED.get(arity, [])


def ladder_key(arity, kinds):
    """Names one ladder: functions with the same key get the same rungs."""
    kinds = [k or "" for k in list(kinds or [])[:arity]]
    while kinds and not kinds[-1]:
        kinds.pop()
    return "%d:%s" % (arity, ",".join(kinds)) if kinds else str(arity)


# A method is called on a fresh instance per call, built from one of a few
# receivers: the constructor called with no arguments when it requires
# none; otherwise with RECEIVER_VALUES[i] in every parameter its
# annotations say nothing of (an int, a word, a list: what constructors
# most often take), or the i-th value of the kind they name. Three, so a
# method's answer is seen on instances in different states while a method
# costs what a function does: rung j is the method's rung j on receiver j
# modulo three (a method with one rung is called on each receiver).
RECEIVER_VALUES = [0, "alpha", FIVE_WORDS]

# A receiver is built from at most this many constructor arguments (the
# engine's maxReceiverArity comes in the discovery request), and a method
# is called on at most MAX_RECEIVERS receivers.
MAX_RECEIVER_ARITY = 6
MAX_RECEIVERS = 6
MAX_EXTRA = 3
EXTRA_RUNGS = 8


class Built:
    """How an instance is built: a call of the method's class (call None)
    or of a class or factory of the package (call: [module, qualified
    name]) on arguments, which may be Built themselves. A recipe, not the
    instance: each call builds it anew (calls.build). module is the
    method's module, in whose terms the call is shown."""

    __slots__ = ("call", "args", "module")

    def __init__(self, call, args, module=None):
        self.call, self.args, self.module = call, args, module

    def callee(self):
        """The call as Python, "" for the method's class itself."""
        if self.call is None:
            return ""
        mod, qual = self.call
        return qual if mod == self.module else mod + "." + qual


def receivers(arity, takes=None, module=None):
    """The constructor inputs a method's receivers are built from. What
    each parameter takes is a kind, or a recipe of another class of the
    package (builders.Index.recipe)."""
    if arity == 0:
        return [()]
    takes = list(takes or [])[:arity] + [""] * max(0, arity - len(takes or []))
    cols = [_receiver_column(t, module) for t in takes]
    return [tuple(c[i % len(c)] for c in cols) for i in range(len(RECEIVER_VALUES))]


def _receiver_column(takes, module):
    if isinstance(takes, dict):
        # An instance of the class the parameter names, and between two of
        # them a word: the name may have guessed the class wrong.
        built = [Built(takes["call"], t, module) for t in receivers(takes["arity"], takes.get("takes"), module)]
        return [built[0], RECEIVER_VALUES[1], built[1 % len(built)]]
    return _column(takes) if takes else RECEIVER_VALUES


def receivers_of(receiver):
    """A method's receivers: (primary, extra). The primary ones take the
    method's whole ladder in turn: its constructor's, where it has one it
    can call, else in turn from each other way its class is built (the
    docstrings' examples, its other recipes: see builders). Beside a
    constructor, those others are extra: each takes the ladder's first
    EXTRA_RUNGS rungs, so the rungs the constructor's receivers met stay
    theirs."""
    builds = receiver.get("builds") or {}
    module = builds.get("module")
    sources = [[Built(c, tuple(ast.literal_eval(a) for a in args), module) for c, args in builds.get("examples", ())]]
    for r in builds.get("recipes", ()):
        sources.append([Built(r["call"], t, module) for t in receivers(r["arity"], r.get("takes"), module)])
    others = []
    for i in range(max(len(s) for s in sources)):
        others.extend(s[i] for s in sources if i < len(s))
    if builds.get("own", True) and receiver["arity"] <= MAX_RECEIVER_ARITY:
        own = [Built(None, t, module) for t in receivers(receiver["arity"], builds.get("takes", receiver.get("kinds")), module)]
        return own, others[:MAX_EXTRA]
    return others[:MAX_RECEIVERS], []


def receiver_key(receiver):
    """Names a receiver within a ladder key: its constructor's arity and
    kinds, and a digest of its builds when it has them."""
    key = ladder_key(receiver["arity"], receiver.get("kinds"))
    if receiver.get("builds"):
        import hashlib
        import json
        key += "+b:" + hashlib.sha256(json.dumps(receiver["builds"], sort_keys=True).encode()).hexdigest()[:12]
    return key


_RUNGS = {}


def doctest_key(doctests):
    """Names a function's own doctest inputs within its ladder key."""
    import hashlib
    return "+dt:" + hashlib.sha256(repr(doctests).encode()).hexdigest()[:12] if doctests else ""


def rungs_of(arity, kinds, receiver=None, doctests=None):
    """A function's rungs: its doctests' inputs first (doctests: each
    call's arguments as literal source), then the ladder's; for a method
    called on an instance (receiver: its constructor's arity and kinds),
    pairs (constructor input, method input)."""
    key = ladder_key(arity, kinds)
    if receiver is not None:
        key += "@" + receiver_key(receiver)
    key += doctest_key(doctests)
    if key not in _RUNGS:
        own = [tuple(ast.literal_eval(a) for a in d) for d in doctests or ()] + rungs(arity, kinds)
        if receiver is None:
            _RUNGS[key] = own
        else:
            recv, extra = receivers_of(receiver)
            recv = recv or [Built(None, ())]
            pairs = [(recv[j % len(recv)], own[j % len(own)]) for j in range(max(len(own), len(recv)))]
            for e in extra:
                pairs.extend((e, args) for args in own[:EXTRA_RUNGS])
            _RUNGS[key] = pairs
    return _RUNGS[key]
