"""A package's zygote (zygote.py), seen from the records the worker sends:
the children it forks answer as children forked by the parent do, and a
zygote that cannot serve, or that scanned code ends, costs nothing but
itself."""

import os
import shutil
import tempfile
import unittest

from .test_main import run

# pkg's __init__ notes the process that ran it; who() says whether that
# is the process it is called in (it is not when a zygote imported pkg).
INIT = "import os\nPID = os.getpid()\nCOUNT = [0]\n"
MODULE = ("import os\nimport pkg\n\n"
          "def who(x):\n    return os.getpid() == pkg.PID\n\n"
          "def bump(x):\n    pkg.COUNT[0] += 1\n    return pkg.COUNT[0]\n")


class Zygote(unittest.TestCase):
    def tree(self, init=INIT, extra=None):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        os.mkdir(os.path.join(root, "pkg"))
        files = {"pkg/__init__.py": init, "pkg/a.py": MODULE, "pkg/b.py": MODULE,
                 "alone.py": "def f(x):\n    return 1\n"}
        files.update(extra or {})
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as fh:
                fh.write(text)
        return root

    def probe(self, root, modules, functions, calls, **plan):
        req = {
            "nonce": "N", "start": 0, "skip": [], "call_timeout": 2, "import_timeout": 10,
            "modules": [{"index": i, "root": root, "name": n, "path": os.path.join(root, *n.split(".")) + ".py"}
                        for i, n in enumerate(modules)],
            "functions": functions, "calls": calls,
        }
        req.update(plan)
        recs, err = run("probe", req)
        self.assertEqual(recs[-1]["k"], "done", (recs, err))
        return {r["i"]: r.get("v", r.get("x")) for r in recs if r["k"] == "r"}, recs, err

    def standard(self, root, **plan):
        # a.who, a.bump twice, b.who, b.bump twice, then a module of its own.
        functions = [{"module": 0, "name": "who", "arity": 1}, {"module": 0, "name": "bump", "arity": 1},
                     {"module": 1, "name": "who", "arity": 1}, {"module": 1, "name": "bump", "arity": 1},
                     {"module": 2, "name": "f", "arity": 1}]
        calls = [[0, 0], [1, 0], [1, 1], [2, 0], [3, 0], [3, 1], [4, 1]]
        return self.probe(root, ["pkg.a", "pkg.b", "alone"], functions, calls, **plan)

    def test_children_of_a_zygote_answer_as_the_parents_do(self):
        root = self.tree()
        served, _, err = self.standard(root)
        alone, _, err2 = self.standard(root, no_zygotes=True)
        # Each module's child starts from a fresh copy of the package: the
        # counter counts the calls of one module only (the repeat breaker
        # calls the first rung twice), whoever forked them.
        self.assertEqual({i: v for i, v in served.items() if i not in (0, 3)},
                         {i: v for i, v in alone.items() if i not in (0, 3)}, (err, err2))
        self.assertEqual([served[i] for i in (1, 2, 4, 5)], ["V:1", "V:3", "V:1", "V:3"], err)
        # The package was imported by the zygote, not in the children.
        self.assertEqual((served[0], served[3]), ("V:False", "V:False"), err)
        self.assertEqual((alone[0], alone[3]), ("V:True", "V:True"), err2)

    def test_a_package_sees_one_stack_however_its_calls_are_cut(self):
        # A function that counts its callers' frames, in a package of one
        # module, answers the same in one stretch and in two (a lone run,
        # or a run that leaves out a call that hung in an earlier one),
        # after a retry that imports nothing outside a child, and where
        # the package's import leaves a thread (no zygote can import it).
        depth = ("import sys\n\ndef depth(x):\n    f, n = sys._getframe(), 0\n"
                 "    while f:\n        f, n = f.f_back, n + 1\n    return n\n")
        functions = [{"module": 0, "name": "depth", "arity": 1}]
        calls = [[0, 0], [0, 1]]
        root = self.tree(extra={"pkg/a.py": depth})
        whole, _, err = self.probe(root, ["pkg.a"], functions, calls)
        self.assertEqual(whole[0], whole[1], err)
        threads = INIT + "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        for plan, tree in (({"segments": [0, 1]}, root), ({"no_zygotes": True}, root),
                           ({}, self.tree(init=threads, extra={"pkg/a.py": depth}))):
            other, _, err2 = self.probe(tree, ["pkg.a"], functions, calls, **plan)
            self.assertEqual(whole, other, (plan, err, err2))
        # And after a child of the package ended its zygote (once: the
        # repeat breaker calls it again, when its parent may be the
        # probe's parent).
        killer = "import os\nDONE = []\n\ndef kill(x):\n    if not DONE:\n        DONE.append(1)\n        os.kill(os.getppid(), 9)\n"
        tree = self.tree(extra={"pkg/a.py": depth, "pkg/b.py": killer})
        functions = [{"module": 1, "name": "kill", "arity": 1}, {"module": 0, "name": "depth", "arity": 1}]
        after, recs, err2 = self.probe(tree, ["pkg.a", "pkg.b"], functions, [[0, 0], [1, 0], [1, 1]])
        self.assertEqual([after.get(1), after.get(2)], [whole[0], whole[1]], (recs, err2))
        # And in lone runs of two packages in turn: pkg, another, pkg.
        os.mkdir(os.path.join(root, "other"))
        for name in ("__init__.py", "c.py"):
            with open(os.path.join(root, "other", name), "w") as fh:
                fh.write("def f(x):\n    return 1\n")
        functions = [{"module": 0, "name": "depth", "arity": 1}, {"module": 1, "name": "f", "arity": 1}]
        turns, recs, err2 = self.probe(root, ["pkg.a", "other.c"], functions, [[0, 0], [1, 0], [0, 1]], segments=[0, 1, 2])
        self.assertEqual([turns.get(0), turns.get(2)], [whole[0], whole[1]], (recs, err2))

    def test_a_package_that_leaves_a_thread_is_not_served(self):
        init = INIT + "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        served, _, err = self.standard(self.tree(init=init))
        self.assertEqual((served[0], served[3]), ("V:True", "V:True"), err)
        self.assertEqual(served[6], "V:1", err)

    def test_a_package_that_leaves_a_thread_python_does_not_count_is_not_served(self):
        init = INIT + "import _thread, time\n_thread.start_new_thread(time.sleep, (60,))\n"
        served, _, err = self.standard(self.tree(init=init))
        self.assertEqual((served[0], served[3]), ("V:True", "V:True"), err)

    def test_a_package_slower_to_import_than_the_call_limit_is_not_served(self):
        # Its import sends no record: the engine would take the worker for
        # hung. Each child imports it under the import limit instead.
        init = INIT + "import time\ntime.sleep(1.5)\n"
        served, _, err = self.standard(self.tree(init=init), call_timeout=1)
        self.assertEqual((served[0], served[3]), ("V:True", "V:True"), err)

    def test_a_package_whose_import_fails_is_imported_by_each_child(self):
        served, recs, err = self.standard(self.tree(init="raise RuntimeError('no')\n"))
        failed = [r["m"] for r in recs if r["k"] == "if"]
        self.assertEqual(failed, [0, 1], (recs, err))
        self.assertEqual(served, {6: "V:1"}, err)

    def test_a_child_that_ends_its_zygote_harms_no_other_module(self):
        # Once: the repeat breaker calls it again, and by then its parent
        # is the probe's parent (the subreaper), which the engine restarts.
        killer = MODULE + ("\nDONE = []\n\ndef kill(x):\n    if not DONE:\n        DONE.append(1)\n"
                           "        os.kill(os.getppid(), 9)\n    return 1\n")
        root = self.tree(extra={"pkg/a.py": killer})
        functions = [{"module": 0, "name": "kill", "arity": 1}, {"module": 0, "name": "bump", "arity": 1},
                     {"module": 1, "name": "who", "arity": 1}, {"module": 1, "name": "bump", "arity": 1},
                     {"module": 2, "name": "f", "arity": 1}]
        calls = [[0, 0], [1, 0], [2, 0], [3, 0], [4, 1]]
        served, recs, err = self.probe(root, ["pkg.a", "pkg.b", "alone"], functions, calls)
        # The zygote is gone after the first call: pkg.b's child is the
        # parent's, and imports pkg itself; the other module answers.
        self.assertEqual(served.get(1), "V:1", (recs, err))
        self.assertEqual(served.get(2), "V:True", (recs, err))
        self.assertEqual(served.get(3), "V:1", (recs, err))
        self.assertEqual(served.get(4), "V:1", (recs, err))
        self.assertFalse([r for r in recs if r["k"] == "gone" and r.get("t")], recs)

    def test_a_hang_in_a_zygotes_child_is_named_and_the_stretch_goes_on(self):
        hang = MODULE + "\ndef hang(x):\n    import time\n    time.sleep(60)\n"
        root = self.tree(extra={"pkg/a.py": hang})
        functions = [{"module": 0, "name": "bump", "arity": 1}, {"module": 0, "name": "hang", "arity": 1},
                     {"module": 0, "name": "who", "arity": 1}, {"module": 1, "name": "bump", "arity": 1}]
        calls = [[0, 0], [1, 0], [2, 0], [3, 0]]
        served, recs, err = self.probe(root, ["pkg.a", "pkg.b"], functions, calls, call_timeout=1)
        gone = [r for r in recs if r["k"] == "gone"]
        self.assertEqual([(g.get("i"), g.get("to")) for g in gone], [(1, True)], (recs, err))
        # The call after the hang runs in a new child of the same zygote.
        self.assertEqual(served, {0: "V:1", 2: "V:False", 3: "V:1"}, (recs, err))


if __name__ == "__main__":
    unittest.main()
