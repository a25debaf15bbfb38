"""The floor of a scan's call cost, measured by bench in the same run: one
interpreter imports every module of a synthetic tree and calls each
function twice on each rung the scan would use, taking repr of the answer,
with no sandbox, no records and no state restored. What a scan spends above
this is overhead.

usage: floor.py TREE WORKER_DIR; prints one JSON object. The rungs are the
worker's own (worker.rungs), so the floor calls exactly what a scan calls,
once per run of a scan's three, twice each as the scan's repeat does."""
import importlib
import json
import os
import sys
import time

tree = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import worker  # noqa: E402

sys.path.insert(0, tree)
mods = sorted("synth." + f[:-3] for f in os.listdir(os.path.join(tree, "synth")) if f.endswith(".py") and f != "__init__.py")
cpu0, t0 = time.process_time(), time.perf_counter()
loaded = [importlib.import_module(m) for m in mods]
n = 0
for m in loaded:
    for name, f in vars(m).items():
        if callable(f) and name.startswith("f") and getattr(f, "__module__", "") == m.__name__:
            arity = f.__code__.co_argcount
            for r in worker.rungs(arity):
                for _ in range(2):
                    try:
                        repr(f(*r))
                    except Exception as e:
                        type(e).__name__
                    n += 1
print(json.dumps({"calls": n, "cpu": time.process_time() - cpu0, "wall": time.perf_counter() - t0}))
