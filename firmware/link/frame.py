"""Terminal-readable link frames: ``$`` TYPE SEQ space PAYLOAD ``*`` CRC ``\\n``.

One ASCII line per frame so a technician can watch the link in any terminal,
with a CRC-32 so a flipped bit is caught, and a start byte that never occurs
inside a frame so the receiver is back in step at the next ``$`` after any
garbage. The decoder works in one preallocated buffer and never grows: the
shoe must survive a babbling line without running out of heap.

The CRC is the IEEE 802.3 CRC-32 (as zlib's) computed in two 16-bit halves:
a 32-bit value does not fit MicroPython's small ints on a 32-bit MCU, and a
big int per byte would allocate in the per-card path.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from array import array

MAX_FRAME = const(1024)  # from '$' to '\n' inclusive
MAX_PAYLOAD = const(980)
_DOLLAR = const(0x24)
_STAR = const(0x2A)
_SPACE = const(0x20)
_NL = const(0x0A)
CR = const(0x0D)
_QMARK = const(0x3F)

# What a decoder reports besides a good frame.
BAD_CRC = const(1)
BAD_FRAME = const(2)

HEX = b"0123456789abcdef"
_DIGITS = b"0123456789"


def _tables():
    hi_t = array("H", bytes(512))
    lo_t = array("H", bytes(512))
    for n in range(256):
        hi = 0
        lo = n
        for _ in range(8):
            bit = lo & 1
            lo = (lo >> 1) | ((hi & 1) << 15)
            hi >>= 1
            if bit:
                hi ^= 0xEDB8
                lo ^= 0x8320
        hi_t[n] = hi
        lo_t[n] = lo
    return hi_t, lo_t


_CRC_HI, _CRC_LO = _tables()


def crc32_into(data, start, end, out, at):
    """Write the CRC-32 of ``data[start:end]`` as 8 lower-case hex digits at ``out[at]``."""
    hi = 0xFFFF
    lo = 0xFFFF
    th = _CRC_HI
    tl = _CRC_LO
    for i in range(start, end):
        k = (lo ^ data[i]) & 0xFF
        lo = ((lo >> 8) | ((hi & 0xFF) << 8)) ^ tl[k]
        hi = (hi >> 8) ^ th[k]
    hi ^= 0xFFFF
    lo ^= 0xFFFF
    out[at] = HEX[hi >> 12]
    out[at + 1] = HEX[(hi >> 8) & 15]
    out[at + 2] = HEX[(hi >> 4) & 15]
    out[at + 3] = HEX[hi & 15]
    out[at + 4] = HEX[lo >> 12]
    out[at + 5] = HEX[(lo >> 8) & 15]
    out[at + 6] = HEX[(lo >> 4) & 15]
    out[at + 7] = HEX[lo & 15]


def put_decimal(out, at, value):
    """Write ``value`` (>= 0) in decimal at ``out[at]``; return the index after
    it. By hand, most significant digit first, so no temporary string is made."""
    div = 1
    while div * 10 <= value:
        div *= 10
    while div:
        out[at] = _DIGITS[(value // div) % 10]
        at += 1
        div //= 10
    return at


def encode(out, kind, seq, payload, start, end, tail=None, tstart=0, tend=0):
    """Write one frame into bytearray ``out``; return its length.

    ``kind`` is the TYPE byte (e.g. ``ord("E")``), ``payload[start:end]`` the
    payload, and ``tail[tstart:tend]``, when given, is appended after a space
    (the shoe's tag: it lives in its own buffer, so nothing is copied
    together first). Bytes a frame may not carry become ``?``
    (docs/protocol.md 1); a payload longer than MAX_PAYLOAD raises
    ValueError, because cutting an event would corrupt the record.
    """
    extra = tend - tstart + 1 if tail is not None else 0
    if end - start + extra > MAX_PAYLOAD:
        raise ValueError("payload of %d bytes exceeds %d" % (end - start + extra, MAX_PAYLOAD))
    if seq < 0:
        raise ValueError("negative seq")
    out[0] = _DOLLAR
    out[1] = kind
    n = put_decimal(out, 2, seq)
    out[n] = _SPACE
    n += 1
    for i in range(start, end):
        b = payload[i]
        if b < 0x20 or b > 0x7E or b == _DOLLAR:
            b = _QMARK
        out[n] = b
        n += 1
    if tail is not None:
        out[n] = _SPACE
        n += 1
        for i in range(tstart, tend):
            out[n] = tail[i]
            n += 1
    out[n] = _STAR
    crc32_into(out, 1, n, out, n + 1)
    out[n + 9] = _NL
    return n + 10


class Decoder:
    """Byte stream in, checked frames out, resynchronising at every ``$``.

    After ``on_frame(self)`` the frame's TYPE is ``kind`` (an int), its SEQ
    ``seq`` and its payload ``buf[pstart:pend]``; the handler must copy what
    it keeps. ``on_bad(self, code, message)`` gets BAD_CRC or BAD_FRAME with a
    message that says exactly what was wrong.
    """

    def __init__(self):
        self.buf = bytearray(MAX_FRAME)  # the bytes after '$', up to '\n'
        self.check = bytearray(8)
        self.n = 0
        self.in_frame = False
        self.skipped = 0  # stray bytes between frames, for diagnostics
        self.kind = 0
        self.seq = 0
        self.pstart = 0
        self.pend = 0

    def feed(self, data, count, handler):
        buf = self.buf
        for i in range(count):
            b = data[i]
            if b == _DOLLAR:
                if self.in_frame:
                    # No '$' in the message: the shoe reports it in an event, and a
                    # frame cannot carry '$' (it would go out as '?', under a tag
                    # made over '$', and never verify).
                    handler.on_bad(self, BAD_FRAME, "truncated frame: a new start byte after %d bytes"
                                   % self.n)
                self.in_frame = True
                self.n = 0
            elif not self.in_frame:
                self.skipped += 1
            elif b == _NL:
                self.in_frame = False
                self._finish(handler)
            elif b == CR:
                pass
            elif b < 0x20 or b > 0x7E:
                self.in_frame = False
                handler.on_bad(self, BAD_FRAME, "bad byte 0x%02x at offset %d" % (b, self.n + 1))
            elif self.n >= MAX_FRAME - 2:
                self.in_frame = False
                handler.on_bad(self, BAD_FRAME, "frame too long: no end within %d bytes" % MAX_FRAME)
            else:
                buf[self.n] = b
                self.n += 1

    def _finish(self, handler):
        buf = self.buf
        n = self.n
        star = n - 9
        if star < 3 or buf[star] != _STAR:
            handler.on_bad(self, BAD_FRAME, "malformed frame: no '*' and 8-digit crc at the end")
            return
        for i in range(star + 1, n):
            b = buf[i]
            if not (0x30 <= b <= 0x39 or 0x61 <= b <= 0x66):
                handler.on_bad(self, BAD_FRAME, "malformed frame: crc %r is not 8 lower-case hex digits"
                               % bytes(buf[star + 1:n]).decode())
                return
        crc32_into(buf, 0, star, self.check, 0)
        check = self.check
        for i in range(8):
            if check[i] != buf[star + 1 + i]:
                handler.on_bad(self, BAD_CRC, "bad crc: frame says %s, computed %s"
                               % (bytes(buf[star + 1:n]).decode(), bytes(check).decode()))
                return
        kind = buf[0]
        if kind < 0x41 or kind > 0x5A:
            handler.on_bad(self, BAD_FRAME, "malformed frame: type byte 0x%02x is not A-Z" % kind)
            return
        seq = 0
        i = 1
        while i < star and 0x30 <= buf[i] <= 0x39 and i <= 11:
            seq = seq * 10 + buf[i] - 0x30
            i += 1
        if i == 1 or i > 11 or buf[i] != _SPACE or (buf[1] == 0x30 and i > 2):
            handler.on_bad(self, BAD_FRAME, "malformed frame: seq must be 1-10 digits then a space")
            return
        self.kind = kind
        self.seq = seq
        self.pstart = i + 1
        self.pend = star
        handler.on_frame(self)
