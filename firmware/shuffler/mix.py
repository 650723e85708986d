"""The shuffler's entropy from two sources, the MCU's and the secure
element's (issue 22; docs/shuffler.md "Two sources"). A module of its own,
loaded only by a board that has a secure element, so a board without one
carries none of its code in its heap."""

import hashlib

from shuffler import health as _health


class ChipSource:
    """The secure element's random number generator (ATECC608B Random
    command, 32 bytes a call; drivers/atecc608.py). An unlocked chip returns
    a fixed test pattern (FF FF 00 00 ...): its health test fails at once,
    which is the point of testing each source on its own (Mixed)."""

    def __init__(self, chip):
        self.chip = chip
        self._out = bytearray(32)

    def read(self, buf):
        i = 0
        while i < len(buf):
            self.chip.random(self._out)
            k = 0
            while k < 32 and i < len(buf):
                buf[i] = self._out[k]
                i += 1
                k += 1
        return buf


class Mixed:
    """Two entropy sources (the MCU's and the secure element's), each
    health-tested on its own (its own start-up test and its own latched
    RCT/APT: a stuck or unlocked chip tilts the shuffler even though the
    MCU's source is sound, and the other way round), then conditioned
    together with SHA-256 (a vetted conditioning function, SP 800-90B 3.1.5):
    each 32-byte output hashes 32 bytes of each. Whichever source is sound
    carries the claimed 4 bits per byte into the output, so a compromised
    or predictable one alone cannot steer the order."""

    def __init__(self, first, second):
        self.first = _health.Tested(first)
        self.second = _health.Tested(second)
        self.first.startup()
        self.second.startup()
        self._a = bytearray(32)
        self._b = bytearray(32)
        self._ctr = bytearray(4)

    def read(self, buf):
        i = 0
        while i < len(buf):
            self.first.read(self._a)
            self.second.read(self._b)
            c = self._ctr
            for k in (3, 2, 1, 0):   # a big-endian counter: no two blocks hash the same input
                c[k] = (c[k] + 1) & 0xFF
                if c[k]:
                    break
            h = hashlib.sha256(b"shuffler entropy mix v1\x00")
            h.update(c)
            h.update(self._a)
            h.update(self._b)
            d = h.digest()
            k = 0
            while k < 32 and i < len(buf):
                buf[i] = d[k]
                i += 1
                k += 1
        return buf
