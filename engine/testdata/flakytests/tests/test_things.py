"""Tests run as their runner runs them (--tests): each needs its fixtures,
one is flaky."""
import unittest


class TestWithFixtures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = {"ready": True}

    def setUp(self):
        self.items = ["a", "b"]

    def tearDown(self):
        self.items.clear()

    def test_uses_setup(self):
        self.assertTrue(self.shared["ready"])
        self.assertEqual(len(self.items), 2)

    def test_flaky(self):
        # Hash order: passes under some seeds, fails under others.
        self.assertEqual(list({"alpha", "beta", "gamma"})[0], "alpha")

    def helper(self):
        return 1


class TestPytestStyle:
    def setup_method(self, method):
        self.n = 3

    def test_count(self):
        assert self.n == 3
