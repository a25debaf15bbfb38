"""How discovery builds receivers across a package (builders.py), and how
a probe builds and calls on them (ladder.receivers_of, instances.build)."""

import os
import sys
import tempfile
import types
import unittest

from .. import builders, calls, discover, fresh, instances, kinds, ladder


class Channel:
    def __init__(self, nonce=""):
        self.sent = []

    def send(self, rec, flush=False):
        self.sent.append(rec)


def discover_package(files):
    """Runs discover mode on a package written from files (module name ->
    source); returns its records."""
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "pkg"))
        req = {"files": [], "max_arity": 3, "moving": ["time.time", "datetime.datetime.now"]}
        for name, src in files.items():
            path = os.path.join(d, "pkg", name + ".py")
            with open(path, "w") as fh:
                fh.write(src)
            req["files"].append({"path": path, "rel": "pkg/%s.py" % name, "module": "pkg." + name, "root": 0})
        ch = Channel()
        real, discover.Channel = discover.Channel, lambda nonce="": ch
        moving = builders.MOVING
        try:
            discover.discover(req)
        finally:
            discover.Channel, builders.MOVING = real, moving
        return ch.sent


def function(recs, name):
    for r in recs:
        for fn in r.get("functions", ()):
            if fn["name"] == name:
                return fn
    raise KeyError(name)


def callees(recs, fn):
    for r in recs:
        if r.get("k") == "ladder" and fn["ladder"] in r.get("rungs", {}):
            return r.get("callees", {}).get(fn["ladder"], []), r["receivers"][fn["ladder"]]
    raise KeyError(fn["ladder"])


class Builds(unittest.TestCase):
    def test_the_ways_a_package_builds_a_class(self):
        recs = discover_package({
            "base": (
                "import abc, time\n"
                "class Version:\n"
                "    '''>>> Version.parse(\"1.2\")\n    >>> v = Version(1, 2, 3, 4, 5)'''\n"
                "    def __init__(self, a, b, c, d, e): pass\n"
                "    @classmethod\n    def parse(cls, text: str): return cls(1, 2, 3, 4, 5)\n"
                "    @classmethod\n    def now(cls): return cls(time.time(), 0, 0, 0, 0)\n"
                "    def bumped(self): return 1\n"
                "class Shape(abc.ABC):\n"
                "    @abc.abstractmethod\n    def area(self): ...\n"
                "    def describe(self): return self.area()\n"
                "class Engine:\n"
                "    def __init__(self, config: 'Config', parser): pass\n"
                "    def go(self): return 1\n"
                "def make() -> Engine: return Engine(None, None)\n"),
            "square": (
                "from .base import Shape\n"
                "class Square(Shape):\n"
                "    def __init__(self, side=2): self.side = side\n"
                "    def area(self): return self.side ** 2\n"
                "class Config:\n    pass\n"
                "class BlockParser:\n    pass\n"),
        })
        bumped = function(recs, "Version.bumped")
        builds = bumped["receiver"]["builds"]
        # The docstring's two calls, the class method that returns cls(...)
        # but not the one that reads the clock: what it built would be
        # what every method answered.
        self.assertEqual(builds["examples"], [[["pkg.base", "Version.parse"], ["'1.2'"]], [None, ["1", "2", "3", "4", "5"]]])
        self.assertEqual([r["call"] for r in builds["recipes"]], [["pkg.base", "Version.parse"]])
        self.assertNotIn("own", builds)  # five arguments: built from a few values each
        # An abstract class is built by its concrete subclass in another
        # module; its abstract method stays unprobed.
        describe = function(recs, "Shape.describe")
        self.assertNotIn("skip", describe)
        self.assertEqual(describe["receiver"]["builds"]["own"], False)
        self.assertEqual(describe["receiver"]["builds"]["recipes"][0]["call"], ["pkg.square", "Square"])
        self.assertIn("skip", function(recs, "Shape.area"))
        got, args = callees(recs, describe)
        self.assertEqual(got[0], "pkg.square.Square")
        # A parameter annotated with a class of the package, and one named
        # for one (parser: a BlockParser), get an instance of it; the
        # module's factory annotated to return the class builds it too.
        engine = function(recs, "Engine.go")["receiver"]["builds"]
        self.assertEqual([k["call"] if isinstance(k, dict) else k for k in engine["takes"]],
                         [["pkg.square", "Config"], ["pkg.square", "BlockParser"]])
        self.assertEqual(engine["recipes"][0]["call"], ["pkg.base", "make"])
        got, args = callees(recs, function(recs, "Engine.go"))
        self.assertEqual(args[0], ["pkg.square.Config()", "pkg.square.BlockParser()"])

    def test_a_name_in_another_package_is_not_this_ones(self):
        index = builders.Index()
        one = {"name": "Parser", "bases": [], "init": None, "abstract": False, "alts": [], "examples": [], "moves": False}
        other = dict(one)
        index.add(0, "jinja2.parser", [one], [])
        index.add(0, "yaml.parser", [other], [])
        index.finish()
        self.assertIs(index.resolve(0, "yaml.loader", "Parser")[1], other)
        self.assertIsNone(index.resolve(0, "six", "Parser"))


class Building(unittest.TestCase):
    def setUp(self):
        self.mod = types.ModuleType("pkgmod")

        class Base:
            def first(self):
                return self.items[0]

        class Sub(Base):
            def __init__(self, text):
                self.items = text.split()

            def first(self):
                return "overridden"

        Base.__module__ = Sub.__module__ = "pkgmod"
        self.mod.Base, self.mod.Sub = Base, Sub
        sys.modules["pkgmod"] = self.mod

    def tearDown(self):
        del sys.modules["pkgmod"]

    def test_the_class_own_method_runs_on_a_subclass_instance(self):
        target, why = calls._lookup(self.mod, {"class": "Base", "attr": "first", "kind": "method"})
        self.assertIsNone(why)
        on = instances._OnFresh(target, ladder.Built(["pkgmod", "Sub"], ("alpha beta",), "pkgmod"), self.mod)
        self.assertEqual(calls.probe_call(on, ())[0], 'V:"alpha"')
        # A receiver built by another callee carries its digest; the same
        # instance twice is no move.
        self.assertEqual(len(on.built), 2)
        self.assertFalse(instances.moved(on))

    def test_a_builder_that_returns_another_type_is_the_constructor_s_answer(self):
        self.mod.make = lambda: 3
        target, _ = calls._lookup(self.mod, {"class": "Base", "attr": "first", "kind": "method"})
        on = instances._OnFresh(target, ladder.Built(["pkgmod", "make"], (), "pkgmod"), self.mod)
        self.assertEqual(calls.probe_call(on, ())[0], "E:TypeError (constructor)")

    def test_a_receiver_that_moves_fires_no_breaker(self):
        n = [0]

        def counting():
            n[0] += 1
            s = self.mod.Sub("x%d" % n[0])
            return s
        self.mod.counting = counting
        target, _ = calls._lookup(self.mod, {"class": "Base", "attr": "first", "kind": "method"})
        on = instances._OnFresh(target, ladder.Built(["pkgmod", "counting"], (), "pkgmod"), self.mod)
        v, _, _, breaker, _ = calls.probe_call(on, ())
        self.assertEqual((v, breaker), ('V:"x1"', None))
        self.assertTrue(instances.moved(on))


class Sockets(unittest.TestCase):
    def test_a_socket_name_asks_for_a_connected_socket_made_per_call(self):
        self.assertEqual(kinds.name_kind("sock"), "socket")
        self.assertEqual(kinds.name_kind("conn"), "socket")
        first = ladder.TYPED_VALUES["socket"][0]
        got = fresh.fresh((first,))[0]
        try:
            self.assertIsNot(got, first)
            self.assertEqual(got.recv(64), b"alpha\r\nbeta\r\n")
            self.assertEqual(got.recv(64), b"")  # the peer closed: no wait
            self.assertNotIn("fd=", repr(got))
        finally:
            got.close()


class Rungs(unittest.TestCase):
    def test_extra_receivers_leave_the_constructor_its_rungs(self):
        plain = ladder.rungs_of(1, [], {"arity": 1, "kinds": []})
        recv = {"arity": 1, "kinds": [], "builds": {"module": "m", "recipes": [{"call": ["m", "C.parse"], "arity": 1, "takes": ["str"]}]}}
        more = ladder.rungs_of(1, [], recv)
        n = len(plain)
        self.assertEqual([(r.args, a) for r, a in more[:n]], [(r.args, a) for r, a in plain])
        extra = more[n:]
        self.assertEqual(len(extra), 3 * ladder.EXTRA_RUNGS)
        self.assertEqual({r.callee() for r, _ in extra}, {"C.parse"})

    def test_without_a_constructor_the_others_take_the_ladder(self):
        recv = {"arity": 0, "kinds": [], "builds": {"module": "m", "own": False,
                                                     "recipes": [{"call": ["m.sub", "Sub"], "arity": 0, "takes": []}]}}
        rungs = ladder.rungs_of(1, [], recv)
        self.assertEqual(len(rungs), len(ladder.rungs(1, [])))
        self.assertEqual({r.callee() for r, _ in rungs}, {"m.sub.Sub"})


if __name__ == "__main__":
    unittest.main()
