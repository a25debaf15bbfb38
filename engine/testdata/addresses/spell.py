"""Addresses in the spellings real code uses, and a number that is not one."""
import random
import urllib.parse


class Template:
    def __init__(self):
        self.name = "memory:%x" % id(self)  # as jinja2 names a template from a string


def memory_name():
    return Template().name


def quoted_repr():
    return urllib.parse.quote(repr(object()))


def decimal_id():
    return "object %d" % id(object())


def token():
    # Twelve hex digits, above anything a process can map: a true finding.
    return "token %012x" % random.randrange(0x800000000000, 0x1000000000000)
