"""main(argv): reads the request and runs one mode. The package's
__main__.py runs it once everything is imported; importing this module
imports every other module of the package (tests/test_main.py checks)."""

import json
import os
import sys

from . import discover, posture, probe, seccomp
from .channel import REQUEST_FD
from .forking import flush_streams


def main(argv):
    if len(argv) != 2 or argv[1] not in ("discover", "probe", "posture"):
        sys.stderr.write("usage: python WORKER_FOLDER discover|probe|posture 4<REQUEST.json\n")
        return 2
    mode = argv[1]
    # On the host the worker's bytecode is cached where probes cannot
    # write; what scanned code imports is read beside its source (the
    # scanned modules' own from the scan's code folder), never written
    # (engine/job.go).
    if "NONDET_PYCACHE_PREFIX" in os.environ:
        sys.pycache_prefix = os.environ.pop("NONDET_PYCACHE_PREFIX") or None
    # The request comes on fd 4, which no path leads to; closed before
    # anything scanned runs.
    with open(REQUEST_FD, encoding="utf-8", closefd=True) as fh:
        req = json.load(fh)
    if req.get("check_network"):
        # The platform's sandbox, not ours: fail closed where anything
        # could be reached (the exit status is the request's, which the
        # runtime reads: sandbox.NetworkExit), and refuse io_uring as
        # every other runtime does.
        if posture.reachable():
            os._exit(int(req["check_network"]))
        seccomp.deny_io_uring()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    # Scanned code sees the command line of an interpreter given no
    # script, as Python documents it: a main() that parses sys.argv must
    # not be handed the worker's own mode as its first argument.
    sys.argv[:] = [""]
    if mode == "discover":
        discover.discover(req)
    elif mode == "posture":
        posture.posture(req)
    else:
        probe.probe(req)
    flush_streams()
    # Leave at once: a non-daemon thread the scanned code left running would
    # otherwise hold the interpreter open at shutdown.
    os._exit(0)
