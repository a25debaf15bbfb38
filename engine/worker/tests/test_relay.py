"""The parent's relay of a child's records (relay.py) and the call mark (channel.py)."""

import os
import unittest

from .. import channel, relay


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
        rel = relay._Relay(self.PLAN, ch, lo, hi, mi, set(), w, channel.CallMark())
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

    def test_the_files_a_child_loaded_are_said_of_its_module(self):
        rel, sent = self.relay('{"k":"is","m":0}', '{"k":"id","m":0}', '{"k":"r","i":0,"v":"V:1"}',
                               '{"k":"end","f":["/t/a.py","/t/b.py"]}')
        self.assertEqual(rel.tampered, "")
        self.assertEqual(sent[-1], {"k": "fl", "m": 0, "f": ["/t/a.py", "/t/b.py"]})
        rel, _ = self.relay('{"k":"is","m":0}', '{"k":"id","m":0}', '{"k":"end","f":["/t/a.py",3]}')
        self.assertIn("field it may not (f)", rel.tampered)

    def test_a_traced_call_says_a_list_of_traces(self):
        head = ('{"k":"is","m":0}', '{"k":"id","m":0}')
        rel, sent = self.relay(*head, '{"k":"r","i":0,"v":"V:1","tr":[{"ev":[],"cut":false},{"ev":[],"cut":true}]}')
        self.assertEqual(rel.tampered, "")
        self.assertEqual(len(sent[-1]["tr"]), 2)
        for bad in ('{"ev":[]}', '[{"ev":[]},"x"]', '["x"]'):
            rel, _ = self.relay(*head, '{"k":"r","i":0,"v":"V:1","tr":%s}' % bad)
            self.assertIn("field it may not (tr)", rel.tampered, bad)

    def test_a_spent_budget_stands_for_one_call(self):
        # "ob" is one call not made, in turn; the function's later calls
        # still come. A plan with no budget has no "ob".
        PLAN = {"function_budget": 1, "functions": [{"module": 0, "name": "a"}, {"module": 0, "name": "c"}],
                "calls": [[0, 2], [0, 1], [0, 0], [1, 0]]}
        ch = _Sent()
        rel = relay._Relay(PLAN, ch, 0, 4, 0, set(), -1, channel.CallMark())
        rel._lines(b'{"k":"is","m":0}\n{"k":"id","m":0}\n{"k":"r","i":0,"v":"V:1"}\n'
                   b'{"k":"ob","i":1,"us":7,"below":1}\n{"k":"r","i":2,"v":"V:0"}\n{"k":"r","i":3,"v":"V:2"}\n{"k":"end"}\n')
        self.assertEqual(rel.tampered, "")
        self.assertEqual([r["k"] for r in ch.records], ["is", "id", "r", "ob", "r", "r"])
        self.assertNotIn(0, rel.skip)
        rel = relay._Relay(PLAN, _Sent(), 0, 4, 0, set(), -1, channel.CallMark())
        rel._lines(b'{"k":"is","m":0}\n{"k":"id","m":0}\n{"k":"r","i":0,"v":"V:1"}\n{"k":"r","i":0,"v":"V:1"}\n')
        self.assertIn("out of turn", rel.tampered)
        unbudgeted = dict(PLAN, function_budget=0)
        rel = relay._Relay(unbudgeted, _Sent(), 0, 4, 0, set(), -1, channel.CallMark())
        rel._lines(b'{"k":"is","m":0}\n{"k":"id","m":0}\n{"k":"ob","i":0,"us":7,"below":0}\n')
        self.assertIn("out of turn", rel.tampered)

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
        rel = relay._Relay(self.PLAN, ch, 0, 2, 0, set(), w, channel.CallMark())
        rel._lines(b'{"k":"is","m":0}\n')
        self.assertEqual(os.read(r, 10), b".")
        self.assertEqual([x["k"] for x in ch.records], ["is"])
        rel._lines(b'{"k":"id","m":0}\n{"k":"r","i":0,"v":"V:1"}\n')
        self.assertEqual(os.read(r, 10), b".")
        self.assertEqual([x["k"] for x in ch.records], ["is", "id", "r"])
        os.close(r)
        os.close(w)

    def test_the_mark_names_only_an_unanswered_call_of_its_own(self):
        mark = channel.CallMark()
        rel = relay._Relay(self.PLAN, _Sent(), 0, 2, 0, set(), -1, mark)
        mark.start(1)
        self.assertEqual(rel.in_call(), 1)
        mark.start(2)  # another module's call
        self.assertEqual(rel.in_call(), -1)
        rel.last = 1
        mark.start(1)  # answered already
        self.assertEqual(rel.in_call(), -1)
        mark.end()
        self.assertEqual(rel.in_call(), -1)


class IdleCut(unittest.TestCase):
    """A call blocked using no CPU is ended at the idle limit; one that
    computes, or waits on a child process of its own, runs to its end."""

    def test_blocked_calls_are_ended_and_busy_ones_answer(self):
        import shutil
        import tempfile
        from .test_main import run
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        with open(os.path.join(root, "waits.py"), "w") as fh:
            fh.write("import subprocess, threading, time\n\n"
                     "def blocked(x):\n    threading.Event().wait()\n\n"
                     "def busy(x):\n    end = time.monotonic() + 1.2\n    while time.monotonic() < end:\n        pass\n    return 1\n\n"
                     "def child(x):\n    subprocess.run(['sh', '-c', 'i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done'])\n    return 2\n\n"
                     "def after(x):\n    return 3\n")
        names = ["blocked", "busy", "child", "after"]
        plan = {
            "nonce": "N", "start": 0, "skip": [], "call_timeout": 20, "import_timeout": 30, "idle_timeout": 0.5,
            "modules": [{"index": 0, "root": root, "name": "waits", "path": os.path.join(root, "waits.py")}],
            "functions": [{"module": 0, "name": n, "arity": 1} for n in names],
            "calls": [[i, 0] for i in range(len(names))],
        }
        recs, err = run("probe", plan)
        gone = [r for r in recs if r["k"] == "gone"]
        self.assertEqual([(g.get("i"), g.get("to")) for g in gone], [(0, True)], (recs, err))
        self.assertIn("no CPU", gone[0]["why"])
        # It ran about the idle limit, not the call limit.
        self.assertLess(gone[0]["us"], 10 * 1000 * 1000, gone[0])
        answers = {r["i"]: r.get("v") for r in recs if r["k"] == "r"}
        self.assertEqual(answers, {1: "V:1", 2: "V:2", 3: "V:3"}, (recs, err))
