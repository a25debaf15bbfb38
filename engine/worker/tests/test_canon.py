"""Canonical answers (canon.py)."""

import os
import unittest

from .. import canon


def v(x):
    return canon.answer(x)[0]


class Canonical(unittest.TestCase):
    def test_dict_key_order_is_not_semantic(self):
        self.assertEqual(v({"a": 1, "b": 2}), v({"b": 2, "a": 1}))

    def test_list_and_tuple_order_is_semantic(self):
        self.assertNotEqual(v([1, 2]), v([2, 1]))
        self.assertNotEqual(v((1, 2)), v((2, 1)))
        self.assertNotEqual(v([1, 2]), v((1, 2)))

    def test_sets_keep_iteration_order_and_tell_order_only(self):
        text, free = canon.answer({"a", "b", "c"})
        self.assertTrue(text.startswith("V:set["))
        self.assertEqual(free, "V:set[\"a\",\"b\",\"c\"]")

    def test_types_are_distinct(self):
        self.assertEqual(len({v(1), v(1.0), v(True), v("1"), v(b"1"), v(None)}), 6)

    def test_exceptions_by_type_only(self):
        self.assertEqual(canon.raised(ValueError("at /home/x/0x1234")), "E:ValueError")

    def test_a_string_holding_an_address_has_no_canonical_form(self):
        # Not masked and counted as answered: excluded.
        for text in ("<object object at 0x7f3a2b1c>", "<OBJECT OBJECT AT 0X7F3A2B1C>", ["ok", "x at 0xdeadbeef"]):
            with self.assertRaises(canon.NoCanon):
                canon.canon_text(text)
        self.assertEqual(canon.canon_text("at 0x12 is not an address")[0], '"at 0x12 is not an address"')

    def test_an_address_is_known_by_its_value_in_any_spelling(self):
        # A live object's id() lies in this process's mappings however it
        # is written; the string that carries it has no canonical form.
        obj = object()
        for text in ("memory:%x" % id(obj), "memory:%X" % id(obj), "<T %d>" % id(obj), "id=%d" % id(obj),
                     "%%3CT%%20at%%200x%x%%3E" % id(obj), "0x%x" % id(obj), ["ok", "memory:%x" % id(obj)]):
            with self.assertRaises(canon.NoCanon, msg=text):
                canon.canon_text(text)

        class Template:
            def __repr__(self):
                return "<Template memory:%x>" % id(self)

        # A repr with an address in it: the instance is its attributes.
        t = Template()
        t.name = "x"
        self.assertIn("Template{name=\"x\"}", v(t))

    def test_numbers_that_are_not_addresses_stay(self):
        # Above user space (2**47), or too short, or part of a digest: never
        # an address, whatever the process maps.
        for text in ("token %012x" % 0xfe12a4b7c9d3, "deadbeef", "commit 7f3a9c1", "sha1 " + "7f3a" * 10,
                     "n=123456789012345678", "1.234567890123", "in 2026 at 12:00"):
            self.assertEqual(canon.canon_text(text)[0], '"%s"' % text, text)

    def test_address_has_no_canonical_form(self):
        with self.assertRaises(canon.NoCanon):
            canon.answer(object())
        # A function is its qualified name, the same in every process.
        self.assertEqual(v(lambda: 1), "V:function:%s.Canonical.test_address_has_no_canonical_form.<locals>.<lambda>" % __name__)

    def test_an_instance_is_its_attributes(self):
        # Whose repr is only its address: compared by its state, never the
        # address; a cached hash() is left out, an iterator it holds is not
        # run, and one that holds itself ends.
        class Box:
            pass

        class Slotted:
            __slots__ = ("a", "b")

        a, b = Box(), Box()
        a.x, a.y, b.y, b.x = 1, [2], [2], 1
        self.assertEqual(v(a), v(b))
        self.assertIn("Box{x=1,y=[2]}", v(a))
        b.y = [3]
        self.assertNotEqual(v(a), v(b))
        a._hash, b.y = 12345, [2]
        self.assertEqual(v(a), v(b))
        ran = []

        def gen():
            ran.append(1)
            yield 1
        a.g = gen()
        self.assertIn("g=iter:generator[not consumed]", v(a))
        self.assertEqual(ran, [])
        a.me = a
        self.assertIn("me=<cycle>", v(a))
        s = Slotted()
        s.a = "k"
        self.assertTrue(v(s).endswith("Slotted{a=\"k\"}"))
        # An attribute with no canonical form leaves the instance without one.
        b.o = object()
        with self.assertRaises(canon.NoCanon):
            canon.answer(b)

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


class Lazy(unittest.TestCase):
    def test_iterators_are_consumed(self):
        self.assertEqual(v(iter([1, 2])), "V:iter:list_iterator[1,2]")
        self.assertEqual(v(x for x in (3,)), "V:iter:generator[3]")
        self.assertEqual(v(map(str, [1])), 'V:iter:map["1"]')

    def test_endless_iterator_is_cut(self):
        import itertools
        text = v(itertools.count())
        self.assertTrue(text.endswith("…cut at %d]" % canon.MAX_ITEMS), text[-40:])

    def test_raising_midway_is_part_of_the_answer(self):
        def gen():
            yield 1
            raise KeyError("x")
        self.assertEqual(v(gen()), "V:iter:generator[1,!E:KeyError]")

    def test_order_only_of_a_lazy_set_is_told_from_one_pass(self):
        text, free = canon.answer(iter([{"b", "a"}]))
        self.assertEqual(free, 'V:iter:list_iterator[set["a","b"]]')

    def test_files_are_not_read(self):
        with open(os.devnull) as fh:
            text = v(fh)
        self.assertNotIn("iter:", text)
        self.assertIn("TextIOWrapper", text)

    def test_angle_repr_without_address_is_canonical(self):
        class Missing:
            def __repr__(self):
                return "<missing>"
        self.assertTrue(v(Missing()).endswith(":<missing>"))


class MadeUpNames(unittest.TestCase):
    def test_a_temporary_folder_s_numbers_are_no_address(self):
        from .. import addresses
        real = addresses.is_address
        addresses.is_address = lambda n: True  # every number would be one
        try:
            self.assertFalse(addresses.has_address("/tmp/nondet-sandbox-1a2b3c4d-2718281828/home/probe"))
            self.assertFalse(addresses.has_address("run_2718281828"))
            self.assertTrue(addresses.has_address("memory:7f3a12345678"))
            self.assertTrue(addresses.has_address("<x at 0x7f3a12345678>"))
        finally:
            addresses.is_address = real
