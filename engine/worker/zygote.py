"""A package's zygote: a process forked from the probe's parent that imports
one top-level package once per run and forks the children of its modules'
stretches from there, so they do not each import it again.

Every child of a module P.x imports P first: its __init__ runs before
P.x does. The zygote runs that import once, puts the process state back
as a child does after an import, and forks each stretch's child from
the result, so each child starts as it would have after importing P
itself: a fresh copy, whatever its siblings did. A zygote serves only
the stretches of its own package, and holds nothing of the parent's
(the channel is closed, records go from each child to the parent over
pipes the parent made): scanned code in P can change the verdicts of
P's modules only.

A package whose import leaves a thread running (any thread of the
process, Python's or not) or a descriptor open is not served (a thread
is not forked, a descriptor's offset would be shared between the
children), nor one whose import fails or takes longer than the call
limit: its stretches get children forked from a bare zygote, which
imports nothing, and they import it themselves; so do the children after
one that ended its zygote. Every package's children come from a zygote,
so all of them run as deep in the worker's stack, whatever happened to
the package's import. The zygote's import sends
no record, so it must end well inside the engine's limit for the time
between two records (the call limit and a margin); a longer import is
an import's business, under the import limit, in a child that says so.

Parent and zygote speak over a SOCK_SEQPACKET pair, one message each:
the zygote says b"ready" (or b"unfit") once; then per stretch the parent
sends {"lo", "hi", "skip"} with the child's record pipe and acks pipe as
descriptors, the zygote answers b"pid N", the parent checks that N is
the zygote's child and says b"wait", and the zygote answers b"status S"
when it has reaped it."""

import importlib
import json
import os
import signal
import socket
import sys
import threading

from .calls import run_calls
from .channel import CallMark, Channel, Kind
from .forking import fork
from .relay import FLUSH_SIGNAL
from .state import ProcessState, loaded_files

# How long the parent waits for a zygote to fork a child and say its pid,
# or to say the status of a child that has ended.
SPAWN_LIMIT = 10.0


def zygote_key(plan, mi):
    """(root, top-level package) of module mi when it is in a package (or is
    one), else None: a single-file module has nothing to share."""
    m = plan["modules"][mi]
    name = m["name"]
    if "." in name or os.path.basename(m.get("path", "")) == "__init__.py":
        return (m["root"], name.split(".")[0])
    return None


class Zygote:
    """The parent's handle on a package's zygote."""

    def __init__(self, pid, sock, mark, key):
        self.pid, self.sock, self.mark, self.key = pid, sock, mark, key
        self.alive = True

    @classmethod
    def start(cls, plan, ch_fd, key, dumpable, bare=False):
        """Forks a zygote for key and waits for it to import its package;
        None when it cannot serve (the import failed, hung, left a thread
        or a descriptor behind). A bare zygote imports nothing: its
        children import the package themselves, from the same stack."""
        if not hasattr(socket, "send_fds"):  # Python before 3.9
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mark = CallMark()

        def zygote():
            ours.close()
            os.close(ch_fd)
            dumpable()
            _serve(plan, theirs, key, mark, bare)
        pid = fork(zygote)
        theirs.close()
        z = cls(pid, ours, mark, key)
        ours.settimeout(plan.get("call_timeout") or 5.0)
        try:
            ready = ours.recv(64)
        except OSError:
            ready = b""
        if ready != b"ready":
            z.close()
            return None
        return z

    def spawn(self, lo, hi, skip, w, ar):
        """Asks the zygote for a child running calls lo..hi with w as its
        record pipe and ar as its acks; the child's pid, or None when the
        zygote cannot (it is then ended: the caller forks the child)."""
        if not self.alive:
            return None
        msg = json.dumps({"lo": lo, "hi": hi, "skip": sorted(skip)}).encode()
        try:
            self.sock.settimeout(SPAWN_LIMIT)
            socket.send_fds(self.sock, [msg], [w, ar])
            reply = self.sock.recv(64)
            pid = int(reply[4:]) if reply.startswith(b"pid ") else -1
            # Only a child of the zygote may be relayed, waited for and
            # killed; the zygote reaps it only once told it may.
            if pid > 0 and _parent_of(pid) == self.pid:
                self.sock.send(b"wait")
                return pid
        except (OSError, ValueError):
            pass
        self.close()
        return None

    def wait(self, pid, flags):
        """os.waitpid for a child of the zygote: its status comes from the
        zygote; once the zygote is gone the child is the parent's (it is
        the subreaper), so it is waited for directly."""
        if self.alive:
            nohang = flags & os.WNOHANG
            self.sock.settimeout(0 if nohang else SPAWN_LIMIT)
            try:
                msg = self.sock.recv(64)
            except BlockingIOError:
                return 0, None
            except OSError:  # gone, or it took too long: a handler of the package's may hold it
                msg = b""
            if msg.startswith(b"status "):
                try:
                    return pid, int(msg[7:])
                except ValueError:
                    pass
            self.close()  # reaping the zygote hands its children to the parent
        try:
            return os.waitpid(pid, flags)
        except ChildProcessError:
            return pid, 0

    def close(self):
        if not self.alive:
            return
        self.alive = False
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _parent_of(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _import_package(key):
    """Imports the package and puts the process state back; False when
    the package cannot be served (it was imported already, its import
    failed, or it left a thread or a descriptor behind)."""
    root, top = key
    state = ProcessState()
    fds = _descriptors()
    if top in sys.modules or fds is None:
        return False
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        importlib.import_module(top)
    except BaseException:
        return False
    state.after_import()
    state.restore()
    return threading.active_count() == 1 and _threads() == 1 and _descriptors() == fds


def _descriptors():
    try:
        return sorted(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def _threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 2  # cannot tell: not served


def _serve(plan, sock, key, mark, bare):
    """The zygote: import the package (unless bare), then fork a child per
    request until the parent closes the socket."""
    if not bare and not _import_package(key):
        sock.send(b"unfit")
        return
    sock.settimeout(None)
    sock.send(b"ready")
    while True:
        msg, got, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        if not msg or len(got) != 2:
            return
        req = json.loads(msg)
        w, ar = got

        def child():
            sock.close()
            own = Channel(None, w, ar)
            own.flush_on(FLUSH_SIGNAL)
            run_calls(plan, own, req["lo"], req["hi"], set(req["skip"]), mark)
            own.send({"k": Kind.END, "f": loaded_files()}, flush=True)
        pid = fork(child)
        os.close(w)
        os.close(ar)
        sock.send(b"pid %d" % pid)
        if sock.recv(16) != b"wait":
            return
        _, status = os.waitpid(pid, 0)
        sock.send(b"status %d" % status)
