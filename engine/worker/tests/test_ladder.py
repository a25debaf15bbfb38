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
