"""A method's call on a fresh instance: the instance built anew from its
receiver's recipe (ladder.Built) for every call, so no call can move
another's answer through it, and what was built, as a digest."""

import hashlib
import importlib

from .addresses import new_answer
from .canon import _typename, canon_text
from .fresh import fresh
from .ladder import Built


class _Method:
    """A method or property of a class, called on an instance."""

    def __init__(self, cls, attr, kind, raw):
        self.cls, self.attr, self.kind, self.raw = cls, attr, kind, raw
        # The function whose frame a call enters: a property's getter, a
        # cached property's function, the method itself.
        self.func = getattr(raw, "fget", None) or getattr(raw, "func", None) or raw


class ConstructorRaised(Exception):
    """The constructor raised while building a call's receiver."""

    def __init__(self, inner):
        self.inner = inner


class _OnFresh:
    """One rung of a method: each call builds a fresh instance from the
    receiver (ladder.Built), so no call can move another's answer through
    the instance, then calls the class's own method on it (or reads the
    property), even where the instance is of a subclass that overrides it."""

    def __init__(self, method, recv, mod):
        self.method, self.recv, self.mod = method, recv, mod
        self.__wrapped__ = method.func
        # What each build of a receiver another callee built was, as a
        # digest of its canonical form (sets sorted): where it differs
        # between runs, or between a call and its breaker's, what differs
        # is the callee's answer, not the method's.
        self.built = []

    def __call__(self, *args):
        m = self.method
        try:
            obj = build(self.recv, m.cls, self.mod)
            if not isinstance(obj, m.cls):
                raise TypeError("%s built %s, not %s" % (self.recv.callee(), _typename(type(obj)), m.cls.__name__))
        except BaseException as e:
            raise ConstructorRaised(e) from None
        if self.recv.call is not None:
            self.built.append(_digest(obj))
        get = getattr(type(m.raw), "__get__", None)
        bound = getattr(obj, m.attr) if get is None else get(m.raw, obj, type(obj))
        if m.kind == "property":
            return bound
        return bound(*args)


def _digest(obj):
    """A receiver's canonical form, sets sorted, as 16 hex digits; "" when
    it has none."""
    try:
        new_answer()
        text = canon_text(obj, sort_sets=True)[0]
    except BaseException:  # a scanned __repr__ or property is its own
        return ""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def moved(target):
    """Whether a method's receiver was built differently by its calls so
    far (a call and its breaker's)."""
    return isinstance(target, _OnFresh) and len(set(target.built)) > 1


def build(recv, cls, mod):
    """The instance a receiver's recipe builds: its call (the method's
    class, or a class or factory of the package, imported now: under the
    call's limit) on fresh copies of its arguments, each Built argument
    built first."""
    if recv.call is None:
        target = cls
    else:
        name, qual = recv.call
        target = mod if name == mod.__name__ else importlib.import_module(name)
        for part in qual.split("."):
            target = getattr(target, part)
    args = tuple(build(a, None, mod) if isinstance(a, Built) else a for a in fresh(recv.args))
    return target(*args)


# A Built is a recipe: building copies its arguments (calls.build).
