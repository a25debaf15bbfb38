"""The ladder's values that are objects of the worker's own: streams and
a callback whose reprs hold no address, and the values no literal is
(modules, classes, instances, syntax trees, a readline, a socket), each
built anew for every call (BUILT). The ladder (ladder.py) says which
parameters get them."""

import ast as _ast
import colorsys as _colorsys
import dataclasses as _dataclasses
import enum as _enum
import fcntl as _fcntl
import importlib.util
import io
import socket as _socket
import types as _types


class _BytesStream(io.BytesIO):
    """A BytesIO whose repr carries its content, not its address: a
    function that echoes its argument's repr must not look moved by the
    process."""

    def __repr__(self):
        return "io.BytesIO(%r)" % self.getvalue()


class _TextStream(io.StringIO):
    def __repr__(self):
        return "io.StringIO(%r)" % self.getvalue()


class _Callback:
    """The ladder's function, for what takes a callback, a key or a
    function to decorate or inspect: it answers its first argument.

    An object rather than a def: a def's repr carries its address, and
    code that upper-cases or hashes the repr of what it is given (a
    template filter, a PIN hash) then looked moved by the process. Its
    repr holds no address; copies and pickles of it are itself."""

    __name__ = __qualname__ = "_callback"

    def __call__(self, x=None, *more, **options):
        return x

    def __repr__(self):
        return "<function _callback>"

    def __reduce__(self):
        return "_callback"  # the module's global: itself


_callback = _Callback()


# What scanned code holds of the worker's own is named as when the worker
# was one script run as __main__, wherever it is defined now: the ladder's
# display (function:__main__._callback), a type's name an answer shows,
# and pickle, which finds these three in __main__ (__main__.py binds them).
_BytesStream.__module__ = _TextStream.__module__ = _Callback.__module__ = "__main__"


# Values no literal is: a module, classes, an instance, a function with
# its source, syntax trees, a readline. Each is built anew for every call
# (BUILT: fresh() calls its builder), so a call that changes one (a class
# decorator, setattr, a visitor, a module's attribute) changes no later
# call's input; the builders hold what they use from the start (a call may
# change the modules they come from). Each is named as if in __main__, as
# the ladder's other values (not bound there: pickling one fails alike in
# every run), and its repr holds no address.
_Enum, _make_dataclass, _FunctionType, _type = _enum.Enum, _dataclasses.make_dataclass, _types.FunctionType, type
_RGB_TO_HSV = _colorsys.rgb_to_hsv
_GLOBALS = dict(_colorsys.__dict__)
_COLORSYS = _colorsys.__file__
_module_from_spec, _spec_from_file_location = importlib.util.module_from_spec, importlib.util.spec_from_file_location
_parse, _Name, _Load = _ast.parse, _ast.Name, _ast.Load


def _color():
    return _Enum("Color", [("RED", 1), ("GREEN", 2)], module="__main__", qualname="Color")


def _point_class():
    cls = _make_dataclass("Point", [("x", int, 1), ("y", int, 2)])
    cls.__module__ = "__main__"
    return cls


def _plain():
    def area(self):
        return self.size * self.size
    area.__qualname__ = "Plain.area"
    area.__module__ = "__main__"
    return _type("Plain", (), {"__module__": "__main__", "__doc__": "A plain class.", "size": 3, "area": area})


def _point():
    return _point_class()(1, 2)


def _with_source():
    f = _RGB_TO_HSV
    g = _FunctionType(f.__code__, dict(_GLOBALS), f.__name__, f.__defaults__, f.__closure__)
    g.__qualname__, g.__module__, g.__doc__ = f.__qualname__, f.__module__, f.__doc__
    return g


def _module():
    """A module of its own: colorsys, run again from its file (the
    interpreter's, read-only in the sandbox), not the one sys.modules
    holds."""
    spec = _spec_from_file_location("colorsys", _COLORSYS)
    m = _module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _trees():
    return [_parse('"""Doc."""\nx = 1\n'), _parse("def f(a):\n    return a\n"), _Name(id="x", ctx=_Load())]


class _Readline:
    """A file's readline over fixed lines: what tokenizers take."""

    def __init__(self, lines):
        self.lines, self.pos = list(lines), 0

    def __call__(self):
        if self.pos >= len(self.lines):
            return self.lines[0][:0]
        self.pos += 1
        return self.lines[self.pos - 1]

    def __repr__(self):
        return "readline(%r)" % (self.lines,)


_Readline.__module__ = "__main__"


class _Socket(_socket.socket):
    """A connected socket whose peer sent a few lines and closed: reads
    get them and then the end of the stream, never a wait; writes go to
    a closed peer and raise. Its repr holds no descriptor number."""

    def __repr__(self):
        return "socket(%r)" % (_SOCKET_LINES,)


_Socket.__module__ = "__main__"
_SOCKET_LINES = b"alpha\r\nbeta\r\n"


def _connected():
    """The socket, on a descriptor above those code under test uses: a low
    one it took could be the one a call closes and the next expects
    (the worker's own Channel(0) dups and closes descriptor 3)."""
    a, b = _socket.socketpair()
    try:
        b.sendall(_SOCKET_LINES)
        fd = _fcntl.fcntl(a.fileno(), _fcntl.F_DUPFD_CLOEXEC, 1000)
    finally:
        b.close()
        a.close()
    return _Socket(fileno=fd)
BUILT = {}


def _built(build):
    value = build()
    BUILT[id(value)] = (value, build)
    return value
