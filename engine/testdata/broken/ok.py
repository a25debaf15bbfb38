def good(x):
    return x


def _private(x):
    return x


def too_many(a, b, c, d):
    return a


def variadic(*args):
    return args


def kwonly(*, key):
    return key


async def coro():
    return 1
