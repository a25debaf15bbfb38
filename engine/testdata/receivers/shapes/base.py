import abc
import datetime


class Version:
    """A version, built from its text.

    >>> Version.parse("1.2")
    """

    def __init__(self, major, minor, patch, label):
        if not isinstance(major, int) or major < 1:
            raise ValueError("a version starts at 1")
        self.major, self.minor, self.patch, self.label = major, minor, patch, label

    @classmethod
    def parse(cls, text: str) -> "Version":
        major, minor = text.split(".")
        return cls(int(major), int(minor), 0, "")

    def bumped(self):
        return "%d.%d" % (self.major, self.minor + 1)

    def tags(self):
        return list({"v%d" % self.major, "stable", "latest", "lts"})


class Shape(abc.ABC):
    """Abstract: only its subclass (in another module) is ever built."""

    @abc.abstractmethod
    def area(self):
        ...

    def describe(self):
        return "%s of area %s" % (type(self).__name__, self.area())


class Reader:
    """A mixin: its methods read what its subclass's constructor sets."""

    def first(self):
        return self.lines[0]

    def shuffled(self):
        return list(set(self.lines))


class Moment:
    """Built by a factory that reads the local zone: every method would
    answer what the factory read, not what the method does."""

    def __init__(self, when: datetime.datetime):
        if not isinstance(when, datetime.datetime):
            raise TypeError("a datetime, please")
        self.when = when

    @classmethod
    def from_epoch(cls, seconds):
        return cls(datetime.datetime.fromtimestamp(seconds))

    def hour_digits(self):
        return len(str(self.when.hour))


class Engine:
    def __init__(self, config: "Config"):
        self.speed = config.speed * 2

    def speed_of(self):
        return self.speed
