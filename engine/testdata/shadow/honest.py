"""An honest sibling of a shadowing module: its answers are plain values."""


class Point:
    def __init__(self, x):
        self.x = x

    def __repr__(self):
        return "Point(%r)" % (self.x,)


def point(x):
    return Point(x)
