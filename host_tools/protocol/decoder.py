"""The link's frame decoder at the pit PC's speed.

firmware/link/frame.Decoder is written for a microcontroller: one byte at a
time into a preallocated buffer, the CRC in two 16-bit halves. On CPython
that loop cost about 0.4 ms of a card's path per frame, the larger part of
the bridge's own share of card->durable, and a pit of 256 tables pays it for
every frame of every table. This decoder is that one, with the same state,
the same calls to its handler and the same messages, but it moves through a
chunk with bytes searches and checks the CRC with zlib (the same IEEE CRC-32).

Only a well-formed frame takes the fast way. Anything else (a bad CRC, a
malformed header) is handed to the firmware's own ``_finish``, which finds
the fault again and words it: the format and its error messages stay
defined once, in firmware/link/frame.py.
"""

import re
import zlib

from firmware.link import frame

_DOLLAR = b"$"
_NL = 0x0A
_CR = 0x0D
# Any byte that is not plain frame text: '$' and everything outside 0x20-0x7E.
_SPECIAL = re.compile(rb"[^\x20-\x23\x25-\x7e]")
# TYPE then SEQ (1-10 digits, no leading zero) then a space.
_HEADER = re.compile(rb"[A-Z](0|[1-9][0-9]{0,9}) ")
_LIMIT = frame.MAX_FRAME - 2


class Decoder(frame.Decoder):
    """frame.Decoder's contract (kind, seq, buf[pstart:pend] during
    ``on_frame``; ``on_bad(self, code, message)``), chunk at a time."""

    def feed(self, data, count, handler):
        data = bytes(data[:count]) if count != len(data) or not isinstance(data, bytes) else data
        buf = self.buf
        i = 0
        while i < count:
            if not self.in_frame:
                j = data.find(_DOLLAR, i)
                if j < 0:
                    self.skipped += count - i
                    return
                self.skipped += j - i
                self.in_frame = True
                self.n = 0
                i = j + 1
                continue
            m = _SPECIAL.search(data, i)
            j = count if m is None else m.start()
            if j > i:
                room = _LIMIT - self.n
                if j - i > room:
                    # frame.Decoder stores bytes until n reaches the limit,
                    # and the byte after that ends the frame as too long.
                    buf[self.n:_LIMIT] = data[i:i + room]
                    self.n = _LIMIT
                    i += room
                    self.in_frame = False
                    handler.on_bad(self, frame.BAD_FRAME, "frame too long: no end within %d bytes"
                                   % frame.MAX_FRAME)
                    i += 1
                    continue
                buf[self.n:self.n + j - i] = data[i:j]
                self.n += j - i
                i = j
                if m is None:
                    return
            b = data[i]
            i += 1
            if b == 0x24:  # '$' inside a frame: the base class words it
                super().feed(b"$", 1, handler)
            elif b == _NL:
                self.in_frame = False
                self._finish(handler)
            elif b == _CR:
                pass
            else:
                self.in_frame = False
                handler.on_bad(self, frame.BAD_FRAME, "bad byte 0x%02x at offset %d" % (b, self.n + 1))

    def _finish(self, handler):
        buf = self.buf
        n = self.n
        star = n - 9
        if star >= 3 and buf[star] == 0x2A:
            m = _HEADER.match(buf, 0, star)
            if m is not None and b"%08x" % zlib.crc32(buf[:star]) == buf[star + 1:n]:
                self.kind = buf[0]
                self.seq = int(m.group(1))
                self.pstart = m.end()
                self.pend = star
                handler.on_frame(self)
                return
        super()._finish(handler)
