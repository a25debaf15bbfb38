from .helpers import twice


def doubled(x):
    return twice(x)
