"""The worker tested as Python: canonical forms, the ladder, discovery facts.

Run with: python3 -m unittest discover -s engine -p 'test_worker.py'
"""
import ast
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worker  # noqa: E402


def v(x):
    return worker.answer(x)[0]


class Canonical(unittest.TestCase):
    def test_dict_key_order_is_not_semantic(self):
        self.assertEqual(v({"a": 1, "b": 2}), v({"b": 2, "a": 1}))

    def test_list_and_tuple_order_is_semantic(self):
        self.assertNotEqual(v([1, 2]), v([2, 1]))
        self.assertNotEqual(v((1, 2)), v((2, 1)))
        self.assertNotEqual(v([1, 2]), v((1, 2)))

    def test_sets_keep_iteration_order_and_tell_order_only(self):
        text, free = worker.answer({"a", "b", "c"})
        self.assertTrue(text.startswith("V:set["))
        self.assertEqual(free, "V:set[\"a\",\"b\",\"c\"]")

    def test_types_are_distinct(self):
        self.assertEqual(len({v(1), v(1.0), v(True), v("1"), v(b"1"), v(None)}), 6)

    def test_exceptions_by_type_only(self):
        self.assertEqual(worker.raised(ValueError("at /home/x/0x1234")), "E:ValueError")

    def test_address_has_no_canonical_form(self):
        with self.assertRaises(worker.NoCanon):
            worker.answer(object())
        with self.assertRaises(worker.NoCanon):
            worker.answer(lambda: 1)

    def test_cycle_terminates(self):
        a = [1]
        a.append(a)
        self.assertEqual(v(a), "V:[1,<cycle>]")

    def test_large_value_is_digested(self):
        big = "x" * (50 * 1000 * 1000)
        text = v(big)
        self.assertLess(len(text), 400)
        self.assertIn("sha256:", text)
        self.assertNotEqual(text, v(big[:-1] + "y"))

    def test_huge_int(self):
        self.assertTrue(v(10 ** 5000).startswith("V:int:0x"))

    def test_enum_namedtuple_dataclass(self):
        import collections
        import dataclasses
        import enum

        class Color(enum.Enum):
            RED = 1

        P = collections.namedtuple("P", "x y")

        @dataclasses.dataclass
        class D:
            a: int

        self.assertTrue(v(Color.RED).endswith("Color.RED"))
        self.assertTrue(v(P(1, 2)).endswith("P(x=1,y=2)"))
        self.assertTrue(v(D(3)).endswith("D(a=3)"))


class Ladder(unittest.TestCase):
    def test_shape(self):
        self.assertEqual(worker.rungs(0), [()])
        self.assertEqual(len(worker.rungs(1)), len(worker.LADDER))
        self.assertTrue(all(len(r) == 3 for r in worker.rungs(3)))

    def test_narrow_and_wide_dicts_and_the_five_words(self):
        sizes = sorted(len(x) for x in worker.LADDER if isinstance(x, dict))
        self.assertEqual(sizes, [3, 8])
        self.assertIn(["alpha", "beta", "gamma", "delta", "epsilon"], worker.LADDER)

    def test_display_does_not_depend_on_hash_seed(self):
        self.assertEqual(worker.display(({"b", "a"},)), ['set["a","b"]'])


class Facts(unittest.TestCase):
    def facts(self, src):
        tree = ast.parse(src)
        aliases = {}
        for n in tree.body:
            worker._collect_imports(n, aliases)
        fn = [n for n in tree.body if isinstance(n, ast.FunctionDef)][0]
        return worker._describe_function(fn, aliases, {"helper"})

    def test_calls_resolve_through_imports(self):
        f = self.facts("import os as o\nfrom shutil import rmtree\ndef f(p):\n    o.remove(p)\n    rmtree(p)\n    helper()\n")
        names = [c["name"] for c in f["facts"]["calls"]]
        self.assertEqual(names, ["os.remove", "shutil.rmtree", "helper"])
        self.assertTrue(f["facts"]["calls"][2]["local"])

    def test_open_modes(self):
        f = self.facts("def f(p, m):\n    open(p)\n    open(p, 'w')\n    open(p, mode=m)\n")
        self.assertEqual([c["mode"] for c in f["facts"]["calls"]], ["r", "w", "?"])

    def test_method_on_local_value(self):
        f = self.facts("def f(p):\n    p.write_text('x')\n")
        self.assertEqual(f["facts"]["calls"][0]["name"], ".write_text")

    def test_signature(self):
        f = self.facts("def f(a, b=1, *args, c, d=2, **kw):\n    pass\n")
        self.assertEqual((f["required"], f["vararg"], f["varkw"], f["kwonly_required"]), (1, "args", "kw", ["c"]))

    def test_set_iteration(self):
        f = self.facts("def f(x):\n    for e in set(x):\n        pass\n    return list({1, 2})\n")
        self.assertEqual(f["facts"]["set_iters"], [2, 4])


class Breakers(unittest.TestCase):
    def test_dict_order(self):
        first = worker.call(lambda d: next(iter(d)), ({"a": 1, "b": 2},))[0]
        self.assertEqual(worker.in_process_breakers(lambda d: next(iter(d)), ({"a": 1, "b": 2},), first)[0], "dict-order")

    def test_repeat(self):
        state = []

        def counter(x):
            state.append(x)
            return len(state)

        first = worker.call(counter, (1,))[0]
        self.assertEqual(worker.in_process_breakers(counter, (1,), first)[0], "repeat")

    def test_dict_order_keeps_aliasing(self):
        d = {"a": 1, "b": 2}
        self.assertEqual(worker.in_process_breakers(lambda x, y: x is y, (d, d), "V:True"), (None, None))

    def test_state_is_restored_between_calls(self):
        state = worker.ProcessState()
        cwd = os.getcwd()

        def wanders(x):
            os.chdir("/")
            os.environ["NONDET_TEST"] = "1"
            return os.getcwd()

        try:
            first = worker.call(wanders, (1,))[0]
            state.restore()
            self.assertEqual(os.getcwd(), cwd)
            self.assertNotIn("NONDET_TEST", os.environ)
            self.assertEqual(worker.in_process_breakers(wanders, (1,), first, state.restore), (None, None))
        finally:
            state.restore()

    def test_order_free(self):
        first = worker.call(lambda items: items[0], (["a", "b"],))[0]
        self.assertEqual(worker.in_process_breakers(lambda items: items[0], (["a", "b"],), first, order_free=[0])[0], "order-free")
        self.assertEqual(worker.in_process_breakers(sorted, (["b", "a"],), 'V:["a","b"]', order_free=[0]), (None, None))

    def test_stable(self):
        self.assertEqual(worker.in_process_breakers(sorted, ([2, 1],), "V:[1,2]"), (None, None))


if __name__ == "__main__":
    unittest.main()
