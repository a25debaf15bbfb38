"""A witness call traced line by line, so the engine can name the first
line at which two runs of one input parted (the divergence).

Each event is a list [kind, file, line, function, depth, data, from]:
  "l"  a line is about to run; data: the frame's locals that changed since
       its last event (name -> canonical text, clipped), which the line
       from (the frame's previous line) made
  "r"  the frame returns; data: the value's canonical text, clipped
The trace is bounded (MAX_EVENTS, MAX_BYTES, MAX_SECONDS) and says when
it was cut: the call then runs on untraced.
The worker's own frames are not traced; a call under a tracer is only
ever an explanation: the verdict comes from untraced runs.
"""

import os
import sys
import types
from time import perf_counter as _clock

from .addresses import new_answer
from .canon import canon_text

MAX_EVENTS = 4000
MAX_BYTES = 256 << 10
MAX_SECONDS = 0.5  # of tracing: past it the call runs on untraced
MAX_VALUE = 120
_OWN = os.path.dirname(os.path.abspath(__file__))


def _text(v):
    # An iterator's canonical form runs it: the traced code would find it
    # spent. Its type is all a trace may say of it.
    if hasattr(type(v), "__next__") or isinstance(v, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        return "<%s>" % type(v).__name__
    try:
        new_answer()
        t = canon_text(v)[0]
    except BaseException:  # a scanned __repr__ is its own; no canonical form is a form
        return "<no canonical form>"
    return t if len(t) <= MAX_VALUE else t[:MAX_VALUE] + "…(%d chars)" % len(t)


class Trace:
    def __init__(self):
        self.events = []
        self.size = 0
        self.cut = False
        self.depth = 0
        self.until = _clock() + MAX_SECONDS
        self.frames = {}  # id(frame) -> [last line, {name: text}]
        self.importing = 0  # module bodies being imported, untraced

    def _add(self, ev):
        if self.cut:
            return
        data = ev[5]
        self.size += len(ev[1]) + 40 + (sum(len(k) + len(v) for k, v in data.items()) if isinstance(data, dict) else len(data))
        if len(self.events) >= MAX_EVENTS or self.size > MAX_BYTES or _clock() > self.until:
            self.cut = True
            sys.settrace(None)
            return
        self.events.append(ev)

    def _changes(self, frame, state):
        seen = state[1]
        out = {}
        for name, v in frame.f_locals.items():
            t = _text(v)
            if seen.get(name) != t:
                out[name] = t
                seen[name] = t
        return out

    def global_trace(self, frame, event, arg):
        name = frame.f_code.co_filename
        # The worker's own frames, and frozen ones (the import system):
        # what they hold differs between any two processes.
        if self.cut or self.importing or name.startswith(_OWN) or name.startswith("<"):
            return None
        back = frame.f_back
        if frame.f_code.co_name == "<module>" and back is not None and back.f_code.co_name == "_call_with_frames_removed":
            # A module imported during the call: its body, and all it
            # calls, read the process around them (the environment, the
            # file system), not the call's input. What it bound shows at
            # the line that reads it; tracing it only spends the bound.
            self.importing += 1
            frame.f_trace_lines = False
            return self._imported
        return self._entered(frame)

    def _imported(self, frame, event, arg):
        if event == "return":
            self.importing -= 1
        return self._imported

    def _entered(self, frame):
        self.frames[id(frame)] = [0, {}]  # from 0: its caller's line handed it its arguments
        self.depth += 1
        return self.local_trace

    def local_trace(self, frame, event, arg):
        if self.cut:
            return None
        state = self.frames.get(id(frame))
        if state is None:
            return None
        code = frame.f_code
        if event == "line":
            changes = self._changes(frame, state)
            self._add(["l", code.co_filename, frame.f_lineno, code.co_name, self.depth, changes, state[0]])
            state[0] = frame.f_lineno
        elif event == "return":
            changes = self._changes(frame, state)
            if changes:
                self._add(["l", code.co_filename, frame.f_lineno, code.co_name, self.depth, changes, state[0]])
            self._add(["r", code.co_filename, frame.f_lineno, code.co_name, self.depth, _text(arg), state[0]])
            self.depth -= 1
            self.frames.pop(id(frame), None)
        return self.local_trace


def start():
    """Traces the frames called from here on, until stop."""
    t = Trace()
    sys.settrace(t.global_trace)
    return t


def stop(t):
    sys.settrace(None)
    return {"ev": t.events, "cut": t.cut}
