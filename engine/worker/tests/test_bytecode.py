"""Bytecode kept for probes (bytecode.py), sent by discovery."""

import os
import sys
import unittest

from .. import bytecode, channel, discover


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
        with open(os.path.join(self.code, bytecode.code_name(self.path)), "wb") as fh:
            fh.write(pyc)

    def load(self):
        cache = bytecode.CodeCache(self.code)
        cache.install()
        sys.path.insert(0, os.path.dirname(self.pkg))
        import importlib
        return importlib.import_module("bcpkg.mod").f()

    def test_the_kept_code_runs_while_it_matches_the_source(self):
        # Code that differs from the source under the source's own hash:
        # only the cache can make the import answer this.
        other = bytecode.bytecode(b"def f():\n    return 'from cache'\n", self.path)
        real = bytecode.bytecode(self.src, self.path)
        self.keep(real[:16] + other[16:])
        self.assertEqual(self.load(), "from cache")

    def test_a_changed_source_is_compiled_again(self):
        self.keep(bytecode.bytecode(b"def f():\n    return 'from cache'\n", self.path))
        self.assertEqual(self.load(), "from source")

    def test_garbage_is_compiled_again(self):
        real = bytecode.bytecode(self.src, self.path)
        self.keep(real[:16] + b"not marshal")
        self.assertEqual(self.load(), "from source")

    def test_code_is_compiled_as_import_compiles_it(self):
        import marshal
        pyc = bytecode.bytecode(self.src, self.path)
        co = marshal.loads(pyc[16:])
        self.assertEqual(co.co_filename, self.path)
        import importlib.machinery
        loader = importlib.machinery.SourceFileLoader("bcpkg.mod", self.path)
        self.assertEqual(co, loader.source_to_code(self.src, self.path))

    def test_frozenset_constants_and_syntax_errors_are_not_kept(self):
        self.assertIsNone(bytecode.bytecode(b"def f():\n    return [x for x in {'a', 'b'}]\n", self.path))
        self.assertIsNone(bytecode.bytecode(b"def f(:\n", self.path))
        # Nested deeper than a recursive walk could go: described all the same.
        deep = b"x = " + b"lambda: " * 500 + b"1\n"
        with open(self.path, "wb") as fh:
            fh.write(deep)
        self.assertEqual(discover.describe_module(self.path, "bcpkg/mod.py", True)["status"], "ok")
        self.assertIsNone(bytecode.bytecode(b"def f():\n    def g(x):\n        return x in {'a', 'b'}\n    return g\n", self.path))
        self.assertIsNotNone(bytecode.bytecode(b"def f():\n    return ('a', 'b')\n", self.path))

    def test_discovery_sends_the_code_when_asked(self):
        import base64
        rec = discover.describe_module(self.path, "bcpkg/mod.py", True)
        self.assertEqual(base64.b64decode(rec["code"]), bytecode.bytecode(self.src, self.path))
        self.assertNotIn("code", discover.describe_module(self.path, "bcpkg/mod.py"))

    def test_a_module_too_large_for_its_record_goes_without_code(self):
        with open(self.path, "w") as fh:
            for i in range(4000):
                fh.write("def f%d(x):\n    return [x, %d, 'v%d' * 3, x + %d]\n" % (i, i, i, i))
        rec = discover.describe_module(self.path, "bcpkg/mod.py", True)
        self.assertEqual(rec["status"], "ok")
        self.assertEqual(len(rec["functions"]), 4000)
        self.assertNotIn("code", rec)
        self.assertLess(len(channel._encode(rec)), discover.MAX_MODULE_RECORD)

    def test_code_name_is_the_engines(self):
        # engine/discover_test.go checks codeName against the same name.
        self.assertEqual(bytecode.code_name("/scan/0/pkg/mod.py"), CODE_NAME)


CODE_NAME = "dc7ad833b0d5bf24e2f914d7b236914a.pyc"
