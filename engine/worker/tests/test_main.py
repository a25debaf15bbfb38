"""The package run as the engine runs it (engine/job.go): python -s FOLDER
MODE, the request on fd 4, records on fd 3, call marks on fd 5; and what
__main__.py imports before anything scanned can be on sys.path."""

import ast
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = __name__.rsplit(".", 2)[0]


def modules():
    """The package's own modules, by file name, without tests."""
    return sorted(f for f in os.listdir(FOLDER) if f.endswith(".py"))


def run(mode, request):
    """Runs the worker in FOLDER (writing no bytecode beside it) and returns
    its records and its stderr."""
    with tempfile.TemporaryFile() as req, tempfile.TemporaryFile() as marks:
        req.write(json.dumps(request).encode())
        req.seek(0)
        marks.write(b"\xff" * 8)
        marks.flush()
        r, w = os.pipe()

        def descriptors():
            moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (w, req.fileno(), marks.fileno())]
            for target, fd in zip((3, 4, 5), moved):
                os.dup2(fd, target)

        proc = subprocess.Popen([sys.executable, "-B", "-s", FOLDER, mode], preexec_fn=descriptors, close_fds=False,
                                env={"PATH": "/usr/bin:/bin", "PYTHONSAFEPATH": "1"},
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(w)
        with os.fdopen(r, "rb") as fh:
            out = fh.read()
        _, err = proc.communicate(timeout=60)
    return [json.loads(line) for line in out.splitlines()], err.decode()


class Entry(unittest.TestCase):
    def test_importing_main_imports_every_module(self):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import %s.main; "
                "print(' '.join(sorted(m for m in sys.modules if m.startswith('%s.'))))" % (PACKAGE, PACKAGE))
        out = subprocess.run([sys.executable, "-B", "-I", "-c", code, os.path.dirname(FOLDER)],
                             check=True, capture_output=True, text=True).stdout.split()
        want = sorted(PACKAGE + "." + f[:-3] for f in modules() if f not in ("__init__.py", "__main__.py"))
        self.assertEqual(out, want)

    def test_main_imports_every_module_the_package_imports_first(self):
        def imported(path):
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            names = set()
            for node in tree.body:  # at import; what a function imports is its own business
                if isinstance(node, ast.Import):
                    names.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names.add(node.module)
            return names

        first = imported(os.path.join(FOLDER, "__main__.py"))
        for f in modules():
            self.assertLessEqual(imported(os.path.join(FOLDER, f)), first, f)

    def test_discover_and_the_ladders_function(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py") as src:
            src.write("def f(x):\n    return x\n")
            src.flush()
            recs, err = run("discover", {"nonce": "N", "files": [{"path": src.name, "rel": "m.py"}]})
        # One ladder record per ladder (arity 0 to 3): no line grows with
        # the number of ladders a large audit has.
        self.assertEqual([r["k"] for r in recs], ["module"] + ["ladder"] * 4 + ["done"], err)
        self.assertTrue(all(r["n"] == "N" for r in recs))
        self.assertEqual(err, "")
        self.assertEqual(recs[0]["functions"][0]["name"], "f")
        ladders = {k: v for r in recs if r["k"] == "ladder" for k, v in r["rungs"].items()}
        self.assertEqual(sorted(ladders), ["0", "1", "2", "3"])
        # The ladder's function is shown as it always was: named in __main__.
        self.assertIn(["function:__main__._callback"], ladders["1"])

    def test_a_scanned_tree_does_not_stand_in_for_the_worker(self):
        # A tree with modules named as the worker's, and a dataclasses.py
        # and a locale.py that break whatever imports them.
        root = tempfile.mkdtemp()
        files = {
            "canon.py": "def f(x):\n    return type('T', (), {'__repr__': lambda s: 'T'})()\n",
            "probe.py": "import importlib.util, pickle, sys\n\ndef g(x):\n"
                        "    return [__name__, [importlib.util.find_spec(m) for m in ('relay', 'seccomp', 'main')],\n"
                        "            len(pickle.dumps(sys.modules['__main__']._callback)) > 0]\n",
            "dataclasses.py": "raise RuntimeError('the scanned dataclasses.py ran')\n",
            "locale.py": "raise RuntimeError('the scanned locale.py ran')\n",
        }
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as fh:
                fh.write(text)
        plan = {
            "nonce": "N", "start": 0, "skip": [], "call_timeout": 10, "import_timeout": 30,
            "modules": [{"index": i, "root": root, "name": n, "path": os.path.join(root, n + ".py")}
                        for i, n in enumerate(("canon", "probe"))],
            "functions": [{"module": 0, "name": "f", "arity": 1}, {"module": 1, "name": "g", "arity": 1}],
            "calls": [[0, 0], [1, 0]],
        }
        try:
            recs, err = run("probe", plan)
        finally:
            shutil.rmtree(root)
        answers = {r["i"]: r.get("v", r.get("x")) for r in recs if r["k"] == "r"}
        self.assertEqual(answers, {0: "V:canon.T:T", 1: 'V:["probe",[None,None,None],True]'}, (recs, err))
        self.assertEqual(recs[-1]["k"], "done")
        # The worker leaves at once and says nothing on stderr.
        self.assertEqual(err, "")
        # Each import and each answer says how long it took, in microseconds.
        for r in recs:
            if r["k"] in ("r", "id"):
                self.assertIsInstance(r.get("us"), int, r)
                self.assertGreaterEqual(r["us"], 0, r)

    def test_scanned_code_sees_an_interpreter_given_no_script(self):
        # A main() that parses sys.argv sees no arguments, not the worker's
        # mode; one that rewrites sys.argv leaves the next call the same.
        answers = probe_one("import sys\n\ndef argv():\n    return list(sys.argv)\n\n"
                            "def rewrite():\n    sys.argv[:] = ['prog', '--flag']\n",
                            ["argv", "rewrite"], [[0, 0], [1, 0], [0, 0]])
        self.assertEqual(answers, [(0, 'V:[""]'), (1, "V:None"), (2, 'V:[""]')])

    def test_a_process_the_call_forked_does_not_answer(self):
        # The forked process returns into the probe too; only the caller's
        # answer is the call's, once. The caller answers last, so a forked
        # process would be first.
        answers = probe_one("import os, time\n\ndef forks():\n    pid = os.fork()\n    if pid:\n"
                            "        time.sleep(0.2)\n    return pid == 0\n",
                            ["forks"], [[0, 0], [0, 0]])
        self.assertEqual(answers, [(0, "V:False"), (1, "V:False")])

    def test_a_function_past_its_budget_keeps_its_first_rungs(self):
        # Each call of slow takes at least 0.2 s: past the 0.35 s budget
        # after n <= 2 calls. A forward run then makes no more; a reversed
        # run, which began at rung 5, still calls the rungs below n, so the
        # two runs share them. The next function is called as ever.
        src = "import time\n\ndef slow(x):\n    time.sleep(0.2)\n\ndef quick():\n    return 1\n"
        functions = [{"module": 0, "name": "slow", "arity": 1}, {"module": 0, "name": "quick", "arity": 0}]
        for order in (range(6), range(5, -1, -1)):
            calls = [[0, r] for r in order] + [[1, 0]]
            recs = probe_one(src, ["slow", "quick"], calls, {"function_budget": 0.35, "functions": functions}, records=True)
            over = [r for r in recs if r["k"] == "ob"]
            self.assertTrue(over, recs)
            n = over[0]["below"]
            self.assertIn(n, (1, 2), recs)
            self.assertGreaterEqual(over[0]["us"], 350000)
            answered = sorted(calls[r["i"]][1] for r in recs if r["k"] == "r" and calls[r["i"]][0] == 0)
            made_first = [r for r in order][:n]
            self.assertEqual(answered, sorted(set(made_first) | set(range(n))), recs)
            self.assertEqual(len(over) + len(answered), 6)
            self.assertEqual([r["i"] for r in recs if r["k"] == "r"][-1], 6)

    def test_no_budget_makes_every_call(self):
        recs = probe_one("import time\n\ndef slow():\n    time.sleep(0.05)\n",
                         ["slow"], [[0, 0]] * 4, records=True)
        self.assertEqual([r["i"] for r in recs if r["k"] == "r"], [0, 1, 2, 3])
        self.assertFalse([r for r in recs if r["k"] == "ob"])


def probe_one(source, names, calls, extra=None, records=False):
    """Probes the functions names (no arguments) of one module made of
    source, with calls (and extra plan fields), and returns each call's
    answer, or every record when records is set."""
    root = tempfile.mkdtemp()
    try:
        path = os.path.join(root, "scanned.py")
        with open(path, "w") as fh:
            fh.write(source)
        plan = {
            "nonce": "N", "start": 0, "skip": [], "call_timeout": 10, "import_timeout": 30,
            "modules": [{"index": 0, "root": root, "name": "scanned", "path": path}],
            "functions": [{"module": 0, "name": n, "arity": 0} for n in names],
            "calls": calls,
        }
        plan.update(extra or {})
        recs, err = run("probe", plan)
    finally:
        shutil.rmtree(root)
    if not recs or recs[-1]["k"] != "done":
        raise AssertionError("the probe did not finish: %s\n%s" % (recs, err))
    if records:
        return recs
    return [(r["i"], r.get("v", r.get("x"))) for r in recs if r["k"] == "r"]

if __name__ == "__main__":
    unittest.main()
