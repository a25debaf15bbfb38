"""A child's calls and the governor's breakers (calls.py), the state restore (state.py)."""

import os
import unittest

from .. import calls, instances, ladder, state


class Methods(unittest.TestCase):
    def test_each_call_has_a_fresh_instance(self):
        import types
        mod = types.ModuleType("m")

        class Basket:
            def __init__(self, first):
                self.items = [first]

            def add(self, x):
                self.items.append(x)
                return len(self.items)

            @property
            def size(self):
                return len(self.items)

            @classmethod
            def empty(cls):
                return cls(None)

        class Broken:
            def __init__(self):
                raise RuntimeError("no")

            def f(self):
                return 1
        mod.Basket, mod.Broken = Basket, Broken
        add = {"name": "Basket.add", "class": "Basket", "attr": "add", "kind": "method"}
        target, why = calls._lookup(mod, add)
        self.assertIsNone(why)
        reach = []
        # The repeat breaker builds its own instance: the append never
        # moves the second answer.
        self.assertEqual(calls.probe_call(instances._OnFresh(target, ladder.Built(None, ("a",)), mod), ("b",), reach=reach), ("V:2", None, None, None, None))
        self.assertEqual(reach, [True])
        size, _ = calls._lookup(mod, {"class": "Basket", "attr": "size", "kind": "property"})
        self.assertEqual(calls.probe_call(instances._OnFresh(size, ladder.Built(None, (1,)), mod), ())[0], "V:1")
        empty, _ = calls._lookup(mod, {"class": "Basket", "attr": "empty", "kind": "classmethod"})
        self.assertTrue(calls.probe_call(empty, ())[0].endswith("Basket{items=[None]}"))
        broken, _ = calls._lookup(mod, {"class": "Broken", "attr": "f", "kind": "method"})
        reach = []
        self.assertEqual(calls.probe_call(instances._OnFresh(broken, ladder.Built(None, ()), mod), (), reach=reach)[0], "E:RuntimeError (constructor)")
        self.assertEqual(reach, [False])
        # Inherited methods belong to the class that defines them.
        mod.Sub = type("Sub", (Basket,), {})
        self.assertIn("of its own", calls._lookup(mod, {"class": "Sub", "attr": "add", "kind": "method"})[1])
        mod.Basket = 3
        self.assertIn("not a class", calls._lookup(mod, add)[1])


class Breakers(unittest.TestCase):
    def test_dict_order(self):
        self.assertEqual(calls.probe_call(lambda d: next(iter(d)), ({"a": 1, "b": 2},))[3], "dict-order")

    def test_repeat(self):
        state = []

        def counter(x):
            state.append(x)
            return len(state)

        self.assertEqual(calls.probe_call(counter, (1,))[3], "repeat")

    def test_dict_order_keeps_aliasing(self):
        d = {"a": 1, "b": 2}
        self.assertEqual(calls.probe_call(lambda x, y: x is y, (d, d))[3:], (None, None))

    def test_state_is_restored_between_calls(self):
        saved = state.ProcessState()
        cwd = os.getcwd()

        def wanders(x):
            os.chdir("/")
            os.environ["NONDET_TEST"] = "1"
            return os.getcwd()

        try:
            calls.call(wanders, (1,))
            saved.restore()
            self.assertEqual(os.getcwd(), cwd)
            self.assertNotIn("NONDET_TEST", os.environ)
            self.assertEqual(calls.probe_call(wanders, (1,), saved.restore)[3:], (None, None))
        finally:
            saved.restore()

    def test_order_free(self):
        self.assertEqual(calls.probe_call(lambda items: items[0], (["a", "b"],), order_free=[0])[3], "order-free")
        self.assertEqual(calls.probe_call(sorted, (["b", "a"],), order_free=[0])[3:], (None, None))

    def test_stable(self):
        self.assertEqual(calls.probe_call(sorted, ([2, 1],))[3:], (None, None))

    def test_reach(self):
        # A call reached the body when it entered the function's own frame:
        # returned, or raised from inside; a TypeError while binding the
        # arguments did not; a builtin cannot tell.
        import functools

        def body(x):
            return {}[x]

        def deco(f):
            @functools.wraps(f)
            def wrapper(*a):
                return f(*a)
            return wrapper

        for target, args, want in [
            (lambda x: x, (1,), True),
            (body, (1,), True),
            (body, (1, 2), False),
            (deco(body), (1, 2), False),
            (deco(body), ("k",), True),
            (len, (1,), None),
        ]:
            reach = []
            calls.probe_call(target, args, reach=reach)
            self.assertEqual(reach[:1], [want], (target, args))

    def test_sandbox_trace(self):
        # What a sandbox refuses leaves its errno on the exception, or on
        # the one it was raised from; anything else is the code's.
        import errno
        import socket

        def wrapped(inner):
            try:
                raise inner
            except OSError:
                raise ValueError("a library's own error")

        for exc, want in [
            (OSError(errno.EROFS, "Read-only file system", "/etc/x"), "erofs"),
            (PermissionError(errno.EACCES, "Permission denied", "/etc/x"), None),
            (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "net"),
            (OSError(errno.ENETUNREACH, "Network is unreachable"), "net"),
            (FileNotFoundError(errno.ENOENT, "No such file", "/scan/0/pkg/data.json"), "enoent:/scan/0/pkg/data.json"),
            (FileNotFoundError(errno.ENOENT, "No such file", "relative.json"), None),
            (KeyError("k"), None),
        ]:
            self.assertEqual(calls.sandbox_trace(exc), want, exc)
        try:
            wrapped(OSError(errno.EROFS, "Read-only file system"))
        except ValueError as e:
            self.assertEqual(calls.sandbox_trace(e), "erofs")

        def writes():
            raise OSError(errno.EROFS, "Read-only file system", "/usr/x")
        reach = []
        self.assertEqual(calls.probe_call(writes, (), reach=reach)[0], "E:OSError")
        self.assertEqual(reach, [True, "erofs"])

