"""A child's calls and the governor's breakers (calls.py), the state restore (state.py)."""

import os
import unittest

from .. import calls, state


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
            self.assertEqual(reach, [want], (target, args))

