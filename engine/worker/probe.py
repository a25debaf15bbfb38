"""Probe mode's parent (probe), which never imports or calls anything
scanned, and the children it forks, one per stretch of one module's calls:
their calls are calls.py's, the parent's check of their records relay.py's."""

import os
import resource
import signal

from .bytecode import CodeCache
from .calls import run_calls
from .channel import CallMark, Channel, Kind, _map_marks
from .forking import fork
from .relay import FLUSH_SIGNAL, _Relay
from .state import loaded_files
from .zygote import Zygote, zygote_key


def probe(plan):
    """The parent: it never imports or calls anything scanned. Each stretch
    of one module's calls runs in a child forked from it, which reports
    over a pipe of its own; the parent checks every record against the plan
    (the child may speak only of its own module's calls, in turn) and
    passes it on. The channel, the nonce and the plan stay here: the child
    closes the channel before anything scanned runs. The stretches of a
    package's modules are forked from the package's zygote (zygote.py),
    which has imported the package once; scanned code can change the
    verdicts of its own top-level package only."""
    ch = Channel(plan.pop("nonce"))
    _harden()
    _map_marks()
    if plan.get("code_dir"):
        CodeCache(plan["code_dir"], (m["path"] for m in plan["modules"])).install()
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
    stretches = list(zip(bounds, bounds[1:]))
    keys = [zygote_key(plan, functions[calls[lo][0]]["module"]) for lo, _ in stretches]
    zygote = None
    unfit = set()  # packages a zygote could not import: not tried again in this run
    for k, (lo, hi) in enumerate(stretches):
        mi = functions[calls[lo][0]]["module"]
        if zygote is not None and zygote.key != keys[k]:
            zygote.close()
            zygote = None
            _sweep_children()
        # Every stretch of a package comes from a zygote, in every run,
        # even a package of one module: a child forked there runs deeper
        # in the worker's stack than one forked here, and a function that
        # counts its callers' frames must see the same stack in every run,
        # however its package's calls are cut (lone runs, a call left out
        # after a hang, lone runs of several packages in turn). Where the
        # package cannot be imported there, or the engine asks for no
        # imports outside a child (no_zygotes), a bare zygote forks its
        # children from the same stack.
        if zygote is None and keys[k] is not None:
            if keys[k] not in unfit and not plan.get("no_zygotes"):
                zygote = Zygote.start(plan, ch.fd, keys[k], _child_dumpable)
                if zygote is None:
                    unfit.add(keys[k])
            if zygote is None:
                zygote = Zygote.start(plan, ch.fd, keys[k], _child_dumpable, bare=True)
        while lo < hi and mi not in dead:
            if zygote is not None and not zygote.alive:
                # A child ended it: the package's next children come
                # from a bare one, from the same stack.
                zygote = Zygote.start(plan, ch.fd, keys[k], _child_dumpable, bare=True)
            lo = _run_child(plan, ch, lo, hi, mi, skip, dead, zygote)
        _sweep_children(zygote.pid if zygote is not None and zygote.alive else None)
    if zygote is not None:
        zygote.close()
        _sweep_children()
    ch.send({"k": Kind.DONE}, flush=True)


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


def _sweep_children(keep=None):
    """Kill whatever the last child left running (a daemon it forked
    reparents here): nothing of one module outlives its stretch. keep is
    the zygote still serving the package."""
    me = os.getpid()
    for _ in range(1000):
        kids = [k for k in _children(me) if k != keep]
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


def _run_child(plan, ch, lo, hi, mi, skip, dead, zygote=None):
    """Runs calls lo..hi (all of module mi) in a child, forked by the
    package's zygote when there is one, and relays its records. Returns
    where the stretch goes on: hi when it is done; when the child died, the
    first call it has no answer for (the call it died in is charged and its
    function skipped)."""
    r, w = os.pipe()
    ar, aw = os.pipe()
    pid = None
    if zygote is not None:
        mark = zygote.mark
        mark.end()
        pid = zygote.spawn(lo, hi, skip, w, ar)
        if pid is None:
            # The zygote is gone; a child it may have forked keeps nothing
            # of this stretch's pipes.
            for fd in (r, w, ar, aw):
                os.close(fd)
            r, w = os.pipe()
            ar, aw = os.pipe()
    reap = os.waitpid
    if pid is not None:
        reap = zygote.wait
    else:
        mark = CallMark()

        def child():
            os.close(r)
            os.close(aw)
            os.close(ch.fd)
            _child_dumpable()
            own = Channel(None, w, ar)
            own.flush_on(FLUSH_SIGNAL)
            run_calls(plan, own, lo, hi, skip, mark)
            own.send({"k": Kind.END, "f": loaded_files()}, flush=True)
        pid = fork(child)
    os.close(w)
    os.close(ar)
    relay = _Relay(plan, ch, lo, hi, mi, skip, aw, mark)
    status = relay.run(r, pid, reap)
    os.close(r)
    os.close(aw)
    ch.flush()
    if relay.ended:
        if relay.failed:
            dead.add(mi)
        return hi
    # The child died, hung or said what it may not: name the step it was in.
    rec = {"k": Kind.GONE, "m": mi, "why": relay.tampered or relay.timeout or _describe(status)}
    if relay.tampered:
        rec["t"] = True
    if relay.timeout:
        rec["to"] = True
        rec["us"] = int(relay.ran * 1e6)
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

