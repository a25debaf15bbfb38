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
        # A function is its qualified name, the same in every process.
        self.assertEqual(v(lambda: 1), "V:function:test_worker.Canonical.test_address_has_no_canonical_form.<locals>.<lambda>")

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
        self.assertTrue(text.endswith("…cut at %d]" % worker.MAX_ITEMS), text[-40:])

    def test_raising_midway_is_part_of_the_answer(self):
        def gen():
            yield 1
            raise KeyError("x")
        self.assertEqual(v(gen()), "V:iter:generator[1,!E:KeyError]")

    def test_order_only_of_a_lazy_set_is_told_from_one_pass(self):
        text, free = worker.answer(iter([{"b", "a"}]))
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


class Network(unittest.TestCase):
    """The check a worker makes before anything scanned runs where the
    sandbox's lack of network is its platform's (Kubernetes)."""

    HEADER = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"

    def check(self, routes, environ=b""):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            r, r6, env = (os.path.join(d, n) for n in ("route", "route6", "environ"))
            with open(r, "w") as fh:
                fh.write(self.HEADER + "".join(routes))
            open(r6, "w").close()
            with open(env, "wb") as fh:
                fh.write(environ)
            return worker.reachable(timeout=0.5, route=r, route6=r6, environ=env)

    def test_only_loopback_is_nothing_reachable(self):
        self.assertEqual(self.check(["lo\t0000007F\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n"]), "")

    def test_a_gateway_that_answers_is_reachable(self):
        # A gateway of 127.0.0.1 on eth0: its ports answer (or refuse,
        # which is an answer too).
        got = self.check(["eth0\t00000000\t0100007F\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"])
        self.assertTrue(got.startswith("127.0.0.1 port"), got)

    def test_the_api_service_from_pid_1s_environment(self):
        got = self.check([], b"PATH=/bin\0KUBERNETES_SERVICE_HOST=127.0.0.1\0KUBERNETES_SERVICE_PORT=1\0")
        self.assertEqual(got, "127.0.0.1 port 1")


class Bytecode(unittest.TestCase):
    """Discovery compiles each module once; probe children load that code
    only while it matches the source."""

    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.code = os.path.join(self.dir, "code")
        os.mkdir(self.code)
        self.pkg = os.path.join(self.dir, "root", "bcpkg")
        os.makedirs(self.pkg)
        open(os.path.join(self.pkg, "__init__.py"), "w").close()
        self.path = os.path.join(self.pkg, "mod.py")
        self.src = b"def f():\n    return 'from source'\n"
        with open(self.path, "wb") as fh:
            fh.write(self.src)
        self.saved = (list(sys.path), list(sys.path_hooks), dict(sys.path_importer_cache))

    def tearDown(self):
        import shutil
        sys.path[:], sys.path_hooks[:] = self.saved[0], self.saved[1]
        sys.path_importer_cache.clear()
        sys.path_importer_cache.update(self.saved[2])
        for name in [m for m in sys.modules if m == "bcpkg" or m.startswith("bcpkg.")]:
            del sys.modules[name]
        shutil.rmtree(self.dir)

    def keep(self, pyc):
        with open(os.path.join(self.code, worker.code_name(self.path)), "wb") as fh:
            fh.write(pyc)

    def load(self):
        cache = worker.CodeCache(self.code)
        cache.install()
        sys.path.insert(0, os.path.dirname(self.pkg))
        import importlib
        return importlib.import_module("bcpkg.mod").f()

    def test_the_kept_code_runs_while_it_matches_the_source(self):
        # Code that differs from the source under the source's own hash:
        # only the cache can make the import answer this.
        other = worker.bytecode(b"def f():\n    return 'from cache'\n", self.path)
        real = worker.bytecode(self.src, self.path)
        self.keep(real[:16] + other[16:])
        self.assertEqual(self.load(), "from cache")

    def test_a_changed_source_is_compiled_again(self):
        self.keep(worker.bytecode(b"def f():\n    return 'from cache'\n", self.path))
        self.assertEqual(self.load(), "from source")

    def test_garbage_is_compiled_again(self):
        real = worker.bytecode(self.src, self.path)
        self.keep(real[:16] + b"not marshal")
        self.assertEqual(self.load(), "from source")

    def test_code_is_compiled_as_import_compiles_it(self):
        import marshal
        pyc = worker.bytecode(self.src, self.path)
        co = marshal.loads(pyc[16:])
        self.assertEqual(co.co_filename, self.path)
        import importlib.machinery
        loader = importlib.machinery.SourceFileLoader("bcpkg.mod", self.path)
        self.assertEqual(co, loader.source_to_code(self.src, self.path))

    def test_frozenset_constants_and_syntax_errors_are_not_kept(self):
        self.assertIsNone(worker.bytecode(b"def f():\n    return [x for x in {'a', 'b'}]\n", self.path))
        self.assertIsNone(worker.bytecode(b"def f(:\n", self.path))
        # Nested deeper than a recursive walk could go: described all the same.
        deep = b"x = " + b"lambda: " * 500 + b"1\n"
        with open(self.path, "wb") as fh:
            fh.write(deep)
        self.assertEqual(worker.describe_module(self.path, "bcpkg/mod.py", True)["status"], "ok")
        self.assertIsNone(worker.bytecode(b"def f():\n    def g(x):\n        return x in {'a', 'b'}\n    return g\n", self.path))
        self.assertIsNotNone(worker.bytecode(b"def f():\n    return ('a', 'b')\n", self.path))

    def test_discovery_sends_the_code_when_asked(self):
        import base64
        rec = worker.describe_module(self.path, "bcpkg/mod.py", True)
        self.assertEqual(base64.b64decode(rec["code"]), worker.bytecode(self.src, self.path))
        self.assertNotIn("code", worker.describe_module(self.path, "bcpkg/mod.py"))

    def test_a_module_too_large_for_its_record_goes_without_code(self):
        with open(self.path, "w") as fh:
            for i in range(4000):
                fh.write("def f%d(x):\n    return [x, %d, 'v%d' * 3, x + %d]\n" % (i, i, i, i))
        rec = worker.describe_module(self.path, "bcpkg/mod.py", True)
        self.assertEqual(rec["status"], "ok")
        self.assertEqual(len(rec["functions"]), 4000)
        self.assertNotIn("code", rec)
        self.assertLess(len(worker._encode(rec)), worker.MAX_MODULE_RECORD)

    def test_code_name_is_the_engines(self):
        # engine/discover_test.go checks codeName against the same name.
        self.assertEqual(worker.code_name("/scan/0/pkg/mod.py"), CODE_NAME)


CODE_NAME = "dc7ad833b0d5bf24e2f914d7b236914a.pyc"


class Discovery(unittest.TestCase):
    def describe(self, src):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
            fh.write(src)
        try:
            return worker.describe_module(fh.name, "m.py")
        finally:
            os.unlink(fh.name)

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
        first = worker.rungs_of(3, fn["kinds"])[0]
        self.assertIs(type(first[0]), worker._dt.date)
        self.assertIsInstance(first[1], worker.pathlib.PurePath)
        self.assertIs(type(first[2]), int)
        self.assertEqual(len(worker.rungs_of(3, fn["kinds"])), len(worker.rungs(3)))


class Ladder(unittest.TestCase):
    def test_dates_times_and_paths(self):
        kinds = {type(x) for x in worker.LADDER}
        for t in (worker._dt.date, worker._dt.datetime, worker._dt.timedelta, worker._dt.time):
            self.assertIn(t, kinds)
        self.assertIn("~/notes.txt", worker.LADDER)
        self.assertTrue(any(isinstance(x, worker._dt.datetime) and x.tzinfo for x in worker.LADDER))

    def test_display_keeps_dict_order(self):
        self.assertEqual(worker.display(({"b": 1, "a": 2},)), ['{"b":1,"a":2}'])

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
        self.assertEqual(worker.probe_call(lambda d: next(iter(d)), ({"a": 1, "b": 2},))[3], "dict-order")

    def test_repeat(self):
        state = []

        def counter(x):
            state.append(x)
            return len(state)

        self.assertEqual(worker.probe_call(counter, (1,))[3], "repeat")

    def test_dict_order_keeps_aliasing(self):
        d = {"a": 1, "b": 2}
        self.assertEqual(worker.probe_call(lambda x, y: x is y, (d, d))[3:], (None, None))

    def test_state_is_restored_between_calls(self):
        state = worker.ProcessState()
        cwd = os.getcwd()

        def wanders(x):
            os.chdir("/")
            os.environ["NONDET_TEST"] = "1"
            return os.getcwd()

        try:
            worker.call(wanders, (1,))
            state.restore()
            self.assertEqual(os.getcwd(), cwd)
            self.assertNotIn("NONDET_TEST", os.environ)
            self.assertEqual(worker.probe_call(wanders, (1,), state.restore)[3:], (None, None))
        finally:
            state.restore()

    def test_order_free(self):
        self.assertEqual(worker.probe_call(lambda items: items[0], (["a", "b"],), order_free=[0])[3], "order-free")
        self.assertEqual(worker.probe_call(sorted, (["b", "a"],), order_free=[0])[3:], (None, None))

    def test_stable(self):
        self.assertEqual(worker.probe_call(sorted, ([2, 1],))[3:], (None, None))


if __name__ == "__main__":
    unittest.main()


class _Sent:
    def __init__(self):
        self.records = []

    def send(self, rec, flush=False):
        self.records.append(rec)

    def flush(self):
        pass


class Relay(unittest.TestCase):
    """The parent passes on only what a module's child may say, and names
    the call its mark says it is in."""

    PLAN = {
        "functions": [{"module": 0, "name": "a"}, {"module": 0, "name": "c"}, {"module": 1, "name": "b"}],
        "calls": [[0, 0], [1, 0], [2, 0], [2, 1]],
    }

    def relay(self, *lines, lo=0, hi=2, mi=0):
        ch = _Sent()
        r, w = os.pipe()
        rel = worker._Relay(self.PLAN, ch, lo, hi, mi, set(), w, worker.CallMark())
        rel._lines(b"".join(line.encode() + b"\n" for line in lines))
        os.close(r)
        os.close(w)
        return rel, ch.records

    def test_own_calls_in_turn_pass_without_a_nonce(self):
        rel, sent = self.relay('{"k":"is","m":0}', '{"k":"id","m":0}', '{"k":"r","i":0,"v":"V:1"}',
                               '{"k":"nc","i":1,"why":"x"}', '{"k":"end"}')
        self.assertEqual(rel.tampered, "")
        self.assertTrue(rel.ended)
        self.assertEqual([r["k"] for r in sent], ["is", "id", "r", "nc"])

    def test_another_modules_call_is_refused(self):
        rel, sent = self.relay('{"k":"is","m":0}', '{"k":"id","m":0}', '{"k":"r","i":2,"v":"V:1"}')
        self.assertIn("out of turn", rel.tampered)
        self.assertEqual([r["k"] for r in sent], ["is", "id"])

    def test_a_nonce_or_done_is_refused(self):
        rel, _ = self.relay('{"k":"done"}')
        self.assertTrue(rel.tampered)
        rel, _ = self.relay('{"k":"is","m":0,"n":"N"}')
        self.assertIn("field", rel.tampered)

    def test_a_result_before_the_import_or_twice_is_refused(self):
        rel, sent = self.relay('{"k":"r","i":0,"v":"V:1"}')
        self.assertTrue(rel.tampered)
        self.assertEqual(sent, [])
        rel, sent = self.relay('{"k":"is","m":0}', '{"k":"id","m":0}', '{"k":"r","i":0,"v":"V:1"}', '{"k":"r","i":0,"v":"V:2"}')
        self.assertTrue(rel.tampered)
        self.assertEqual(len(sent), 3)

    def test_an_imports_start_and_end_are_acknowledged_once_passed_on(self):
        # The end too: a function that kills the parent right after its
        # import must not leave the engine believing the import still runs.
        ch = _Sent()
        r, w = os.pipe()
        rel = worker._Relay(self.PLAN, ch, 0, 2, 0, set(), w, worker.CallMark())
        rel._lines(b'{"k":"is","m":0}\n')
        self.assertEqual(os.read(r, 10), b".")
        self.assertEqual([x["k"] for x in ch.records], ["is"])
        rel._lines(b'{"k":"id","m":0}\n{"k":"r","i":0,"v":"V:1"}\n')
        self.assertEqual(os.read(r, 10), b".")
        self.assertEqual([x["k"] for x in ch.records], ["is", "id", "r"])
        os.close(r)
        os.close(w)

    def test_the_mark_names_only_an_unanswered_call_of_its_own(self):
        mark = worker.CallMark()
        rel = worker._Relay(self.PLAN, _Sent(), 0, 2, 0, set(), -1, mark)
        mark.start(1)
        self.assertEqual(rel.in_call(), 1)
        mark.start(2)  # another module's call
        self.assertEqual(rel.in_call(), -1)
        rel.last = 1
        mark.start(1)  # answered already
        self.assertEqual(rel.in_call(), -1)
        mark.end()
        self.assertEqual(rel.in_call(), -1)
