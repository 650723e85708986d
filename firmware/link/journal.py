"""The power-loss journal: the shoe's inputs, appended and flushed before any
event they cause is sent.

The core is deterministic, so the inputs (and the link's own events, which
are not functions of the inputs) are the whole critical state: replaying
them into a fresh Game rebuilds the round, the held cards, the sequence
counter and every unacknowledged event byte for byte. Records are tiny
(a card is 10 bytes), but on littlefs each synced append costs an erased
block (the file's partial last block is copied into it), so only inputs
are synced one by one; acks ride on the next one (``ack``; docs/protocol.md
8, "What the journal costs the flash", and `shoe bench journal`). The
boards keep the same stream on a ring of raw flash sectors instead
(link/ring.py ``RingJournal``: a page program per input, no erase on its
path); the file access here goes through ``_file`` and ``_done`` for that.

Record: LEN (2, big-endian) KIND (1) HCHK (1) BODY (LEN) CRC-16/CCITT-FALSE
(2) over KIND+BODY, after an 8-byte file header. HCHK = LEN_hi ^ LEN_lo ^
KIND ^ 0x5A guards the length on its own: without it a flipped length bit in
the last record would read as a record running past the end of the file, and
corruption would pass for a torn write. A power cut can only cut the last
record short ("torn": expected, dropped); a complete record that does not
check, an unknown kind or a bad header cannot come from a power cut, so it is
corruption and the shoe tilts (docs/protocol.md 8).

A journal that is deleted, emptied, cut back at a record boundary or swapped
for an older copy is still a sound journal, so it cannot be caught from the
inside. A second small file, the *marker*, records the journal's generation
(a GEN record opens every journal; each compaction writes the next one) and
the length it has reached; it is rewritten in place after every append. At
boot a journal shorter than its marker, of an older generation, or missing
while its marker is there has lost records: the shoe tilts instead of
resuming from an earlier state (docs/protocol.md 8). The marker also keeps
the last accepted command counter, so a counter is spent durably even while
the shoe is tilted and its journal is not written.

Both halves of the codec live here: the writers below and the ``*_fields``
readers that recovery uses, so a record's layout is stated once.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

import hashlib
import os
from array import array

HEADER = b"SJRNL2\r\n"
MARK_MAGIC = b"JM"
MARK_BYTES = const(16)  # magic, gen, length, counter (u32 each but magic), crc16
_TAG_HEX = const(32)
_MAX_BODY = const(1024)

# Record kinds (docs/protocol.md 8).
NEW_SHOE = const(0x4E)  # N
CARD = const(0x43)      # C
BETS = const(0x62)      # b
EXPOSED = const(0x78)   # x
COVER = const(0x6B)     # k
EMPTY = const(0x79)     # y
CLEAR_STOP = const(0x72)  # r: a supervisor's clear_stop (baccarat/game.py)
QUIET_SHOE = const(0x6E)  # n: a new shoe whose events precede it as literals
ORDER_STOP = const(0x6F)  # o: a card that is not the committed order's (cardset/ordercheck.py)
EVENT = const(0x45)     # E
ACK = const(0x41)       # A
COUNTER = const(0x4D)   # M
BASE = const(0x53)      # S
_GEN = const(0x47)       # G: the journal's generation, its first record
CHECKPOINT = const(0x4B)  # K: a checkpoint event (docs/protocol.md 6)
SIGNED = const(0x51)      # Q: a signed checkpoint event, kept literally (its signature is not replayable)
CHIP = const(0x55)        # U: the secure element's signature counter is at this value
INTENT = const(0x49)      # I: the counter is at this value and about to be incremented
KINDS = b"NCbxkyrEAMSnGKQUIouiqR"
# Sealed records (docs/protocol.md 8): what the boot check trusts (the chip
# counter's U and I, the checkpoint's Q, a supervisor's clear_stop r) is
# written by a shoe whose chip derives the journal key under the kind with
# its letter case flipped (u, i, q, R) and a trailing _SEAL-byte seal;
# readers only ever see the plain kind. Every reason a seal fails contains
# SEAL (the pit raises counter_mismatch on it).
_SEAL = const(16)
_CASE = const(0x20)
SEAL = "not sealed by this shoe's chip (edited, or from another journal)"

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


def exists(path):
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


def card_fields(body, blen):
    """(card, up, card-set record or -1) of a CARD record."""
    ident = ((body[2] << 8) | body[3]) - 1 if blen >= 4 else -1
    return body[0], body[1] != 0, ident


def shoe_body(decks, designation, exposed, batch, settings):
    """The body of a NEW_SHOE record: four codes, then the settings text."""
    return bytes((decks, designation, exposed, batch)) + settings.encode()


def shoe_fields(body, blen):
    """(decks, designation, exposed, batch, settings text) of a NEW_SHOE record."""
    return body[0], body[1], body[2], body[3], bytes(body[4:blen]).decode()


def base_fields(body):
    """(seq, acked, counter) of a BASE record; the acked event's tag follows
    at byte 12 (``tag_at``)."""
    return get_u32(body, 0), get_u32(body, 4), get_u32(body, 8)


_HEAD = const(4)      # LEN LEN KIND HCHK
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


def _decode(raw):
    """Text from a file the shoe wrote, even if the flash mangled it: a tilt
    reason must never stop the boot that reports it."""
    try:
        return raw.decode()
    except UnicodeError:
        return "".join(chr(b) if 0x20 <= b < 0x7F else "?" for b in raw)


def _where(index, at):
    return "record %d at byte %d" % (index, at)


class Journal:
    # The secure element's signature counter as the journal last recorded
    # it (-1: never), and whether an increment was under way then
    # (link/chipcount.py checks the chip against these at boot). On the
    # class: a device without the chip never grows its instance by them.
    chip = -1
    intent = False

    def __init__(self, path):
        self.path = path
        self.tilt_path = path + ".tilt"
        self.mark_path = path + ".mark"
        self.f = None
        self.mf = None
        self.broken = None
        self.gen = 0        # generation of the journal in use
        self.size = 0       # its length, as the marker records it
        self.counter = 0    # the last command counter, as the marker records it
        self.found_gen = 0  # what scan() read from the GEN record
        # Fixed records for the per-card path, so appending allocates nothing.
        self._card = bytearray(4 + OVERHEAD)
        self._card[2] = CARD
        self._short = bytearray(OVERHEAD)
        self._u32 = bytearray(4 + OVERHEAD)
        self._ack = bytearray(4 + _TAG_HEX + OVERHEAD)
        self._ack[2] = ACK
        self._mark = bytearray(MARK_BYTES)
        self._big = bytearray(_MAX_BODY + OVERHEAD)

    # ------------------------------------------------------------------ seal
    # A journal on a shoe whose chip derives the journal key (link/chipcount.py
    # ``key`` sets the key's HMAC pads) seals what the boot check trusts. A
    # seal is the first _SEAL bytes of HMAC-SHA256(journal key, D || KIND ||
    # BODY), D the running digest of every byte of the file before the
    # record: SHA-256 from the file's first byte, restarted after each seal
    # as SHA-256(D || the bytes since). So a seal holds only at its place in
    # the very journal that was written: not in an earlier copy, not spliced
    # into another, not after an edit of any byte before it. On the class: a
    # device without the key never grows its instance by them.
    ipad = None   # the key's HMAC pads; None: an unsealed journal
    opad = None
    hash = None   # the running digest of the file written so far

    def sign(self, d, rec, blen):
        """The seal (32 bytes, the first _SEAL kept) of the record in ``rec``
        (KIND at 2, BODY of ``blen`` at 4) after a journal whose digest is ``d``."""
        h = hashlib.sha256(self.ipad)
        h.update(d)
        v = memoryview(rec)
        h.update(v[2:3])
        h.update(v[_HEAD:_HEAD + blen])
        o = hashlib.sha256(self.opad)
        o.update(h.digest())
        return o.digest()

    def seal(self, rec, kind, blen):
        """Frame the record of ``kind`` whose BODY (``blen``) is in ``rec``,
        sealed when the journal has a key; its total length. The caller
        writes it next: the digest then takes it in."""
        rec[2] = kind
        if self.ipad is None:
            return seal(rec, blen)
        rec[2] = kind ^ _CASE
        d = self.hash.digest()
        t = self.sign(d, rec, blen)
        for i in range(_SEAL):
            rec[_HEAD + blen + i] = t[i]
        self.hash = hashlib.sha256(d)
        return seal(rec, blen + _SEAL)

    def put(self, f, buf):
        """Write ``buf`` to a file being made (open, compact), into the digest too."""
        f.write(buf)
        if self.hash is not None:
            self.hash.update(buf)
        return len(buf)

    # ------------------------------------------------------------ tilt marker

    def tilt_reason(self):
        """The persisted tilt reason, or None. Checked first at every boot."""
        if not exists(self.tilt_path):
            return None
        with open(self.tilt_path, "rb") as f:
            text = f.read(200)
        return _decode(text) if text else "tilt (no reason recorded)"

    def set_tilt(self, reason):
        with open(self.tilt_path, "wb") as f:
            f.write(reason.encode())
            f.flush()

    def clear_tilt(self):
        """Keep the journal for the technician, then lift the tilt."""
        self.close()
        if self.exists():
            _remove(self.path + ".bad")
            os.rename(self.path, self.path + ".bad")
        _remove(self.tilt_path)

    # ------------------------------------------------------- loss marker

    def _write_mark(self):
        m = self._mark
        m[0] = 0x4A  # J
        m[1] = 0x4D  # M
        put_u32(m, 2, self.gen)
        put_u32(m, 6, self.size)
        put_u32(m, 10, self.counter)
        c = crc16(m, 0, MARK_BYTES - 2)
        m[MARK_BYTES - 2] = c >> 8
        m[MARK_BYTES - 1] = c & 0xFF
        if self.mf is None:
            # "r+b" rewrites in place: "wb" would empty the marker first, and
            # a power cut right then would read as a damaged marker.
            self.mf = open(self.mark_path, "r+b" if exists(self.mark_path) else "wb")
        self.mf.seek(0)
        self.mf.write(m)
        self.mf.flush()

    def spend_counter(self, counter):
        """Record an accepted command counter in the marker only: the path a
        tilted shoe takes, whose journal is not written."""
        self.counter = counter
        try:
            self._write_mark()
        except OSError:
            pass  # failing flash: the tilt already holds

    # ------------------------------------------------------------------ read

    def scan(self, handler, boot=False):
        """Feed every sound record to ``handler.record(kind, body, blen)``,
        a sealed one as its plain kind without its seal.

        Returns (OK | TORN | CORRUPT, message, good_bytes): the length of the
        sound prefix lets ``open`` drop a torn tail. ``boot``: check every
        seal (a journal with a key must have every trusted record sealed),
        leaving the running digest where the sound prefix ends, for
        ``open``. A refill (not ``boot``) trusts what the boot checked and
        leaves the writer's digest alone.
        """
        self.found_gen = 0
        if self.f is not None:
            self.f.flush()   # a refill reads what the journal holds, unsynced acks too
        check = boot and self.ipad is not None
        if check:
            self.hash = None
        if not self.exists():
            return OK, None, 0
        with self._file("rb") as f:
            head = f.read(len(HEADER))
            if len(head) < len(HEADER):
                if HEADER[:len(head)] == head:
                    return TORN, "journal header cut short", 0
                return CORRUPT, "journal header is not " + repr(HEADER), 0
            if head != HEADER:
                return CORRUPT, "journal header is not " + repr(HEADER), 0
            if check:
                self.hash = hashlib.sha256(HEADER)
            good = len(HEADER)
            index = 0
            rec = self._big
            view = memoryview(rec)
            while True:
                # Read into the journal's own buffer: a refill scans the whole
                # journal mid-shoe, where a new block per record might not be found.
                h = f.read(_HEAD)
                if not h:
                    return OK, None, good
                if len(h) >= 3 and KINDS.find(bytes((h[2],))) < 0:
                    return CORRUPT, _where(index, good) + ": unknown kind 0x%02x" % h[2], good
                if len(h) < _HEAD:
                    return TORN, _where(index, good) + " cut short", good
                blen = (h[0] << 8) | h[1]
                if h[3] != _hchk(h[0], h[1], h[2]):
                    return CORRUPT, _where(index, good) + ": header check byte does not match", good
                if blen > _MAX_BODY:
                    return CORRUPT, _where(index, good) + ": length %d exceeds %d" % (blen, _MAX_BODY), good
                for i in range(_HEAD):
                    rec[i] = h[i]
                got_n = f.readinto(view[_HEAD:_HEAD + blen + 2])
                if (got_n or 0) < blen + 2:
                    return TORN, _where(index, good) + " cut short", good
                want = (rec[_HEAD + blen] << 8) | rec[_HEAD + 1 + blen]
                got = crc16(rec, 4, 4 + blen, crc16(rec, 2, 3))
                if want != got:
                    return CORRUPT, _where(index, good) + ": crc %04x, computed %04x" % (want, got), good
                kind = h[2]
                total = blen + OVERHEAD
                k = kind ^ _CASE
                if k == CHIP or k == INTENT or k == SIGNED or k == CLEAR_STOP:
                    kind = k
                    blen -= _SEAL
                    if boot:  # the seal against the digest of everything before it
                        diff = 1 if blen < 0 or self.ipad is None else 0
                        if not diff:
                            d = self.hash.digest()
                            t = self.sign(d, rec, blen)
                            for i in range(_SEAL):
                                diff |= t[i] ^ rec[_HEAD + blen + i]
                            self.hash = hashlib.sha256(d)
                        if diff:
                            return CORRUPT, _where(index, good) + ": " + SEAL, good
                    elif blen < 0:
                        return CORRUPT, _where(index, good) + ": " + SEAL, good
                elif check and (kind == CHIP or kind == INTENT or kind == SIGNED or kind == CLEAR_STOP):
                    # A shoe with the key writes these sealed, always.
                    return CORRUPT, _where(index, good) + ": " + SEAL, good
                if check:
                    self.hash.update(view[:total])
                if kind == _GEN:
                    self.found_gen = get_u32(rec, _HEAD)
                else:
                    handler.record(kind, view[_HEAD:_HEAD + blen], blen)
                good += total
                index += 1

    # ----------------------------------------------------------------- write

    def _gen_record(self, gen):
        rec = self._u32
        rec[2] = _GEN
        put_u32(rec, 4, gen)
        seal(rec, 4)
        return rec

    def open(self, good_bytes):
        """Open for appending, first cutting off a torn tail (copy + atomic rename,
        since MicroPython files cannot be truncated). A new journal starts
        with the next generation."""
        self.close()
        size = os.stat(self.path)[6] if exists(self.path) else -1
        if good_bytes < len(HEADER):
            self.gen = max(self.gen, self.found_gen) + 1
        else:
            self.gen = self.found_gen
        if size != good_bytes:
            with self._file("wb") as out:
                if good_bytes < len(HEADER):
                    self.hash = None if self.ipad is None else hashlib.sha256()
                    self.put(out, HEADER)
                    self.put(out, self._gen_record(self.gen))
                    good_bytes = len(HEADER) + 4 + OVERHEAD
                else:
                    with self._file("rb") as src:
                        left = good_bytes
                        while left > 0:
                            chunk = src.read(min(left, 512))
                            if not chunk:
                                break
                            out.write(chunk)
                            left -= len(chunk)
                out.flush()
            self._done(out)
        self.size = good_bytes
        self.f = self._file("ab")
        self._write_mark()

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None
        if self.mf is not None:
            self.mf.close()
            self.mf = None

    # Where the stream lives: a file here, raw flash in link/ring.py.
    def exists(self):
        return exists(self.path)

    def _file(self, mode):
        """The journal to read ("rb") or append to ("ab"), or a new one
        being made ("wb": beside it, until ``_done``)."""
        return open(self.path + ".tmp" if mode == "wb" else self.path, mode)

    def _done(self, f):
        """The new journal written to ``f`` (closed) replaces the old one:
        rename is atomic, so a power cut leaves one or the other whole."""
        os.rename(self.path + ".tmp", self.path)

    def idle(self):
        """Flash work kept off a card's path: none for a file."""

    def _write(self, rec, n, sync=True):
        if self.f is None:
            return  # broken: the session has tilted
        try:
            self.f.write(rec)
            if self.hash is not None:
                self.hash.update(rec)
            self.size += n
            if not sync:
                return  # the next synced record takes it to the flash (``ack``)
            # On MicroPython flush() syncs the file (fsync on unix, a littlefs
            # commit on the boards); the event is sent only after this returns.
            self.f.flush()
            self._write_mark()
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
        self._write(rec, seal(rec, 4))

    def simple(self, kind):
        if kind == CLEAR_STOP:  # trusted: a supervisor's, sealed (rare)
            rec = self._big
            n = self.seal(rec, kind, 0)
            self._write(memoryview(rec)[:n], n)
            return
        rec = self._short
        rec[2] = kind
        self._write(rec, seal(rec, 0))

    def number(self, kind, value):
        if kind == CHIP or kind == INTENT:  # the chip's counter: sealed (once per signature)
            rec = self._big
            put_u32(rec, _HEAD, value)
            n = self.seal(rec, kind, 4)
            self._write(memoryview(rec)[:n], n)
        else:
            rec = self._u32
            rec[2] = kind
            put_u32(rec, 4, value)
            self._write(rec, seal(rec, 4))
        if kind == COUNTER:
            self.counter = value
        elif kind == CHIP or kind == INTENT:
            # The chip's signature counter: before its Counter command (a
            # power cut may fall before or after the increment) and after
            # it (link/chipcount.py). Kept in memory too, for a compaction.
            self.chip = value
            self.intent = kind == INTENT

    def checkpoint(self, data, n, counter):
        """A checkpoint made with the chip (signed, or unsigned saying why),
        kept literally. Its ``counter`` (-1: none spent) is what settles an
        open intent: until this record is on the flash, a power cut leaves
        the intent open and the next boot accounts for the spent value
        (link/chipcount.py); replay reads it back the same way (link/replay.py)."""
        self.blob(SIGNED, data, 0, n)
        if counter >= 0:
            self.chip = counter
            self.intent = False

    def ack(self, seq, tag):
        """The host's ack, with the tag of the acked event (the link of the
        chain the shoe resumes from after a power cut). Written, not synced:
        it reaches the flash with the next input's record (the same littlefs
        block, one erase for both, where a sync of its own costs a block of
        its own) or when the file is closed. A power cut before that loses
        only acks, so the host receives those events again and drops them by
        seq (docs/protocol.md 8)."""
        rec = self._ack
        put_u32(rec, 4, seq)
        for i in range(_TAG_HEX):
            rec[8 + i] = tag[i]
        self._write(rec, seal(rec, 4 + _TAG_HEX), False)

    def blob(self, kind, data, start, end):
        """A record with a variable body (event JSON, settings, alert): rare
        paths. A checkpoint's (SIGNED) is sealed."""
        rec = self._big
        n = end - start
        room = _MAX_BODY - _SEAL if kind == SIGNED else _MAX_BODY
        if n > room:
            raise ValueError("journal record of %d bytes exceeds %d" % (n, room))
        for i in range(n):
            rec[_HEAD + i] = data[start + i]
        if kind == SIGNED:
            total = self.seal(rec, kind, n)
        else:
            rec[2] = kind
            total = seal(rec, n)
        self._write(memoryview(rec)[:total], total)

    def compact(self, seq, acked, counter, tag, events, shoe_body=None):
        """Start a fresh journal of the next generation: a base record (with
        the tag of event ``acked``), the still-unacked events ``events`` (a
        list of (buf, start, end)), then the new shoe (as a quiet record: its
        events are among the literals). Written to a temp file and renamed
        over the old one, so a power cut leaves one or the other whole; the
        marker follows the rename (a newer generation than the marker's is
        accepted at boot)."""
        self.close()
        rec = self._big
        gen = self.gen + 1
        self.hash = None if self.ipad is None else hashlib.sha256()
        with self._file("wb") as f:
            size = self.put(f, HEADER)
            size += self.put(f, self._gen_record(gen))
            rec[2] = BASE
            put_u32(rec, _HEAD, seq)
            put_u32(rec, _HEAD + 4, acked)
            put_u32(rec, _HEAD + 8, counter)
            for i in range(_TAG_HEX):
                rec[_HEAD + 12 + i] = tag[i]
            size += self.put(f, memoryview(rec)[:seal(rec, 12 + _TAG_HEX)])
            if self.chip >= 0:  # the chip's counter outlives the records that showed it
                put_u32(rec, _HEAD, self.chip)
                size += self.put(f, memoryview(rec)[:self.seal(rec, INTENT if self.intent else CHIP, 4)])
            for buf, start, end in events:
                rec[2] = EVENT
                for i in range(end - start):
                    rec[_HEAD + i] = buf[start + i]
                size += self.put(f, memoryview(rec)[:seal(rec, end - start)])
            if shoe_body is not None:
                rec[2] = QUIET_SHOE
                for i in range(len(shoe_body)):
                    rec[_HEAD + i] = shoe_body[i]
                size += self.put(f, memoryview(rec)[:seal(rec, len(shoe_body))])
            f.flush()
        self._done(f)
        self.gen = gen
        self.size = size
        self.counter = counter
        self.f = self._file("ab")
        self._write_mark()
