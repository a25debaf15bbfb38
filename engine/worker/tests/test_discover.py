"""Discovery by ast (discover.py): functions, signatures, the gate's facts."""

import ast
import os
import tempfile
import unittest

from .. import discover, ladder


class OneLine(unittest.TestCase):
    def test_a_syntax_error_with_no_line_names_none(self):
        try:
            compile(b"x = 1\x00\n", "m.py", "exec")
        except (SyntaxError, ValueError) as e:
            self.assertNotIn("None", discover._one_line(e))
        self.assertEqual(discover._one_line(SyntaxError("bad", ("m.py", 3, 1, "x"))), "bad (line 3)")


class Discovery(unittest.TestCase):
    def describe(self, src):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
            fh.write(src)
        try:
            return discover.describe_module(fh.name, "m.py")
        finally:
            os.unlink(fh.name)

    def test_classes_list_their_own_methods(self):
        rec = self.describe(
            "import abc, enum, dataclasses\n"
            "class Plain:\n"
            "    def __init__(self, name: str, x): pass\n"
            "    def m(self, x: int): return x\n"
            "    @classmethod\n    def c(cls, y): return y\n"
            "    @staticmethod\n    def s(a, b): return a\n"
            "    @property\n    def p(self): return 1\n"
            "    @p.setter\n    def p(self, v): pass\n"
            "    def __repr__(self): return ''\n"
            "@dataclasses.dataclass\nclass Point:\n    x: int\n    y: int = 0\n    def n(self): return self.x\n"
            "class A(abc.ABC):\n    @abc.abstractmethod\n    def f(self): ...\n"
            "class E(enum.Enum):\n    R = 1\n    def f(self): return 1\n"
            "class Oops(ValueError):\n    def f(self): return 1\n"
            "if True:\n    class Later:\n        def g(self): return 1\n"
        )
        fs = {f["name"]: f for f in rec["functions"]}
        self.assertEqual(sorted(fs), ["A.f", "E.f", "Later.g", "Oops.f", "Plain.c", "Plain.m", "Plain.p", "Plain.s", "Point.n"])
        m = fs["Plain.m"]
        self.assertEqual((m["class"], m["attr"], m["kind"], m["required"], m["kinds"]), ("Plain", "m", "method", 1, ["int"]))
        self.assertEqual(m["receiver"], {"arity": 2, "kinds": ["str", ""]})
        self.assertEqual(m["ladder"], "1:int@2:str")
        self.assertEqual((fs["Plain.c"]["kind"], fs["Plain.c"]["required"], fs["Plain.c"].get("receiver")), ("classmethod", 1, None))
        self.assertEqual((fs["Plain.s"]["kind"], fs["Plain.s"]["required"]), ("staticmethod", 2))
        self.assertEqual((fs["Plain.p"]["kind"], fs["Plain.p"]["required"]), ("property", 0))
        self.assertEqual(fs["Point.n"]["receiver"], {"arity": 1, "kinds": ["int"]})
        self.assertEqual(fs["Later.g"]["receiver"], {"arity": 0, "kinds": []})
        for name, word in (("A.f", "abstract"), ("E.f", "enumeration"), ("Oops.f", "exception")):
            self.assertIn(word, fs[name]["skip"])
        self.assertNotIn("skip", m)

    def test_a_method_carries_its_constructors_calls(self):
        # On the host runtime the gate decides from these facts: calling a
        # method builds an instance, and self.x() is the class's own x.
        rec = self.describe(
            "import shutil\n"
            "class Cache:\n"
            "    def __init__(self, directory):\n        shutil.rmtree(directory)\n"
            "    def size(self):\n        return self._wipe()\n"
            "    def _wipe(self):\n        return 0\n"
            "    @staticmethod\n    def pure(x):\n        return x\n"
        )
        fs = {f["name"]: f for f in rec["functions"]}
        calls = {c["name"]: c.get("local", False) for c in fs["Cache.size"]["facts"]["calls"]}
        self.assertEqual(calls, {"Cache._wipe": True, "shutil.rmtree": False})
        self.assertEqual(fs["Cache.pure"]["facts"]["calls"], [])

    def test_odd_annotations_never_end_discovery(self):
        rec = self.describe(
            "def f(x: 'a\\x00b', y: '" + "|".join(["int"] * 3000) + "'): return x\n"
            "class C:\n    def __init__(self, v: 'a\\x00'): pass\n    def m(self): return 1\n"
        )
        self.assertEqual(rec["status"], "ok")
        self.assertEqual([f["name"] for f in rec["functions"]], ["f", "C.m"])

    def test_a_base_made_by_a_call_is_a_base(self):
        # class P(namedtuple(...)): a base no name names, as the standard
        # library's own classes have them.
        rec = self.describe(
            "from collections import namedtuple\n"
            "class P(namedtuple('P', 'x y')):\n    def norm(self): return self.x\n"
            "class E(type('Base', (Exception,), {})):\n    def m(self): return 1\n"
        )
        self.assertEqual(rec["status"], "ok")
        self.assertEqual([f["name"] for f in rec["functions"]], ["P.norm", "E.m"])

    def test_a_fault_of_discovery_is_one_modules_not_the_scans(self):
        from .. import signatures

        def broken(node):
            raise AttributeError("a fault of discovery's own")

        saved, signatures._class_skip = signatures._class_skip, broken
        try:
            rec = self.describe("class C:\n    def m(self): return 1\n")
        finally:
            signatures._class_skip = saved
        self.assertEqual(rec["status"], "unparseable")
        self.assertIn("a fault of this tool", rec["error"])
        self.assertNotIn("functions", rec)
        self.assertEqual(self.describe("class C:\n    def m(self): return 1\n")["status"], "ok")

    def test_doctest_calls_become_first_rungs(self):
        rec = self.describe(
            "def f(code, n=1):\n"
            "    \"\"\"\n    >>> f('12', 2)\n    3\n    >>> m.f([1, {'a': None}])\n"
            "    >>> f(x)\n    >>> f(1, 2, 3)\n    >>> f(code='k')\n    >>> g(1)\n    >>> f('12', 2)\n    \"\"\"\n"
            "    return 1\n"
            "def plain(x): return x\n"
        )
        f, plain = rec["functions"]
        # Literal arguments only, as many as the signature takes, once each.
        self.assertEqual(f["doctests"], [["'12'", "2"], ["[1, {'a': None}]"]])
        self.assertTrue(f["ladder"].startswith("1+dt:"))
        self.assertNotIn("doctests", plain)
        rungs = ladder.rungs_of(1, [], None, f["doctests"])
        self.assertEqual(rungs[:2], [("12", 2), ([1, {"a": None}],)])
        self.assertEqual(rungs[2:], ladder.rungs(1, []))

    def test_only_varargs_get_one_ladder_value(self):
        # *args alone: the call with none first, then one value of the kind
        # its name asks for; a function that also takes a parameter, or
        # requires one, is called as its signature says.
        rec = self.describe(
            "def a(*paths): return paths\n"
            "def b(x, *rest): return x\n"
            "def c(x=1, *rest): return x\n"
            "class K:\n    def __init__(self, *args, **kw): pass\n    def m(self, *args: int): return args\n"
        )
        a, b, c, m = rec["functions"]
        self.assertEqual(m["receiver"], {"arity": 0, "kinds": []})
        self.assertEqual((a["required"], a["kinds"], a["doctests"]), (1, ["path"], [[]]))
        self.assertEqual(b["required"], 1)
        self.assertNotIn("doctests", b)
        self.assertEqual(c["required"], 0)
        self.assertEqual((m["required"], m["kinds"]), (1, ["int"]))
        rungs = ladder.rungs_of(1, a["kinds"], None, a["doctests"])
        self.assertEqual(rungs[0], ())
        self.assertEqual(rungs[1:], ladder.rungs(1, ["path"]))

    def test_defs_in_blocks_are_listed_once(self):
        rec = self.describe(
            "import sys\n"
            "try:\n    import nope\nexcept ImportError:\n    def a(x): return x\n"
            "if sys.version_info > (3,):\n    def b(x, y): return x\nelse:\n    def b(x): return x\n"
            "with open:\n    def c(): return 1\n"
        )
        names = [f["name"] for f in rec["functions"]]
        self.assertEqual(names, ["a", "b", "c"])
        self.assertEqual(rec["functions"][1]["required"], 2)

    def test_overloads_fold_into_the_implementation(self):
        rec = self.describe(
            "import typing\n@typing.overload\ndef f(x: int) -> int: ...\n"
            "@typing.overload\ndef f(x: str) -> str: ...\ndef f(x): return x\n"
        )
        self.assertEqual([(f["name"], f["line"]) for f in rec["functions"]], [("f", 6)])

    def test_annotations_choose_the_first_rungs(self):
        rec = self.describe("import datetime, pathlib\ndef f(d: datetime.date, p: 'pathlib.Path', n: Optional[int]): pass\n")
        fn = rec["functions"][0]
        self.assertEqual(fn["kinds"], ["date", "path", "int"])
        first = ladder.rungs_of(3, fn["kinds"])[0]
        self.assertIs(type(first[0]), ladder._dt.date)
        self.assertIsInstance(first[1], ladder.pathlib.PurePath)
        self.assertIs(type(first[2]), int)
        self.assertEqual(len(ladder.rungs_of(3, fn["kinds"])), len(ladder.rungs(3)))


class Facts(unittest.TestCase):
    def facts(self, src):
        tree = ast.parse(src)
        aliases = {}
        for n in tree.body:
            discover._collect_imports(n, aliases)
        fn = [n for n in tree.body if isinstance(n, ast.FunctionDef)][0]
        return discover._describe_function(fn, aliases, {"helper"})

    def test_calls_resolve_through_imports(self):
        f = self.facts("import os as o\nfrom shutil import rmtree\ndef f(p):\n    o.remove(p)\n    rmtree(p)\n    helper()\n")
        names = [c["name"] for c in f["facts"]["calls"]]
        self.assertEqual(names, ["os.remove", "shutil.rmtree", "helper"])
        self.assertTrue(f["facts"]["calls"][2]["local"])

    def test_calls_resolve_through_names_bound_to_callables(self):
        # shutil.copymode's shape: which chmod it calls depends on a branch.
        f = self.facts("import os\ndef f(src, dst, follow):\n    if follow:\n"
                       "        stat_func, chmod_func = os.stat, os.chmod\n    else:\n"
                       "        stat_func, chmod_func = os.lstat, os.lchmod\n"
                       "    chmod_func(dst, stat_func(src).st_mode)\n")
        names = sorted(c["name"] for c in f["facts"]["calls"])
        self.assertEqual(names, ["os.chmod", "os.lchmod", "os.lstat", "os.stat"])

    def test_a_module_level_alias_is_its_callable(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py") as src:
            src.write("_write = open\n\ndef plant(p):\n    with _write(p, 'w') as fh:\n        fh.write('x')\n")
            src.flush()
            rec = discover.describe_module(src.name, "m.py")
        call = rec["functions"][0]["facts"]["calls"][0]
        self.assertEqual((call["name"], call["mode"]), ("open", "w"))

    def test_a_binding_never_hides_an_import_nor_leaves_its_scope(self):
        src = ("from os import remove as rm\nimport os\nif False:\n    rm = len\n"
               "class FS:\n    unlink = os.unlink\n"
               "def prune(p, unlink):\n    rm(p)\n    unlink(p)\n")
        with tempfile.NamedTemporaryFile("w", suffix=".py") as fh:
            fh.write(src)
            fh.flush()
            rec = discover.describe_module(fh.name, "m.py")
        names = [c["name"] for c in rec["functions"][0]["facts"]["calls"]]
        self.assertEqual(names, ["os.remove", "unlink"])

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


class TestCases(unittest.TestCase):
    def test_which_classes_are_test_cases(self):
        import ast
        from ..testcases import is_test_file, test_classes
        src = ("import unittest\n"
               "class A(unittest.TestCase): pass\n"
               "class B(A): pass\n"
               "class C(django.test.SimpleTestCase): pass\n"
               "class TestD: pass\n"
               "class E: pass\n")
        classes = [n for n in ast.parse(src).body if isinstance(n, ast.ClassDef)]
        self.assertEqual(test_classes("pkg/mod.py", classes), {"A", "B", "C"})
        self.assertEqual(test_classes("pkg/tests/helpers.py", classes), {"A", "B", "C", "TestD"})
        for rel, want in (("test_x.py", True), ("pkg/x_test.py", True), ("tests.py", True), ("pkg/test/util.py", True),
                          ("pkg/testing.py", False), ("pkg/testing/util.py", False), ("pkg/contest.py", False)):
            self.assertEqual(is_test_file(rel), want, rel)
