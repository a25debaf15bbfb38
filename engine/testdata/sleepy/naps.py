import time


def naps(x):
    """Sleeps a little on every call: never blocked past the idle limit,
    never past the call limit, only slow."""
    time.sleep(0.3)
    return repr(x)


def fine(x):
    return repr(x)
