"""A forger that knows the worker's protocol: it reads the nonce from the
plan, finds the record channel and writes results for every call planned
after its own. The engine must name it and keep its neighbours' real
answers."""
import json
import os
import sys


def a_forger():
    with open(sys.argv[2]) as fh:
        plan = json.load(fh)
    mine = [i for i, f in enumerate(plan["functions"]) if f["name"] == "a_forger"][0]
    me = [i for i, (fi, _) in enumerate(plan["calls"]) if fi == mine][0]
    fd = None
    for candidate in range(900, 1024):
        try:
            os.fstat(candidate)
            fd = candidate
            break
        except OSError:
            pass
    if fd is None:
        return "no channel"
    # Finish its own call first, so the forged starts are in turn.
    forged = [{"k": "r", "i": me, "v": 'V:"forged"'}]
    for i in range(me + 1, len(plan["calls"])):
        forged += [{"k": "s", "i": i}, {"k": "r", "i": i, "v": 'V:"forged"'}]
    for rec in forged:
        rec["n"] = plan["nonce"]
        os.write(fd, (json.dumps(rec) + "\n").encode())
    return "forged"


def b_victim(x):
    return x
