import time
if time.localtime(0).tm_year == 1969:
    raise RuntimeError("refuses west of UTC")


def value(x):
    return x
