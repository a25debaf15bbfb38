"""Which classes of a module are test cases: their runner, not a caller,
gives them what they need (setUp and tearDown, the class's fixtures), so
calling their methods one by one on a bare instance answers whatever the
previous test left behind."""

import ast
import os
import re

# Test files by pytest's and unittest's conventions, and the folders that
# hold them in a source tree or an installed distribution.
_TEST_FILE = re.compile(r"^(test_.*|.*_test|tests?|conftest)\.py$")
_TEST_DIRS = {"test", "tests"}


def is_test_file(rel):
    parts = rel.replace(os.sep, "/").split("/")
    return bool(_TEST_FILE.match(parts[-1])) or any(p in _TEST_DIRS for p in parts[:-1])


def _base_name(b):
    if isinstance(b, ast.Subscript):
        b = b.value
    if isinstance(b, ast.Attribute):
        return b.attr
    if isinstance(b, ast.Name):
        return b.id
    return ""


def test_classes(rel, classes):
    """The names of the classes that are test cases: a subclass of a
    *TestCase (unittest's, Django's...) or of a test case of the module,
    and in a test file a class named Test* (what pytest collects)."""
    in_tests = is_test_file(rel)
    found = set()
    for c in classes:  # in source order: a base is defined before its subclasses
        bases = [_base_name(b) for b in c.bases]
        if any(n.endswith("TestCase") or n in found for n in bases) or (in_tests and c.name.startswith("Test")):
            found.add(c.name)
    return found
