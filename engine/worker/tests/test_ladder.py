"""The ladder (ladder.py) and how its rungs are shown (canon.display)."""

import types
import unittest

from .. import canon, fresh, kinds, ladder, values


class Ladder(unittest.TestCase):
    def test_dates_times_and_paths(self):
        kinds = {type(x) for x in ladder.LADDER}
        for t in (ladder._dt.date, ladder._dt.datetime, ladder._dt.timedelta, ladder._dt.time):
            self.assertIn(t, kinds)
        self.assertIn("~/notes.txt", ladder.LADDER)
        self.assertTrue(any(isinstance(x, ladder._dt.datetime) and x.tzinfo for x in ladder.LADDER))

    def test_display_keeps_dict_order(self):
        self.assertEqual(canon.display(({"b": 1, "a": 2},)), ['{"b":1,"a":2}'])

    def test_shape(self):
        self.assertEqual(ladder.rungs(0), [()])
        self.assertEqual(len(ladder.rungs(1)), len(ladder.LADDER))
        self.assertTrue(all(len(r) == 3 for r in ladder.rungs(3)))

    def test_narrow_and_wide_dicts_and_the_five_words(self):
        sizes = sorted(len(x) for x in ladder.LADDER if isinstance(x, dict))
        self.assertEqual(sizes, [3, 8])
        self.assertIn(["alpha", "beta", "gamma", "delta", "epsilon"], ladder.LADDER)

    def test_the_callback_carries_no_address(self):
        # Code that upper-cases or hashes what it is given sees the same
        # text in every process; copies are the callback itself, and it is
        # still shown and answered as the function it was.
        import copy
        import hashlib

        f = values._callback
        self.assertNotIn("0x", repr(f).lower())
        self.assertNotIn(str(id(f)), repr(f))
        self.assertEqual(hashlib.sha256(repr(f).upper().encode()).hexdigest(),
                         hashlib.sha256(b"<FUNCTION _CALLBACK>").hexdigest())
        self.assertIs(copy.deepcopy(f), f)
        self.assertEqual(f(3), 3)
        self.assertEqual(canon.display((f,)), ["function:__main__._callback"])
        self.assertEqual(canon.canon_text(f)[0], "function:__main__._callback")

    def test_the_ladders_own_values_are_named_in_main(self):
        # As the worker has always shown them, wherever they are defined.
        self.assertEqual(canon.display((values._callback,)), ["function:__main__._callback"])
        self.assertEqual({type(x).__module__ for x in ladder.LADDER if hasattr(x, "getvalue")}, {"__main__"})

    def test_display_does_not_depend_on_hash_seed(self):
        self.assertEqual(canon.display(({"b", "a"},)), ['set["a","b"]'])


class Receivers(unittest.TestCase):
    def test_a_method_costs_what_a_function_does(self):
        # Rung j is the method's rung j on receiver j modulo three; a
        # method with one rung is called on every receiver.
        fn = ladder.rungs_of(1, [])
        m = ladder.rungs_of(1, [], {"arity": 1, "kinds": []})
        self.assertEqual(len(m), len(fn))
        self.assertEqual([r.args for r, _ in m[:4]], [(0,), ("alpha",), (ladder.FIVE_WORDS,), (0,)])
        self.assertEqual([a for _, a in m], fn)
        zero = ladder.rungs_of(0, [], {"arity": 2, "kinds": ["int", ""]})
        self.assertEqual([(r.args, a) for r, a in zero], [((0, 0), ()), ((7, "alpha"), ()), ((-3, ladder.FIVE_WORDS), ())])
        self.assertEqual([(r.call, r.args, a) for r, a in ladder.rungs_of(0, [], {"arity": 0})], [(None, (), ())])


class NamedKinds(unittest.TestCase):
    def test_a_parameter_name_asks_for_strings_of_its_shape(self):
        self.assertEqual(kinds.name_kind("version"), "version")
        self.assertEqual(kinds.name_kind("base_url"), "url")
        self.assertEqual(kinds.name_kind("tz", "str"), "zone")
        self.assertEqual(kinds.name_kind("path", "str"), "str")  # str-annotated: no Path objects
        self.assertEqual(kinds.name_kind("path"), "path")
        self.assertEqual(kinds.name_kind("version", "int"), "int")  # the annotation wins
        self.assertEqual(kinds.name_kind("x"), "")
        r = ladder.rungs(1, ["version"])
        self.assertEqual(r[:3], [("1.2.3",), ("2.0.0-rc.1",), ("0.9",)])
        self.assertEqual(len(r), len(ladder.LADDER) + 3)
        self.assertEqual([a for a, in r[3:]], ladder.LADDER)
        # Receivers of a constructor taking a zone: the first three zones.
        self.assertEqual(ladder.receivers(1, ["zone"]), [("Europe/Berlin",), ("America/New_York",), ("UTC",)])

    def test_names_that_mean_one_thing_ask_for_their_values(self):
        self.assertEqual(kinds.name_kind("encoding"), "encoding")
        self.assertEqual(kinds.name_kind("errors", "str"), "errors")  # a string kind: str asks too
        self.assertEqual(kinds.name_kind("cls"), "class")
        self.assertEqual(kinds.name_kind("cls", "str"), "str")  # not a string kind: the annotation wins
        self.assertEqual(kinds.name_kind("fp"), "stream")
        self.assertEqual(kinds.name_kind("max_width"), "int")
        for never in ("key", "b", "value"):
            self.assertEqual(kinds.name_kind(never), "", never)
        # A stream and bytes first, the ladder's paths and strings after.
        self.assertEqual(kinds.name_kind("file"), "stream")
        self.assertEqual(kinds.name_kind("data"), "data")
        self.assertEqual(kinds.name_kind("data", "str"), "str")
        r = ladder.rungs(1, ["data"])
        self.assertEqual([type(a) for a, in r[:3]], [bytes, bytes, bytes])
        self.assertIn(("docs/readme.txt",), r)
        first, second = ladder.rungs(1, ["stream"])[:2]
        fresh = [values.BUILT[id(v)][1]() for v in (first[0], second[0])]  # as a call gets them
        self.assertEqual([v.read() for v in fresh], [bytes(8), "alpha\nbeta\ngamma\n"])
        r = ladder.rungs(2, ["str", "int"])
        self.assertEqual(len(r), len(ladder.LADDER) + len(ladder.MIXED[2]))  # scalars only reorder
        self.assertEqual(r[0], ("", 0))

    def test_built_values_are_new_for_every_call(self):
        # A class decorator that changes its class, a visitor that changes
        # its tree: the next call gets the value as the ladder built it.

        for kind in ("class", "object", "node", "readline", "stream"):
            for v in ladder.TYPED_VALUES[kind]:
                if isinstance(v, types.ModuleType):
                    continue
                rung = (v, 1)
                a, b = fresh.fresh(rung), fresh.fresh(rung)
                self.assertIsNot(a[0], b[0], kind)
                self.assertIsNot(a[0], v, kind)
                self.assertEqual(canon.display(a), canon.display((v, 1)), kind)
        color = ladder.TYPED_VALUES["class"][0]
        first = fresh.fresh((color,))[0]
        first.extra = 1
        self.assertFalse(hasattr(fresh.fresh((color,))[0], "extra"))
        # A module too: what a call sets on it, or on a function's
        # globals, is gone for the next call (the repeat breaker's).
        module = ladder.TYPED_VALUES["module"][2]
        m = fresh.fresh((module, [1]))[0]
        m.count = 1
        self.assertFalse(hasattr(fresh.fresh((module, [1]))[0], "count"))
        self.assertEqual(m.rgb_to_hsv(1, 0, 0), (0.0, 1.0, 1))
        import colorsys
        self.assertIsNot(m, colorsys)
        fn = fresh.fresh((ladder.TYPED_VALUES["object"][0],))[0]
        fn.__globals__["count"] = 1
        self.assertNotIn("count", fresh.fresh((ladder.TYPED_VALUES["object"][0],))[0].__globals__)
        self.assertNotIn("count", vars(colorsys))

    def test_a_builder_broken_by_a_call_gives_the_ladders_own_value(self):

        v = ladder.TYPED_VALUES["class"][0]
        build = values.BUILT[id(v)]
        values.BUILT[id(v)] = (v, lambda: 1 / 0)
        try:
            self.assertIs(fresh.fresh((v, 1))[0], v)
        finally:
            values.BUILT[id(v)] = build

    def test_built_values_are_shown_without_an_address(self):
        for kind in ("class", "object", "node", "readline", "module"):
            for v in ladder.TYPED_VALUES[kind]:
                shown = canon.display((v,))[0]
                self.assertNotRegex(shown, "0x[0-9a-f]{4,}", kind)
                self.assertNotIn(str(id(v)), shown, kind)
        self.assertEqual(canon.display(tuple(ladder.TYPED_VALUES["class"])),
                         ["class:__main__.Color", "class:__main__.Point", "class:__main__.Plain"])

    def test_a_function_with_no_module_has_a_canonical_form(self):
        def f():
            pass
        f.__module__ = None
        self.assertTrue(canon.canon_text(f)[0].startswith("function:?."))

    def test_the_ladders_function_forgets_what_a_call_set_on_it(self):

        f = fresh.fresh((values._callback,))[0]
        self.assertIs(f, values._callback)
        f.marked = True
        self.assertFalse(hasattr(fresh.fresh((values._callback,))[0], "marked"))

    def test_a_date_string_and_its_format_meet(self):
        # A parser taking (date_string, format) gets matching pairs.
        r = ladder.rungs(2, [kinds.name_kind("date_string"), kinds.name_kind("format")])
        import datetime
        self.assertEqual(datetime.datetime.strptime(*r[0]), datetime.datetime(2024, 2, 29))
        self.assertEqual(datetime.datetime.strptime(*r[1]), datetime.datetime(2024, 2, 29, 13, 45, 30))

    def test_a_count_meets_a_container_with_a_small_number(self):
        # (n, iterable), (iterable, r): the huge int never meets a real
        # container that a kind put beside it.
        for kinds in (["int", "list"], ["list", ""], ["", "list"], ["int", ""]):
            for r in ladder.rungs(2, kinds):
                if 2 ** 70 in r:
                    self.assertFalse(any(isinstance(a, (list, tuple, dict)) for a in r), (kinds, r))
        self.assertEqual(ladder.rungs(2, [])[3], (2 ** 70, 2 ** 70))  # no kind: the ladder as it is
        self.assertEqual(ladder.rungs(1, ["int"])[-1], (2 ** 70,))
