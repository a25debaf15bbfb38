"""What one call may change that would leak into the next (ProcessState),
and how a scanned module is imported (_import)."""

import fcntl
import importlib
import importlib.util
import locale
import os
import sys
import types

from .canon import _typename


class ProcessState:
    """What one call may change that would leak into the next function's
    calls and make it look nondeterministic: the working directory, the
    standard streams, the environment, sys.path, sys.argv, the umask, the
    locale.
    Restored after every call; the probe is about the function, not about
    whatever ran before it."""

    def __init__(self):
        self.locale = locale
        self.cwd = os.getcwd()
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        # Copies of descriptors 0-2, so a call that closes or replaces one
        # does not change what the next call sees.
        self.fds = {}
        for fd in (0, 1, 2):
            try:
                st = os.fstat(fd)
                self.fds[fd] = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 800), st.st_dev, st.st_ino)
            except OSError:
                pass
        # os.environ compares slowly (it decodes every key); its raw
        # mapping compares fast.
        self.raw = getattr(os.environ, "_data", None)
        self.environ = dict(os.environ)
        self.raw_copy = dict(self.raw) if self.raw is not None else None
        self.path = list(sys.path)
        self.argv = list(sys.argv)
        self.umask = os.umask(0)
        os.umask(self.umask)
        try:
            self.locale_name = locale.setlocale(locale.LC_ALL, None)
        except locale.Error:
            self.locale_name = None

    def restore(self):
        try:
            if os.getcwd() != self.cwd:  # cheaper than a chdir every time
                os.chdir(self.cwd)
        except OSError:
            try:
                os.chdir(self.cwd)
            except OSError:
                pass
        sys.stdin, sys.stdout, sys.stderr = self.streams
        for fd, (copy_fd, dev, ino) in self.fds.items():
            try:
                st = os.fstat(fd)
                same = st.st_dev == dev and st.st_ino == ino
            except OSError:
                same = False
            if not same:
                try:
                    os.dup2(copy_fd, fd, inheritable=True)
                except OSError:
                    pass
        if (self.raw != self.raw_copy) if self.raw is not None else (os.environ != self.environ):
            os.environ.clear()
            os.environ.update(self.environ)
            self.raw = getattr(os.environ, "_data", None)
        if sys.path != self.path:
            sys.path[:] = self.path
        # A command-line entry point that rewrites sys.argv (profile.main
        # does) must not change what the next one parses.
        if sys.argv != self.argv:
            sys.argv[:] = self.argv
        os.umask(self.umask)
        if self.locale_name is not None:
            try:
                if self.locale.setlocale(self.locale.LC_ALL, None) != self.locale_name:
                    self.locale.setlocale(self.locale.LC_ALL, self.locale_name)
            except self.locale.Error:
                pass

    def after_import(self):
        """An import may rightly extend sys.path; keep what it did."""
        self.path = list(sys.path)


# At most this many files, and this many bytes of their names, are named
# in a child's end record: it stays far below the relay's record bound.
MAX_LOADED, MAX_LOADED_BYTES = 20000, 1 << 19
_WORKER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def loaded_files():
    """The files of every module the process has loaded, but the worker's
    own: what its calls' answers may depend on, for the engine's verdict
    cache. Only a plain module's own __dict__ is read (a module-level
    __getattr__ of scanned code never runs here), and the list is bounded."""
    out = set()
    for m in list(sys.modules.values()):
        if type(m) is not types.ModuleType:
            continue
        try:
            f = m.__dict__.get("__file__")
        except Exception:
            continue
        if type(f) is str and f.startswith("/") and not f.startswith(_WORKER_DIR) and f.isprintable():
            out.add(f)
    files, size = [], 0
    for f in sorted(out):
        size += len(f) + 4
        if len(files) >= MAX_LOADED or size > MAX_LOADED_BYTES:
            break
        files.append(f)
    return files


def _import(m):
    """Import a module by its dotted name with its package root first on
    sys.path, so relative imports work. A name that is already taken by a
    different module (the worker's own, or the standard library's) is loaded
    from its file under a private name instead."""
    root, name, path = m["root"], m["name"], m["path"]
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        top = name.split(".")[0]
        existing = sys.modules.get(top)
        if existing is not None and not _same_root(existing, root):
            if "." in name:
                return "ImportError: package %s is shadowed by an already imported module of that name" % top
            alias = "_nondet_%d_%s" % (m["index"], name)
            spec = importlib.util.spec_from_file_location(alias, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[alias] = mod
            spec.loader.exec_module(mod)
            return mod
        return importlib.import_module(name)
    except BaseException as e:
        msg = str(e).splitlines()[0] if str(e) else ""
        return "%s: %s" % (_typename(type(e)), msg[:300])


def _same_root(module, root):
    f = getattr(module, "__file__", None)
    if not f:
        return False
    return os.path.realpath(f).startswith(os.path.realpath(root) + os.sep)
