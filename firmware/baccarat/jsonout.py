"""A JSON writer into one preallocated buffer.

The shoe sends an event for every card, so building dicts and calling a JSON
library per card would churn the heap of a microcontroller with ~150 KiB of
it. This writer copies constant byte strings and hand-formatted integers into
a fixed ``bytearray`` instead; the same bytes come out under CPython and
MicroPython because no library formatting is involved.
"""

_DIGITS = b"0123456789"


class JsonOut:
    def __init__(self, size):
        self.buf = bytearray(size)
        self.n = 0
        self.over = False

    def reset(self):
        self.n = 0
        self.over = False

    def raw(self, s):
        """Append constant bytes; an overflowing event is cut and flagged, never
        written past the buffer."""
        buf = self.buf
        n = self.n
        if n + len(s) > len(buf):
            self.over = True
            return
        for i in range(len(s)):
            buf[n + i] = s[i]
        self.n = n + len(s)

    def byte(self, b):
        if self.n >= len(self.buf):
            self.over = True
            return
        self.buf[self.n] = b
        self.n += 1

    def int(self, v):
        if v < 0:
            self.byte(0x2D)
            v = -v
        if v < 10:
            self.byte(_DIGITS[v])
            return
        # Digits are produced least significant first, then reversed in place.
        start = self.n
        while v:
            self.byte(_DIGITS[v % 10])
            v //= 10
        buf = self.buf
        end = self.n - 1
        while start < end:
            t = buf[start]
            buf[start] = buf[end]
            buf[end] = t
            start += 1
            end -= 1

    def bool(self, v):
        self.raw(b"true" if v else b"false")

    def text(self, s):
        """A JSON string from a str, or from UTF-8 bytes, which cost no
        allocation: the per-card path's texts (an unsigned checkpoint's
        reason) are bytes. A str is encoded first, one allocation on the
        irregular paths (error messages, tag IDs) and never a character at
        a time: MicroPython makes each character so read a qstr, and a new
        qstr pool is one block a heap cut into holes may not have with
        kilobytes free. The report of an out-of-memory error failed that
        way, and so did the report that needs no heap (firmware/main.py):
        the shoe said nothing."""
        b = s.encode() if isinstance(s, str) else s
        n = len(b)
        i = 0
        self.byte(0x22)
        while i < n:
            o = b[i]
            i += 1
            if o > 0x7F:
                # UTF-8: the lead byte's bits, then 6 from each continuation
                o &= 0x1F if o < 0xE0 else 0x0F
                while i < n and b[i] & 0xC0 == 0x80:
                    o = o << 6 | b[i] & 0x3F
                    i += 1
            if o == 0x22 or o == 0x5C:
                self.byte(0x5C)
                self.byte(o)
            elif o < 0x20 or o > 0x7E or o == 0x24:
                # Keep the stream pure ASCII so frames stay readable in a
                # terminal, and without '$', which starts a frame: the link
                # would send it as '?' under a tag made over '$'. Past the
                # BMP (no message of the firmware's own goes there): U+FFFD,
                # the replacement character, not a surrogate pair's bytecode.
                if o > 0xFFFF:
                    o = 0xFFFD
                self.raw(b"\\u")
                for shift in (12, 8, 4, 0):
                    self.byte(b"0123456789abcdef"[(o >> shift) & 15])
            else:
                self.byte(o)
        self.byte(0x22)
