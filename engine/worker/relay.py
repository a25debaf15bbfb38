"""The parent's relay of one probe child's records: only what the child may
say, about its own module's calls, in turn; and the child's limits."""

import json
import os
import select
import signal
import time

from .channel import MARK_POLL, Kind


# What a child may say, and the type of each field it may set ([T]: a list
# of T). The parent passes on exactly these fields.
_IMPORTS = (Kind.IMPORT_START, Kind.IMPORT_DONE, Kind.IMPORT_FAILED)
_CHILD_FIELDS = {
    Kind.IMPORT_START: {"m": int}, Kind.IMPORT_DONE: {"m": int, "us": int}, Kind.IMPORT_FAILED: {"m": int, "err": str, "us": int},
    Kind.NOT_CALLABLE: {"i": int, "why": str}, Kind.OVER_BUDGET: {"i": int, "us": int, "below": int},
    Kind.RESULT: {"i": int, "v": str, "o": str, "x": str, "th": int, "b": str, "v2": str, "rb": int, "sx": str, "rv": str, "tr": [dict], "us": int},
    Kind.END: {"f": [str]},
}
MAX_RECORD = 1 << 20
# Before ending a child whose call ran past its limit, the parent sends it
# this signal and relays what it flushes for up to FLUSH_GRACE seconds:
# the answers it computed before the call that hung still count. A call
# stuck in C code holding the interpreter's lock never runs the handler;
# the grace ends and those answers are run again in the next child.
FLUSH_SIGNAL = signal.SIGUSR2
FLUSH_GRACE = 0.5
# A call that has run this long is looked at every IDLE_STEP seconds: one
# whose process used no CPU for the plan's idle_timeout, and has no child
# process that might be working for it, is blocked (on input, a lock, a
# socket, a sleep) and is ended as past its limit.
IDLE_FIRST = 0.1
IDLE_STEP = 0.25


class _Idle:
    """Whether the call a child is in has been blocked for limit seconds:
    its process's CPU time (every thread's, and its waited-for children's)
    did not move, and it has no child process now."""

    def __init__(self, pid, limit):
        self.pid, self.limit = pid, limit
        self.call = None  # the (index, start) of the call watched
        self.ticks = None
        self.since = 0.0  # when its CPU time last moved, as far as seen

    def wake(self, idx, started, now):
        """When to look next (monotonic), or None."""
        if not self.limit or idx < 0:
            return None
        return max(now + IDLE_STEP if self.call == (idx, started) else now, started + IDLE_FIRST)

    def blocked(self, idx, started, now):
        if not self.limit or idx < 0 or now - started < IDLE_FIRST:
            return False
        ticks = _cpu_ticks(self.pid)
        if ticks is None:
            return False
        if self.call != (idx, started) or ticks != self.ticks:
            self.call, self.ticks, self.since = (idx, started), ticks, now
            return False
        return now - self.since >= self.limit and _childless(self.pid)


def _cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return None


def _childless(pid):
    """No thread of pid has a child; False when that cannot be told."""
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid), "rb") as fh:
                if fh.read().strip():
                    return False
    except OSError:
        return False
    return True


class _Relay:
    """The parent's check of one child's records: the kinds and fields
    above, about module mi and calls lo..hi only, each in turn; and the
    child's limits (an import, a call) kept from its call mark."""

    def __init__(self, plan, ch, lo, hi, mi, skip, acks, mark):
        self.plan, self.ch, self.lo, self.hi, self.mi, self.skip = plan, ch, lo, hi, mi, skip
        self.acks, self.mark = acks, mark
        self.call_limit = plan.get("call_timeout") or 10.0
        self.import_limit = plan.get("import_timeout") or 30.0
        self.idle_limit = plan.get("idle_timeout") or 0.0
        self.step = None  # "import" while the module's import runs
        self.import_started = 0.0
        self.last = lo - 1  # the last call answered (or found not callable)
        self.imported = False
        self.failed = False  # the import raised
        self.ended = False
        self.tampered = ""
        self.timeout = ""
        self.ran = 0.0  # how long the call that ran past its limit ran

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

    def run(self, r, pid, reap=os.waitpid):
        """Relays until the child ends; returns its wait status (reap is
        os.waitpid, or a zygote's for its children)."""
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
        idle = _Idle(pid, self.idle_limit)
        try:
            while status is None and not self.tampered and not self.timeout:
                deadline = self._deadline()
                now = time.monotonic()
                wait = None if deadline is None else max(0.0, deadline - now)
                # Between calls, look again soon: the next call's mark
                # brings a deadline that no record announces.
                if wait is None:
                    wait = MARK_POLL
                elif pidfd is None:  # no pidfd: a child's exit is seen by polling too
                    wait = min(wait, MARK_POLL)
                idx, started = self.mark.read()
                look = idle.wake(idx, started, now) if self.step is None else None
                if look is not None:
                    wait = min(wait, max(0.0, look - now))
                events = dict(poller.poll(int(wait * 1000) + 1))
                buf, eof = self._drain(r, buf)
                self.ch.flush()
                if self.tampered:
                    break
                if eof or pidfd in events or pidfd is None:
                    got, st = reap(pid, 0 if eof or pidfd in events else os.WNOHANG)
                    if got:
                        status = st
                now = time.monotonic()
                if status is None and not events and deadline is not None and now >= deadline:
                    self.timeout = ("import ran past %gs" % self.import_limit if self.step == "import"
                                    else "ran past the %gs call limit" % self.call_limit)
                    self.ran = self.import_limit if self.step == "import" else self.call_limit
                elif status is None and self.step is None and self.in_call() >= 0:
                    idx, started = self.mark.read()
                    if idle.blocked(idx, started, now):
                        self.timeout = ("used no CPU for %gs: blocked on input, a lock, a socket or a sleep"
                                        % self.idle_limit)
                        self.ran = now - started
            if status is not None and not self.tampered:
                buf, _ = self._drain(r, buf)  # what it wrote last
            elif self.timeout and self.step != "import":
                buf = self._collect(r, buf, pid, poller)
        finally:
            if pidfd is not None:
                os.close(pidfd)
        if status is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            status = reap(pid, 0)[1]
        return status

    def _collect(self, r, buf, pid, poller):
        """Asks a child whose call hangs for the answers it holds and relays
        them, until it has said everything up to that call or the grace
        ends."""
        hung = self.in_call()
        try:
            os.kill(pid, FLUSH_SIGNAL)
        except OSError:
            return buf
        end = time.monotonic() + FLUSH_GRACE
        while not self.tampered and time.monotonic() < end:
            if hung >= 0 and self.last >= hung - 1:
                break  # every call before the hung one is answered
            poller.poll(50)
            buf, eof = self._drain(r, buf)
            if eof:
                break
        self.ch.flush()
        return buf

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
            if isinstance(want, list):  # a list of want[0]
                ok = type(value) is list and all(type(v) is want[0] for v in value)
            else:
                ok = want is not None and type(value) is want
            if not ok:
                self.tampered = "wrote a record field it may not (%s)" % key[:40]
                return
            out[key] = value
        if not self._in_turn(kind, out):
            self.tampered = "wrote a record out of turn (%s)" % kind
            return
        if kind != Kind.END:
            self.ch.send(out, flush=kind in _IMPORTS)
        elif out.get("f"):
            # The files the child had loaded, for the engine's verdict
            # cache: said of the parent's module, never the child's word.
            self.ch.send({"k": Kind.FILES, "m": self.mi, "f": out["f"]})
        if kind in _IMPORTS:
            try:
                os.write(self.acks, b".")
            except OSError:
                pass

    def _in_turn(self, kind, rec):
        calls, functions = self.plan["calls"], self.plan["functions"]
        if kind == Kind.IMPORT_START:
            ok = self.step is None and not self.imported and rec.get("m") == self.mi
            if ok:
                self.step, self.import_started = "import", time.monotonic()
            return ok
        if kind in (Kind.IMPORT_DONE, Kind.IMPORT_FAILED):
            ok = self.step == "import" and rec.get("m") == self.mi
            if ok:
                self.step, self.imported = None, True
                self.failed = kind == Kind.IMPORT_FAILED
            return ok
        if kind in (Kind.RESULT, Kind.NOT_CALLABLE, Kind.OVER_BUDGET):
            i = rec.get("i")
            ok = (self.step is None and self.imported and i is not None and self.last < i < self.hi
                  and i >= self.lo and calls[i][0] not in self.skip
                  and functions[calls[i][0]]["module"] == self.mi
                  and (kind != Kind.OVER_BUDGET or bool(self.plan.get("function_budget"))))
            if ok:
                self.last = i
                if kind == Kind.NOT_CALLABLE:
                    self.skip.add(calls[i][0])
            return ok
        if kind == Kind.END:
            ok = self.step is None
            self.ended = ok
            return ok
        return False
