"""A call's inputs, fresh: each rung copied as cheaply as a deep copy would
(built values built anew, modules and the ladder's function themselves),
and the inputs of the governor's in-process breakers."""

import copy
import datetime as _dt
import pathlib
import types

from .ladder import Built
from .values import BUILT, _callback


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), _dt.date, _dt.timedelta, _dt.time, pathlib.PurePath, Built)


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
    bytearray that holds only immutables (and appears once); a new one of
    each value the ladder builds (values.BUILT); deepcopy for anything
    else."""
    if _immutable(args):
        return lambda a: a
    if type(args) is not tuple:
        return copy.deepcopy
    if any(_built(a) or type(a) is types.ModuleType or a is _callback for a in args):
        return _copy_built
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


def _built(a):
    b = BUILT.get(id(a))
    return b is not None and b[0] is a


def _copy_built(args):
    """A rung holding a built value, a module or the ladder's function:
    each built value new, a module itself (it cannot be copied, and a
    module is one per process anyway), the function itself without what
    an earlier call set on it (a decorator's mark: its identity is what
    pickles and echoes of it name), the rest deep-copied together."""
    memo = {}
    out = []
    for a in args:
        if _built(a):
            try:
                out.append(BUILT[id(a)][1]())
            except Exception:  # an earlier call broke what it builds with
                out.append(a)
        elif a is _callback:
            a.__dict__.clear()
            out.append(a)
        elif type(a) is types.ModuleType:
            out.append(a)
        else:
            out.append(copy.deepcopy(a, memo))
    return tuple(out)


def _breaker_inputs(base, order_free=()):
    """The rung, then the governor's breakers' inputs: the identical input
    again (hidden state, clocks, RNGs break here), every dict rebuilt in
    reversed key order (reliance on insertion order breaks here), and each
    argument declared order-free reversed (an order that should not matter
    but does breaks here)."""
    yield None, fresh(base)
    yield "repeat", fresh(base)
    if _has_dict(base):
        yield "dict-order", _reverse_dicts(fresh(base))
    for i in order_free:
        if i < len(base) and isinstance(base[i], (list, tuple)) and len(base[i]) > 1:
            args = fresh(base)
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
