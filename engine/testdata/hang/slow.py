import time


def waits(x):
    """Sleeps past any call limit, whatever it is given."""
    time.sleep(3600)


def waits_on_big(n):
    """Hangs on the large integers only; answers every other rung."""
    if type(n) is int and n > 1000:
        time.sleep(3600)
    return repr(n)


def fine(x):
    return repr(x)
