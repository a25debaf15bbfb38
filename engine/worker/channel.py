"""How records and call starts leave a worker's process: the record channel
(Channel) and the call marks (CallMark, the engine's mark file)."""

import fcntl
import json
import mmap
import os
import signal
import stat
import struct
import time


class Kind:
    """The kinds of record ("k"), as the protocol table in __init__.py
    names them (engine/protocol.go has the same table)."""

    LADDER, MODULE, POSTURE, DONE = "ladder", "module", "posture", "done"
    IMPORT_START, IMPORT_DONE, IMPORT_FAILED = "is", "id", "if"
    RESULT, NOT_CALLABLE, OVER_BUDGET = "r", "nc", "ob"
    GONE, FILES = "gone", "fl"
    END = "end"  # a child's last record to its parent: what it loaded; passed on as FILES

# The descriptors a worker starts with: its records, its request, its call marks.
RECORD_FD = 3
REQUEST_FD = 4
MARK_FD = 5


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
        self._flushing = False

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
        # A flush from a signal handler (flush_on) that interrupted this
        # one must not write the same records twice.
        if not self.pending or self._flushing:
            return
        self._flushing = True
        try:
            data = ("\n".join(self.pending) + "\n").encode()
            self.pending = []
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            # The scanned code closed or broke the channel: nothing more can
            # be reported from this process, so end it; the engine names the
            # call in progress and resumes after it.
            os._exit(97)
        finally:
            self._flushing = False

    def flush_on(self, signum):
        """Flushes the queue and ends the process when signum arrives: the
        parent asks before it ends a child whose call ran past its limit, so
        the answers the child already has are not lost with it, and the
        child runs nothing more (a call that ends in the meantime must not
        go on to the next)."""
        def flush_and_exit(*_):
            if not self._flushing:  # else the write in progress is cut: its calls run again
                self.flush()
            os._exit(0)
        signal.signal(signum, flush_and_exit)


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
