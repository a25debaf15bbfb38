"""The worker's entry: `python -s FOLDER discover|probe|posture 4<REQUEST.json`,
FOLDER being this package's folder (the modes and the protocol are in the
package's docstring, __init__.py)."""

import sys

if __name__ == "__main__":
    # Running a folder puts the folder itself first on sys.path, even under
    # -P/PYTHONSAFEPATH: the modules beside this file would be importable
    # as top-level modules by their own names (canon, probe...), by scanned
    # code too. It leaves before anything else is imported.
    _FOLDER = sys.path.pop(0)

# Everything the worker uses, imported before any scanned root is on
# sys.path: a scanned tree's own dataclasses.py or locale.py must never run
# inside the canonicaliser or the state restore (they would, imported
# lazily, with the scanned root first on sys.path). tests/test_main.py
# checks that this list holds every module the package's modules import.
import ast  # noqa: E402,F401
import bisect  # noqa: E402,F401
import copy  # noqa: E402,F401
import datetime  # noqa: E402,F401
import enum  # noqa: E402,F401
import gc  # noqa: E402,F401
import hashlib  # noqa: E402,F401
import io  # noqa: E402,F401
import json  # noqa: E402,F401
import os  # noqa: E402,F401
import pathlib  # noqa: E402,F401
import re  # noqa: E402,F401
import select  # noqa: E402,F401
import struct  # noqa: E402,F401
import threading  # noqa: E402,F401
import time  # noqa: E402,F401
import types  # noqa: E402,F401
import colorsys  # noqa: E402,F401
import dataclasses  # noqa: E402,F401
import fcntl  # noqa: E402,F401
import importlib  # noqa: E402,F401
import importlib.machinery  # noqa: E402,F401
import importlib.util  # noqa: E402,F401
import marshal  # noqa: E402,F401
import locale  # noqa: E402,F401
import mmap  # noqa: E402,F401
import resource  # noqa: E402,F401
import signal  # noqa: E402,F401
import stat  # noqa: E402,F401
import errno  # noqa: E402,F401
import socket  # noqa: E402,F401


def _load(folder):
    """The package in folder, imported as a package under the folder's name
    with every module of its own (main.py imports them all), from the
    folder's parent, which is on sys.path only while it is. Its modules
    import one another relatively, through the package's own folder, and
    the engine names the folder as no scanned tree names a package
    (engine/worker.go): nothing scanned is ever imported in place of one of
    them, nor of the package."""
    folder = os.path.normpath(folder)
    sys.path.insert(0, os.path.dirname(folder))
    try:
        package = importlib.import_module(os.path.basename(folder))
        importlib.import_module(package.__name__ + ".main")
        return package
    finally:
        del sys.path[0]


if __name__ == "__main__":
    _worker = _load(_FOLDER)
    # The ladder's values, where pickle looks for them (values.py).
    _callback = _worker.values._callback
    _Callback = _worker.values._Callback
    _BytesStream = _worker.values._BytesStream
    _TextStream = _worker.values._TextStream
    sys.exit(_worker.main.main(sys.argv))
