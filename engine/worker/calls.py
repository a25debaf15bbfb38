"""A probe child's calls: each module imported at its first call, each rung
called on a fresh copy, then the governor's in-process breakers."""

import errno
import socket
import threading
import types
from os import _exit, getpid as _getpid  # bound now, as the clock: scanned code may replace os's
from time import perf_counter as _clock  # bound now: scanned code may replace time's

from .canon import NoCanon, _typename, answer, raised
from .fresh import _breaker_inputs
from .instances import ConstructorRaised, _Method, _OnFresh, moved
from .ladder import rungs_of
from .state import ProcessState, _import
from . import tracing
from .testcases import TestCall
from .channel import Kind


def run_calls(plan, ch, lo, hi, skip, mark):
    """Calls plan["calls"][lo:hi] in order, importing each module at its
    first call, marking each call's start in mark and queueing a result
    record per call. Once a function's calls have taken the plan's
    function_budget (seconds) in this process, after n calls, it is called
    only on rungs below n; each call it does not make is answered "ob". A
    forward run keeps the first n rungs; a reversed one, which called the
    last n first, calls the first n too, so the two compare on them."""
    state = ProcessState()
    me = _getpid()
    modules = plan["modules"]
    budget = plan.get("function_budget") or 0
    spent = {}  # function -> [seconds in calls, calls made, rung cap or None]
    loaded = {}
    rungs = {}
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
            ch.step({"k": Kind.IMPORT_START, "m": mi})
            t0 = _clock()
            loaded[mi] = _import(modules[mi])
            us = int((_clock() - t0) * 1e6)
            state.after_import()
            state.restore()
            if isinstance(loaded[mi], str):
                ch.step({"k": Kind.IMPORT_FAILED, "m": mi, "err": loaded[mi], "us": us})
            else:
                # Acknowledged too: a function that kills the parent must
                # not leave the engine believing the import still runs.
                ch.step({"k": Kind.IMPORT_DONE, "m": mi, "us": us})
        mod = loaded[mi]
        if isinstance(mod, str):
            continue
        used = spent.get(fi)
        if used is not None and budget:
            if used[2] is None and used[0] >= budget:
                used[2] = used[1]
            if used[2] is not None and ri >= used[2]:
                ch.send({"k": Kind.OVER_BUDGET, "i": idx, "us": int(used[0] * 1e6), "below": used[2]})
                continue
        # The mark goes first: looking the name up can run scanned code
        # (a module __getattr__), and that must be under the call's limit.
        mark.start(idx)
        try:
            target, why = _lookup(mod, fn)
        except BaseException as e:
            target, why = None, "looking it up after import raised %s" % _typename(type(e))
        if target is None:
            ch.send({"k": Kind.NOT_CALLABLE, "i": idx, "why": why})
            mark.end()
            skip.add(fi)
            state.restore()
            continue
        own = rungs.get(fi)
        if own is None:  # its key hashes its doctests: once per function
            own = rungs[fi] = rungs_of(fn["arity"], fn.get("kinds"), fn.get("receiver"), fn.get("doctests"))
        base = own[ri]
        if isinstance(target, _Method):
            recv, base = base
            target = TestCall(target) if fn.get("test_case") else _OnFresh(target, recv, mod)
        threads = threading.active_count()
        before = set(threading.enumerate()) if threads > 1 else None
        rec = {"k": Kind.RESULT, "i": idx}
        reach = []
        t0 = _clock()
        if fn.get("trace") == ri:
            # The witness call, to name where two runs parted: under the
            # tracer, no breakers; a repeat's twice, as its breaker calls.
            rec["tr"] = []
            for k in range(fn.get("trace_calls", 1)):
                tr = tracing.start()
                try:
                    answer = call(target, base, None if k else reach)
                finally:
                    rec["tr"].append(tracing.stop(tr))
                state.restore()
                if not k:
                    v, free, why = answer
            breaker = v2 = None
        else:
            v, free, why, breaker, v2 = probe_call(target, base, state.restore, fn.get("order_free", ()), reach)
        if _getpid() != me:
            # A process the call forked (os.fork, pty.fork) returned into
            # the probe: only the caller speaks for the call.
            _exit(0)
        took = _clock() - t0
        used = spent.setdefault(fi, [0.0, 0, None])
        used[0] += took
        used[1] += 1
        rec["us"] = int(took * 1e6)
        if reach and reach[0] is not None:
            rec["rb"] = 1 if reach[0] else 0
        if len(reach) > 1 and reach[1]:
            rec["sx"] = reach[1]
        if isinstance(target, _OnFresh) and target.built and target.built[0]:
            rec["rv"] = target.built[0]
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


def _lookup(mod, fn):
    """What a planned function names in its imported module: (callable,
    None), or (None, why not). A method of a class is the class's own
    attribute, never an inherited one; one called on an instance comes
    back as a _Method, bound to a fresh instance per call."""
    cname = fn.get("class")
    name = cname or fn["name"]
    obj = getattr(mod, name, _UNBOUND)
    if obj is _UNBOUND:
        return None, "after import the module has no attribute %s: defined in a block that did not run here, or deleted" % name
    if not cname:
        if not callable(obj):
            return None, "after import, %s is %s, not a function" % (name, type(obj).__name__)
        return obj, None
    if not isinstance(obj, type):
        return None, "after import, %s is %s, not a class" % (name, _typename(type(obj)))
    attr, kind = fn["attr"], fn["kind"]
    raw = obj.__dict__.get(attr, _UNBOUND)
    if raw is _UNBOUND:
        return None, "after import the class %s has no attribute %s of its own" % (name, attr)
    if kind in ("staticmethod", "classmethod"):
        target = getattr(obj, attr)
        if not callable(target):
            return None, "after import, %s.%s is %s, not a method" % (name, attr, _typename(type(target)))
        return target, None
    builds = (fn.get("receiver") or {}).get("builds") or {}
    if getattr(obj, "__abstractmethods__", None) and builds.get("own", True):
        return None, "the class is abstract: %s are abstract methods" % ", ".join(sorted(obj.__abstractmethods__))
    return _Method(obj, attr, kind, raw), None


def call(target, args, reach=None):
    """One call: (canonical, order_free, None), or (None, None, why) when
    the answer has no canonical form. With reach, a list, it appends
    whether the call entered the function's own frame (None: no code
    object to tell by)."""
    try:
        value = target(*args)
    except ConstructorRaised as e:  # the method was never called
        if reach is not None:
            reach.append(False)
        return raised(e.inner) + " (constructor)", None, None
    except BaseException as e:  # raising is an answer: its type is canonical
        if reach is not None:
            reach.append(_entered(target, e.__traceback__))
            reach.append(sandbox_trace(e))
        return raised(e), None, None
    if reach is not None:
        reach.append(True)  # it returned: its body ran
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


def probe_call(target, base, reset=lambda: None, order_free=(), reach=None):
    """One rung: the call, then the governor's in-process breakers. Every
    call is made from this one line, so a function that looks at its
    caller's stack sees the same stack each time. Returns (canonical,
    order_free, why, breaker, second answer); reach, a list, gets whether
    the first call entered the function's frame."""
    first = first_free = None
    for breaker, args in _breaker_inputs(base, order_free):
        v, free, why = call(target, args, reach if breaker is None else None)
        reset()
        if breaker is None:
            if v is None:
                return None, None, why, None, None
            first, first_free = v, free
        elif v is not None and v != first and not moved(target):
            return first, first_free, None, breaker, v
    return first, first_free, None, None, None


# What a sandbox refuses, by errno: an exception carrying one (or raised
# while handling one) may be the sandbox's doing, not the code's.
_SANDBOX_ERRNOS = {errno.EROFS: "erofs", errno.ENETUNREACH: "net", errno.EHOSTUNREACH: "net",
                   errno.EADDRNOTAVAIL: "net"}


def sandbox_trace(exc):
    """The trace a sandbox leaves on an exception or those it was raised
    from: "erofs" (a read-only file system), "net" (no network, or no name
    resolution), "enoent:PATH" (an absolute path that does not exist, which
    the engine checks against the host's scanned tree), or None."""
    for _ in range(8):
        if exc is None:
            return None
        if isinstance(exc, socket.gaierror):
            return "net"
        if isinstance(exc, OSError):
            cause = _SANDBOX_ERRNOS.get(exc.errno)
            if cause:
                return cause
            name = exc.filename
            if exc.errno in (errno.ENOENT, errno.ENOTDIR) and isinstance(name, str) and name.startswith("/") and len(name) < 4096:
                return "enoent:" + name
        exc = exc.__cause__ or exc.__context__
    return None


def _code_of(target):
    """The code object of the function a call runs: under functools.wraps
    decorators, the innermost one's; None when there is none (a builtin, a
    callable object)."""
    try:
        f = target
        for _ in range(50):
            wrapped = getattr(f, "__wrapped__", None)
            if wrapped is None:
                break
            f = wrapped
        code = getattr(f, "__code__", None)
        return code if isinstance(code, types.CodeType) else None
    except BaseException:  # a scanned object's __getattr__ is its own
        return None


def _entered(target, tb):
    """Whether an exception's traceback passes through the function's own
    frame: a TypeError raised while binding the arguments does not."""
    code = _code_of(target)
    if code is None:
        return None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return True
        tb = tb.tb_next
    return False
