"""A scanned module's bytecode: compiled once by discovery (bytecode) and
loaded by every probe child while it matches the source (CodeCache)."""

import hashlib
import importlib.machinery
import importlib.util
import io
import marshal
import os
import sys
import types


def bytecode(src, path):
    """The module's code as a hash-checked pyc (PEP 552), compiled as
    import compiles it (from the source's bytes, named by the path import
    finds it at): discovery compiles each module once per scan and every
    probe child loads it (CodeCache) instead of compiling it again. None
    when it cannot be compiled or holds a frozenset constant, whose
    iteration order would be the compiling process's rather than the
    probe's. (describe_module bounds its size by its record's.)"""
    try:
        co = compile(src, path, "exec", dont_inherit=True)
        if _has_frozenset(co):
            return None
        return _PYC_HEAD + importlib.util.source_hash(src) + marshal.dumps(co)
    except Exception:  # whatever the source is, its module is still described
        return None


# A pyc's header before the source's hash (PEP 552): this interpreter's
# magic number, then flags 3: hash-based, checked against the source.
_PYC_HEAD = importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little")


def _has_frozenset(co):
    """Whether a frozenset is among the constants of co or of any code or
    tuple nested in them (walked without recursion: nesting is the
    source's to choose)."""
    todo = [co]
    while todo:
        c = todo.pop()
        if isinstance(c, frozenset):
            return True
        if isinstance(c, types.CodeType):
            todo.extend(c.co_consts)
        elif isinstance(c, tuple):
            todo.extend(c)
    return False


def code_name(path):
    """The file a module's bytecode is kept in, in the scan's code folder:
    named after the path the module is imported from (the engine names it
    the same way)."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".pyc"


class CodeCache:
    """Loads a scanned module's bytecode from the scan's code folder
    (read-only in every probe, written by the engine from discovery's
    records) when its hash matches the source as read now; anything else
    compiles as usual. Installed as a path hook in the probe's parent,
    before any scanned root is on sys.path."""

    def __init__(self, folder, scanned=()):
        self.folder = folder
        # The scanned modules' paths: one whose code was not kept is
        # compiled from its source, never loaded from a pyc beside it (a
        # planted one would run instead of the source the gate read).
        self.scanned = frozenset(scanned)
        cache = self

        class SourceFileLoader(importlib.machinery.SourceFileLoader):
            # A scanned module's __loader__: named as in ladder.py's note.
            __module__ = "__main__"

            def get_code(self, fullname):
                code = cache.load(self.path, self.get_data)
                if code is None and self.path in cache.scanned:
                    return self.source_to_code(self.get_data(self.path), self.path)
                return code if code is not None else super().get_code(fullname)

        self.loader = SourceFileLoader

    def load(self, path, get_data):
        try:
            with _open_code(os.path.join(self.folder, code_name(path))) as fh:
                data = fh.read()
        except (OSError, ValueError, TypeError):
            return None
        try:
            if data[:8] != _PYC_HEAD:
                return None
            if data[8:16] != importlib.util.source_hash(get_data(path)):
                return None
            code = marshal.loads(memoryview(data)[16:])
        except (OSError, ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, types.CodeType) else None

    def install(self):
        m = importlib.machinery
        hook = m.FileFinder.path_hook(
            (m.ExtensionFileLoader, m.EXTENSION_SUFFIXES),
            (self.loader, m.SOURCE_SUFFIXES),
            (m.SourcelessFileLoader, m.BYTECODE_SUFFIXES))
        sys.path_hooks.insert(0, hook)


# The loader opens the kept code as import opens files, through the
# function captured before anything scanned runs: a module that replaces
# io.open_code or open in its child does not choose what its own later
# imports load from the code folder.
_open_code = io.open_code
