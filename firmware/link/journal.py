"""The power-loss journal: the shoe's inputs, appended and flushed before any
event they cause is sent.

The core is deterministic, so the inputs (and the link's own events, which
are not functions of the inputs) are the whole critical state: replaying
them into a fresh Game rebuilds the round, the held cards, the sequence
counter and every unacknowledged event byte for byte. Records are tiny
(a card is 7 bytes), so a flash write per card is cheap on littlefs.

Record: LEN (2, big-endian) KIND (1) HCHK (1) BODY (LEN) CRC-16/CCITT-FALSE
(2) over KIND+BODY, after an 8-byte file header. HCHK = LEN_hi ^ LEN_lo ^
KIND ^ 0x5A guards the length on its own: without it a flipped length bit in
the last record would read as a record running past the end of the file, and
corruption would pass for a torn write. A power cut can only cut the last
record short ("torn": expected, dropped); a complete record that does not
check, an unknown kind or a bad header cannot come from a power cut, so it is
corruption and the shoe tilts (docs/protocol.md 8).
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

import os
from array import array

HEADER = b"SJRNL1\r\n"
MAX_BODY = const(1024)

# Record kinds (docs/protocol.md 8).
NEW_SHOE = const(0x4E)  # N
CARD = const(0x43)      # C
BETS = const(0x62)      # b
EXPOSED = const(0x78)   # x
COVER = const(0x6B)     # k
EMPTY = const(0x79)     # y
QUIET_SHOE = const(0x6E)  # n: a new shoe whose events precede it as literals
EVENT = const(0x45)     # E
ACK = const(0x41)       # A
COUNTER = const(0x4D)   # M
BASE = const(0x53)      # S
KINDS = b"NCbxkyEAMSn"

# scan() outcomes.
OK = const(0)
TORN = const(1)
CORRUPT = const(2)


def _crc_table():
    t = array("H", bytes(512))
    for n in range(256):
        c = n << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
            c &= 0xFFFF
        t[n] = c
    return t


_CRC = _crc_table()


def crc16(data, start, end, c=0xFFFF):
    t = _CRC
    for i in range(start, end):
        c = ((c << 8) & 0xFFFF) ^ t[(c >> 8) ^ data[i]]
    return c


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def put_u32(buf, at, v):
    buf[at] = (v >> 24) & 0xFF
    buf[at + 1] = (v >> 16) & 0xFF
    buf[at + 2] = (v >> 8) & 0xFF
    buf[at + 3] = v & 0xFF


def get_u32(buf, at):
    return (buf[at] << 24) | (buf[at + 1] << 16) | (buf[at + 2] << 8) | buf[at + 3]


HEAD = const(4)      # LEN LEN KIND HCHK
OVERHEAD = const(6)  # HEAD + CRC


def _hchk(hi, lo, kind):
    return hi ^ lo ^ kind ^ 0x5A


def seal(rec, blen):
    """Fill LEN, HCHK and CRC of a record whose KIND (rec[2]) and BODY
    (from rec[4]) are already in place; return the record's total length."""
    rec[0] = blen >> 8
    rec[1] = blen & 0xFF
    rec[3] = _hchk(rec[0], rec[1], rec[2])
    # The CRC covers KIND and BODY; HCHK sits between them and is skipped.
    c = crc16(rec, 2, 3)
    c = crc16(rec, 4, 4 + blen, c)
    rec[4 + blen] = c >> 8
    rec[5 + blen] = c & 0xFF
    return blen + OVERHEAD


class Journal:
    def __init__(self, path):
        self.path = path
        self.tilt_path = path + ".tilt"
        self.f = None
        self.broken = None
        # Fixed records for the per-card path, so appending allocates nothing.
        self._card = bytearray(4 + OVERHEAD)
        self._card[2] = CARD
        self._short = bytearray(OVERHEAD)
        self._u32 = bytearray(4 + OVERHEAD)
        self._big = bytearray(MAX_BODY + OVERHEAD)

    # ------------------------------------------------------------ tilt marker

    def tilt_reason(self):
        """The persisted tilt reason, or None. Checked first at every boot."""
        if not _exists(self.tilt_path):
            return None
        with open(self.tilt_path, "rb") as f:
            text = f.read(200)
        return text.decode() if text else "tilt (no reason recorded)"

    def set_tilt(self, reason):
        with open(self.tilt_path, "wb") as f:
            f.write(reason.encode())
            f.flush()

    def clear_tilt(self):
        """Keep the corrupt journal for the technician, then lift the tilt."""
        self.close()
        if _exists(self.path):
            _remove(self.path + ".bad")
            os.rename(self.path, self.path + ".bad")
        _remove(self.tilt_path)

    # ------------------------------------------------------------------ read

    def scan(self, handler):
        """Feed every sound record to ``handler.record(kind, body, blen)``.

        Returns (OK | TORN | CORRUPT, message, good_bytes): the length of the
        sound prefix lets ``open`` drop a torn tail.
        """
        if not _exists(self.path):
            return OK, None, 0
        with open(self.path, "rb") as f:
            head = f.read(len(HEADER))
            if len(head) < len(HEADER):
                if HEADER[:len(head)] == head:
                    return TORN, "journal header cut short", 0
                return CORRUPT, "journal header is not " + repr(HEADER), 0
            if head != HEADER:
                return CORRUPT, "journal header is not " + repr(HEADER), 0
            good = len(HEADER)
            index = 0
            rec = self._big
            while True:
                h = f.read(HEAD)
                if not h:
                    return OK, None, good
                where = "record %d at byte %d" % (index, good)
                if len(h) >= 3 and KINDS.find(bytes((h[2],))) < 0:
                    return CORRUPT, where + ": unknown kind 0x%02x" % h[2], good
                if len(h) < HEAD:
                    return TORN, where + " cut short", good
                blen = (h[0] << 8) | h[1]
                if h[3] != _hchk(h[0], h[1], h[2]):
                    return CORRUPT, where + ": header check byte does not match", good
                if blen > MAX_BODY:
                    return CORRUPT, where + ": length %d exceeds %d" % (blen, MAX_BODY), good
                rest = f.read(blen + 2)
                if len(rest) < blen + 2:
                    return TORN, where + " cut short", good
                for i in range(HEAD):
                    rec[i] = h[i]
                for i in range(blen + 2):
                    rec[HEAD + i] = rest[i]
                want = (rec[HEAD + blen] << 8) | rec[HEAD + 1 + blen]
                got = crc16(rec, 4, 4 + blen, crc16(rec, 2, 3))
                if want != got:
                    return CORRUPT, where + ": crc %04x, computed %04x" % (want, got), good
                handler.record(h[2], memoryview(rec)[HEAD:HEAD + blen], blen)
                good += blen + OVERHEAD
                index += 1

    # ----------------------------------------------------------------- write

    def open(self, good_bytes):
        """Open for appending, first cutting off a torn tail (copy + atomic rename,
        since MicroPython files cannot be truncated)."""
        self.close()
        size = os.stat(self.path)[6] if _exists(self.path) else -1
        if size != good_bytes:
            tmp = self.path + ".tmp"
            with open(tmp, "wb") as out:
                if good_bytes < len(HEADER):
                    out.write(HEADER)
                else:
                    with open(self.path, "rb") as src:
                        left = good_bytes
                        while left > 0:
                            chunk = src.read(min(left, 512))
                            if not chunk:
                                break
                            out.write(chunk)
                            left -= len(chunk)
                out.flush()
            os.rename(tmp, self.path)
        self.f = open(self.path, "ab")

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None

    def _write(self, rec):
        if self.f is None:
            return  # broken: the session has tilted
        try:
            self.f.write(rec)
            # On MicroPython flush() syncs the file (fsync on unix, a littlefs
            # commit on the boards); the event is sent only after this returns.
            self.f.flush()
        except OSError as e:
            # Flash full or failing. The input is already in hand, so play in
            # memory is still right, but it is no longer durable: the session
            # tilts on this at its next step, loudly rather than by crashing.
            self.broken = "journal write failed (%s)" % e
            self.close()

    def card(self, c, up, ident=-1):
        """``ident``: the card-set record of the physical card, or -1 when
        the card came without one (a dealing script)."""
        rec = self._card
        rec[4] = c
        rec[5] = 1 if up else 0
        ident += 1
        rec[6] = ident >> 8
        rec[7] = ident & 0xFF
        seal(rec, 4)
        self._write(rec)

    def simple(self, kind):
        rec = self._short
        rec[2] = kind
        seal(rec, 0)
        self._write(rec)

    def number(self, kind, value):
        rec = self._u32
        rec[2] = kind
        put_u32(rec, 4, value)
        seal(rec, 4)
        self._write(rec)

    def blob(self, kind, data, start, end):
        """A record with a variable body (event JSON, settings, alert): rare paths."""
        rec = self._big
        rec[2] = kind
        n = end - start
        if n > MAX_BODY:
            raise ValueError("journal record of %d bytes exceeds %d" % (n, MAX_BODY))
        for i in range(n):
            rec[HEAD + i] = data[start + i]
        total = seal(rec, n)
        self._write(memoryview(rec)[:total])

    def compact(self, seq, acked, counter, events, shoe_body=None):
        """Start a fresh journal: a base record, the still-unacked events
        ``events`` (a list of (buf, start, end)), then the new shoe (as a quiet
        record: its events are among the literals). Written to a
        temp file and renamed over the old one, so a power cut leaves one or
        the other whole."""
        self.close()
        tmp = self.path + ".tmp"
        rec = self._big
        with open(tmp, "wb") as f:
            f.write(HEADER)
            rec[2] = BASE
            put_u32(rec, HEAD, seq)
            put_u32(rec, HEAD + 4, acked)
            put_u32(rec, HEAD + 8, counter)
            f.write(memoryview(rec)[:seal(rec, 12)])
            for buf, start, end in events:
                rec[2] = EVENT
                for i in range(end - start):
                    rec[HEAD + i] = buf[start + i]
                f.write(memoryview(rec)[:seal(rec, end - start)])
            if shoe_body is not None:
                rec[2] = QUIET_SHOE
                for i in range(len(shoe_body)):
                    rec[HEAD + i] = shoe_body[i]
                f.write(memoryview(rec)[:seal(rec, len(shoe_body))])
            f.flush()
        os.rename(tmp, self.path)
        self.f = open(self.path, "ab")
