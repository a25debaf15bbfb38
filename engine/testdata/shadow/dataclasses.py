"""A module that shadows the standard library's dataclasses: were the
worker to import it lazily, with this tree first on sys.path, it would run
inside the canonicaliser of every other function's answers."""
import os


def is_dataclass(obj):
    os._exit(3)


def fields(obj):
    os._exit(3)
