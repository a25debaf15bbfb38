"""A witness call traced line by line (tracing.py)."""

import os
import sys
import tempfile
import unittest

from .. import tracing


def traced(fn, *args):
    t = tracing.start()
    try:
        fn(*args)
    finally:
        out = tracing.stop(t)
    return out


# Traced code lives outside the worker's folder: the worker's own frames
# are never traced.
SOURCE = """\
import os

def pick(xs):
    first = xs[0]
    return first * 2

def uses():
    import tracing_fresh_module
    return tracing_fresh_module.helper()

def loop(n):
    total = 0
    for i in range(n):
        total += i
    return total
"""

FRESH = """\
import os
HOME = os.environ.get("HOME", "")
def helper():
    return len(HOME)
for _ in range(50):
    helper()
"""


class Tracing(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        for name, text in (("tracing_scanned.py", SOURCE), ("tracing_fresh_module.py", FRESH)):
            with open(os.path.join(self.dir.name, name), "w") as f:
                f.write(text)
        sys.path.insert(0, self.dir.name)
        import tracing_scanned

        self.m = tracing_scanned
        self.file = tracing_scanned.__file__

    def tearDown(self):
        sys.path.remove(self.dir.name)
        for name in ("tracing_scanned", "tracing_fresh_module"):
            sys.modules.pop(name, None)
        self.dir.cleanup()

    def test_lines_locals_and_the_return(self):
        out = traced(self.m.pick, [3, 4])
        self.assertFalse(out["cut"])
        self.assertEqual([(e[0], e[2]) for e in out["ev"]], [("l", 4), ("l", 5), ("r", 5)])
        # The second line event carries what the first line set.
        self.assertEqual(out["ev"][1][5], {"first": "3"})
        self.assertEqual(out["ev"][1][6], 4)
        self.assertEqual(out["ev"][-1][5], "6")

    def test_a_module_imported_during_the_call_is_not_traced(self):
        # Its body reads the process, not the input; the call's own
        # lines around the import are traced, and so is the helper it
        # calls after the import (two events), not the body's 50 calls.
        out = traced(self.m.uses)
        files = [os.path.basename(e[1]) for e in out["ev"]]
        self.assertEqual(files.count("tracing_fresh_module.py"), 2, files)
        self.assertEqual(files.count("tracing_scanned.py"), 3, files)
        self.assertFalse(out["cut"])

    def test_the_bound_cuts_and_says_so(self):
        out = traced(self.m.loop, tracing.MAX_EVENTS)
        self.assertTrue(out["cut"])
        self.assertLessEqual(len(out["ev"]), tracing.MAX_EVENTS)
        self.assertIsNone(sys.gettrace())


if __name__ == "__main__":
    unittest.main()
