"""How the worker forks a process that runs scanned code (a probe child, a
package's zygote, a zygote's child): what the forker holds frozen for the
collector, the body's exception turned into an exit status, the standard
streams flushed, and never a return into the forker's code."""

import gc
import os
import sys

# A child whose body raised: the worker's own failure, not the call's.
BODY_RAISED = 98


def fork(body):  # nondet: ignore[pid, repeat] -- it returns the new child's pid
    """Forks a child that runs body() and exits (status 0, or BODY_RAISED
    when body raised); returns the child's pid. Everything the forker holds
    moves to the permanent generation first: the child's collector then
    never touches it, so the child copies only the pages it really writes."""
    gc.freeze()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        body()
    except BaseException:
        code = BODY_RAISED
    flush_streams()
    os._exit(code)


def flush_streams():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
