"""The ladder (ladder.py) and how its rungs are shown (canon.display)."""

import unittest

from .. import canon, ladder


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

        f = ladder._callback
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
        self.assertEqual(canon.display((ladder._callback,)), ["function:__main__._callback"])
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
        self.assertEqual([r for r, _ in m[:4]], [(0,), ("alpha",), (ladder.FIVE_WORDS,), (0,)])
        self.assertEqual([a for _, a in m], fn)
        zero = ladder.rungs_of(0, [], {"arity": 2, "kinds": ["int", ""]})
        self.assertEqual(zero, [((0, 0), ()), ((7, "alpha"), ()), ((-3, ladder.FIVE_WORDS), ())])
        self.assertEqual(ladder.rungs_of(0, [], {"arity": 0}), [((), ())])


class NamedKinds(unittest.TestCase):
    def test_a_parameter_name_asks_for_strings_of_its_shape(self):
        self.assertEqual(ladder.name_kind("version"), "version")
        self.assertEqual(ladder.name_kind("base_url"), "url")
        self.assertEqual(ladder.name_kind("tz", "str"), "zone")
        self.assertEqual(ladder.name_kind("path", "str"), "str")  # str-annotated: no Path objects
        self.assertEqual(ladder.name_kind("path"), "path")
        self.assertEqual(ladder.name_kind("version", "int"), "int")  # the annotation wins
        self.assertEqual(ladder.name_kind("x"), "")
        r = ladder.rungs(1, ["version"])
        self.assertEqual(r[:3], [("1.2.3",), ("2.0.0-rc.1",), ("0.9",)])
        self.assertEqual(len(r), len(ladder.LADDER) + 3)
        self.assertEqual([a for a, in r[3:]], ladder.LADDER)
        # Receivers of a constructor taking a zone: the first three zones.
        self.assertEqual(ladder.receivers(1, ["zone"]), [("Europe/Berlin",), ("America/New_York",), ("UTC",)])
