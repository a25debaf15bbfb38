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


class TestCall:
    """A test method called as its runner calls it (--tests), each call on
    a fresh instance: unittest's setUpClass, setUp, the method, tearDown,
    its cleanups, tearDownClass; pytest's setup_class, setup_method, the
    method, teardown_method, teardown_class. A fixture that raises before
    the method runs is the receiver's constructor raising (its answer ends
    " (constructor)"); the method's own answer, or what it raised
    (AssertionError: it failed), is the call's."""

    def __init__(self, method):
        self.method = method
        self.__wrapped__ = method.func

    def __call__(self, *args):
        from .calls import ConstructorRaised  # loaded already: calls imports this module
        m = self.method
        cls = m.cls
        unit = any(c.__name__ == "TestCase" and c.__module__ == "unittest.case" for c in cls.__mro__)
        hooks = ("setUpClass", "tearDownClass") if unit else ("setup_class", "teardown_class")
        try:
            _hook(cls, hooks[0])
        except BaseException as e:
            raise ConstructorRaised(e) from None
        try:
            try:
                inst = cls(m.attr) if unit else cls()
                test = getattr(inst, m.attr)
                if unit:
                    _hook(inst, "setUp")
                else:
                    _hook(inst, "setup_method", test)
            except BaseException as e:
                raise ConstructorRaised(e) from None
            try:
                return test(*args)
            finally:
                if unit:
                    _hook(inst, "tearDown")
                    inst.doCleanups()
                else:
                    _hook(inst, "teardown_method", test)
        finally:
            _hook(cls, hooks[1])


def _hook(obj, name, *args):
    hook = getattr(obj, name, None)
    if callable(hook):
        hook(*args)
