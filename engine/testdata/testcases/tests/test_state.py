"""Test classes: probed one method at a time without setUp, their answers
would be whatever the previous test left behind."""
import unittest

_SEEN = []


class Base(unittest.TestCase):
    def setUp(self):
        self.items = []


class TestOrder(Base):  # a test case by its base, wherever it is
    def test_first(self):
        _SEEN.append(1)
        return len(_SEEN)


class TestPlain:  # pytest collects it: a Test* class of a test file
    def test_count(self):
        _SEEN.append(2)
        return len(_SEEN)


class Helper:  # not a test case: probed
    def size(self):
        return 3
