"""Whether a string carries an address of the process that made it.

An address means nothing from one process to the next, however it is
spelled: `0x7f3a…` in a repr, `memory:7f3a…` (a template's name built from
`id(self)`), `%20at%200x7f…` (a percent-encoded repr), `140234…` (an `id()`
in decimal). So a number is judged by its value, not its spelling: one
that falls inside one of this process's own memory mappings is an
address. A random number almost never does (the mapped space is a few
hundred MiB of the 128 TiB a process may map), and a real address always
does, in the process whose answer it is: canonical answers are made there.
"""

import bisect
import re

# The numbers worth a look: hex with 0x (6 to 12 digits: user space ends
# below 2**47), bare hex of 8 to 12 digits, decimal of 9 to 15, each not
# part of a longer word (a digest, an identifier). Shorter ones are small
# numbers; a 7-digit bare hex is a short commit id. A bare number after
# "-" or "_" ends a made-up name (a temporary folder's: mkdtemp's
# nondet-sandbox-1a2b3c4d-2718281828), never an address's spelling: on an
# interpreter built without PIE, whose heap lies low, such a name's number
# fell in a mapping now and then.
_NUMBER = re.compile(
    r"0[xX]([0-9a-fA-F]{6,12})(?![0-9a-zA-Z])"
    r"|(?<![0-9a-zA-Z_-])([0-9a-fA-F]{8,12})(?![0-9a-zA-Z])"
    r"|(?<![0-9a-zA-Z._-])([0-9]{9,15})(?![0-9a-zA-Z])")
_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")

# This process's mappings as sorted (starts, ends), read when first needed
# and again, once per answer (new_answer), when a number is in none of
# them: the heap may have grown since. A forked child starts from its
# parent's, which were its own when it was forked.
_maps = None
_stale = True


def new_answer():
    """A new answer is being made: mappings read before may be out of date."""
    global _stale
    _stale = True


def _read_maps():
    starts, ends = [], []
    try:
        with open("/proc/self/maps", "rb") as f:
            for line in f:
                lo, _, hi = line.partition(b" ")[0].partition(b"-")
                starts.append(int(lo, 16))
                ends.append(int(hi, 16))
    except (OSError, ValueError):
        return None
    return starts, ends


def _mapped(n, maps):
    starts, ends = maps
    i = bisect.bisect_right(starts, n) - 1
    return i >= 0 and n < ends[i]


def is_address(n):
    """Whether n lies in one of this process's memory mappings."""
    global _maps, _stale
    if _maps is None:
        _maps, _stale = _read_maps(), False
        if _maps is None:  # no /proc: only the spellings the mask knew
            return False
    if _mapped(n, _maps):
        return True
    if not _stale:
        return False
    fresh, _stale = _read_maps(), False
    if fresh is None:
        return False
    _maps = fresh
    return _mapped(n, fresh)


def has_address(s):
    """Whether the string s holds a number that is an address here."""
    if "%" in s:
        s = _PERCENT.sub(" ", s)
    for m in _NUMBER.finditer(s):
        hexa, bare, dec = m.groups()
        if hexa is not None:
            n = int(hexa, 16)
        elif bare is not None:
            n = int(bare, 16)
            # A bare run of digits is decimal as well as hex: either may
            # be the address.
            if bare.isdigit() and is_address(int(bare)):
                return True
        else:
            n = int(dec)
        if is_address(n):
            return True
    return False
