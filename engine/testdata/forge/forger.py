"""A forger that knows the worker's protocol: it finds the plan and the
run's nonce among the objects of its process, finds a record channel and
writes results for every call planned after its own. The engine must name
it and keep its neighbours' real answers."""
import gc
import json
import os
import sys


def _plan_and_nonce():
    plan, nonce = None, None
    gc.unfreeze()  # the worker freezes what it holds before forking
    for o in gc.get_objects():
        if isinstance(o, dict) and "calls" in o and "functions" in o:
            plan = o
        elif type(o).__name__ == "Channel" and getattr(o, "nonce", None):
            nonce = o.nonce
    if plan is not None and nonce is None:
        nonce = plan.get("nonce")
    return plan, nonce


def a_forger():
    plan, nonce = _plan_and_nonce()
    if plan is None:
        return "no plan"
    mine = [i for i, f in enumerate(plan["functions"]) if f["name"] == "a_forger"][0]
    me = [i for i, (fi, _) in enumerate(plan["calls"]) if fi == mine][0]
    fds = []
    for candidate in range(900, 1024):
        try:
            os.fstat(candidate)
            fds.append(candidate)
        except OSError:
            pass
    if not fds:
        return "no channel"
    # Finish its own call first, so the forged starts are in turn.
    forged = [{"k": "r", "i": me, "v": 'V:"forged"'}]
    for i in range(me + 1, len(plan["calls"])):
        forged += [{"k": "s", "i": i}, {"k": "r", "i": i, "v": 'V:"forged"'}]
    for fd in fds:
        for rec in forged:
            rec["n"] = nonce
            try:
                os.write(fd, (json.dumps(rec) + "\n").encode())
            except OSError:
                pass
    return "forged"


def b_victim(x):
    return x
