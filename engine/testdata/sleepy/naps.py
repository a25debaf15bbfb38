import os
import time


def naps(x):
    """Sleeps a little on every call: never blocked past the idle limit,
    never past the call limit, only slow."""
    time.sleep(0.3)
    return repr(x)


def naps_in_locale(x):
    """As slow, and answers with the locale, which only the one reversed
    run of three varies."""
    time.sleep(0.3)
    return os.environ.get("LC_ALL"), repr(x)


def fine(x):
    return repr(x)
