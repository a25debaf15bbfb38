"""Canonical answers: the text of a value that is the same in every process
where the value is the same, or NoCanon when there is none."""

import dataclasses
import enum
import hashlib
import io
import json
import re
import types

from .addresses import has_address, new_answer
from .ladder import _LADDER_IDS
from .values import _callback


# A call's answer longer than this is compared by digest and shown truncated.
MAX_TEXT = 4096


class NoCanon(Exception):
    """The value has no canonical form (its repr carries an address)."""


# A repr with an address in it means nothing from one process to the next;
# a repr shaped <...> without one (an enum member, a sentinel) is canonical.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{8,}")
_AT_ADDRESS = re.compile(r" at 0x[0-9a-f]+", re.I)
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
    ctx = (sort_sets, sets, {} if memo is None else memo, dict_order, False)
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
        # A string that carries an address (a repr echoed back, even quoted,
        # escaped or upper-cased; the ladder's own function's id, however
        # the function wrote it) has no canonical form, as a value whose
        # repr holds one: masking it would count a rung as answered when
        # nothing comparable came back.
        if _AT_ADDRESS.search(x) or any(m in x for m in _LADDER_IDS) or has_address(x):
            raise NoCanon("str holding an address")
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
    if x is _callback:
        # The ladder's function, as it was named when it was a def.
        out.append("function:__main__._callback")
        return
    if t is types.FunctionType:
        # A function is its name: where it lives is the same in every run.
        out.append("function:" + str(getattr(x, "__module__", None) or "?") + "." + str(getattr(x, "__qualname__", "?")))
        return
    if isinstance(x, (io.BytesIO, io.StringIO)):
        # A stream is its content and where it has been read to.
        name = "BytesIO" if isinstance(x, io.BytesIO) else "StringIO"
        out.append("io.%s(%r, pos=%d)" % (name, x.getvalue(), x.tell()))
        return
    if _lazy(x):
        if ctx[4]:
            # An iterator an instance holds (a context manager's generator)
            # is its state, not its answer: running it would run code the
            # caller never asked for.
            out.append("iter:" + _typename(t) + "[not consumed]")
            return
        _inside(path, ident, _canon_lazy, x, t, out, path, ctx)
        return
    r = repr(x)
    if _ADDRESS.search(r) or _ANGLE_ID.match(r) or has_address(r):
        state = _state(x, t)
        if state is None:
            raise NoCanon(_typename(t))
        # An instance whose repr is only its address is its attributes:
        # what a constructor or a builder method gives back.
        _inside(path, ident, _canon_object, state, t, out, path, ctx)
        return
    out.append(_typename(t) + ":" + r)


def _state(x, t):
    """An instance's attributes (its __dict__ and its slots), or None
    when it has neither: nothing but its address to tell it by."""
    try:
        d = object.__getattribute__(x, "__dict__")
    except AttributeError:
        d = None
    if d is not None and not isinstance(d, dict):
        return None
    state = dict(d) if d is not None else {}
    slotted = False
    for k in t.__mro__:
        slots = k.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            slotted = True
            try:
                state[name] = object.__getattribute__(x, name)
            except AttributeError:
                pass
    if d is None and not slotted:
        return None
    return state


def _canon_object(state, t, out, path, ctx):
    """An instance as Type{name=value,...}, its attributes sorted by name.
    An int held in an attribute named for a hash is a cached hash(): it
    follows the hash seed by design and equality never reads it, so it is
    left out."""
    ctx = ctx[:4] + (True,)
    out.append(_typename(t) + "{")
    first = True
    for name in sorted(state):
        v = state[name]
        if type(v) is int and "hash" in name.lower():
            continue
        if not first:
            out.append(",")
        first = False
        out.append(name + "=")
        _canon(v, out, path, ctx)
    out.append("}")


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
    sort_sets, sets, _, dict_order, _ = ctx
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
    return not _AT_ADDRESS.search(joined) and not any(m in joined for m in _LADDER_IDS) and not has_address(joined)


def shorten(text):
    if len(text) <= MAX_TEXT:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return "%s…#sha256:%s(%d chars)" % (text[:160], digest, len(text))


def answer(value):
    """Returns (canonical, order_free) for a returned value; order_free is
    set only when the value holds a set, so "order only" can be told."""
    memo = {}
    new_answer()
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
