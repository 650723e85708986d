"""The journal's byte stream on raw NOR flash: a ring of pre-erased sectors,
so that appending a record on a card's path programs a page and never waits
on a sector erase (docs/protocol.md 8, "Where the journal lives").

The journal (link/journal.py) sees a file: one append-only stream, read
from its start, rewritten whole by a compaction. Here that stream lives in
an *epoch*: consecutive sectors of the ring, each opening with a header

    "SR" EPOCH(u32) INDEX(u32) CRC-16(of the ten bytes before) COMMIT(1) FF FF FF

INDEX is the sector's place in the epoch's stream (its payload is stream
bytes INDEX * PAYLOAD onwards). A rewrite (compaction, or a torn tail cut
off) writes the next epoch into the sectors after the live one and then
programs its first header's COMMIT byte from FF to 00: a power cut before
that leaves the old epoch live, after it the new one, never a mix. The old
epoch's sectors are free from then on: that is the ring's wrap, and what
crosses it is what a compaction keeps (link/journal.py ``compact``).

Flash rules the device enforces (NOR): a program only clears bits, in whole
256-byte pages at page-aligned offsets; an erase sets a whole sector to FF.
The stream's tail page is mirrored in RAM and programmed whole at each sync
(bytes already programmed are programmed again with the same value, which
changes nothing). The sector after the stream's last is erased in idle time
(``idle``, called by the link once its sends are done) so that crossing into
it costs a header in the same page program; only a journal that outruns the
idle erases (never at a dealer's pace) erases on the path, counted in
``path_erases``.

After a power cut: a half-erased or half-programmed header fails its CRC and
its sector belongs to no epoch; an uncommitted epoch is ignored; a torn page
at the stream's end is found by ``RingJournal.scan`` (``tail``: erased flash
from some point within one sync's reach of the failure on) and cut off by a
rewrite. Nothing here is trusted beyond that: the journal's CRCs and seals
are checked over the stream as over a file.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from link.journal import CORRUPT, HEADER, OK, SEAL, TORN, Journal, _remove, crc16, get_u32, put_u32

_HDR = const(16)
_PAGE = const(256)
_COMMIT = const(12)
# The furthest a torn sync reaches past the first byte it failed to
# program: the unsynced rest of the tail page plus the longest record
# (link/journal.py: _MAX_BODY + OVERHEAD).
TORN_REACH = const(_PAGE + 1024 + 6)


class Ring:
    """A journal store on ``dev`` (the MicroPython block-device protocol:
    readblocks/writeblocks with an offset, ioctl 4/5/6), its sectors the
    device's blocks listed in ``blocks`` (all of them when None). One
    object is the journal's appender, its reader (``reader``) and the writer
    of a new epoch (``create``), never two at once: the journal closes its
    appender before it reads back or rewrites. (One class, not three: each
    costs the resident heap.)"""

    def __init__(self, dev, blocks=None):
        self.dev = dev
        self.sector = dev.ioctl(5, 0)
        self.blocks = blocks if blocks is not None else list(range(dev.ioctl(4, 0)))
        self.n = len(self.blocks)
        self.pay = self.sector - _HDR
        self.page = bytearray(_PAGE)     # the tail page (or a new epoch's page being written)
        self.scratch = bytearray(_PAGE)  # reads that must not disturb it
        self.erases = 0
        self.programs = 0
        self.path_erases = 0
        self.ready = -1     # a slot erased since boot and not yet used
        self.open = False
        self.wr = False     # writing a new epoch (``create``) rather than appending
        self.dirty = False
        self.mount()

    # ------------------------------------------------------------ flash

    def _erase(self, slot):
        self.dev.ioctl(6, self.blocks[slot])
        self.erases += 1

    def _program(self, slot, off, buf):
        self.dev.writeblocks(self.blocks[slot], buf, off)
        self.programs += 1

    def mount(self):
        """Find the live epoch: the newest committed one, and its sectors.
        A header that fails its CRC (erased, half-erased, torn) is no one's."""
        h = self.scratch
        best = 0
        self.top = 0  # the newest epoch any sound header names, committed or not
        self.start = 0
        for slot in range(self.n):
            e = self._epoch(slot, h)
            if e > self.top:
                self.top = e
            if e > best and h[_COMMIT] == 0 and get_u32(h, 6) == 0:
                best = e
                self.start = slot
        self.epoch = best
        self.count = 0
        while best and self.count < self.n:
            slot = (self.start + self.count) % self.n
            if self._epoch(slot, h) != best or get_u32(h, 6) != self.count:
                break
            self.count += 1
        self.pos = 0        # the stream's end, where the next byte goes
        self.pg_slot = -1   # the slot of the page mirrored in ``page`` (-1: none)

    def _epoch(self, slot, h):
        """The epoch of the sector at ``slot`` (its header left in ``h``), 0
        when the header is not sound."""
        self.dev.readblocks(self.blocks[slot], h, 0)
        if h[0] != 0x53 or h[1] != 0x52 or crc16(h, 0, 10) != (h[10] << 8) | h[11]:
            return 0
        return get_u32(h, 2)

    def _where(self, at):
        """(index in the epoch, offset in its sector) of stream byte ``at``."""
        i = at // self.pay
        return i, _HDR + at - i * self.pay

    # ------------------------------------------------------ reading (a file's)

    def exists(self):
        return self.epoch != 0

    def size(self):
        """The bytes the live epoch's sectors can hold (its stream ends
        where the journal's scan finds erased flash)."""
        return self.count * self.pay

    def reader(self):
        self.rd = 0
        return self

    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass

    def readinto(self, buf, n=-1):
        if n < 0:
            n = len(buf)
        n = min(n, self.size() - self.rd)
        got = 0
        mv = memoryview(buf)
        while got < n:
            i, off = self._where(self.rd)
            k = min(n - got, self.sector - off)
            self.dev.readblocks(self.blocks[(self.start + i) % self.n], mv[got:got + k], off)
            got += k
            self.rd += k
        return max(n, 0)

    def read(self, n):
        b = bytearray(max(0, min(n, self.size() - self.rd)))
        self.readinto(b)
        return bytes(b)

    def tail(self, at):
        """The journal's scan stopped at stream byte ``at``: 0 when the flash
        after it is erased (a clean end), 1 when it is not but only within a
        torn sync's reach of ``at`` (a power cut), 2 beyond it (corruption)."""
        last = -1
        buf = self.scratch
        self.rd = at
        while True:
            p = self.rd
            k = self.readinto(buf)
            if not k:
                break
            for j in range(k):
                if buf[j] != 0xFF:
                    last = p + j
        if last < 0:
            return 0
        return 1 if last < at + TORN_REACH else 2

    def cut_needed(self, good):
        """Whether the journal must rewrite its sound prefix of ``good``
        bytes into a new epoch before appending (no epoch yet, or bytes of
        a torn write after it)."""
        return self.epoch == 0 or self.tail(good) != 0

    def discard(self, bad):
        """Keep the stream for the technician as the file ``bad``; the live
        epoch stays until a rewrite replaces it."""
        self.rd = 0
        with open(bad, "wb") as f:
            while self.readinto(self.scratch):
                f.write(self.scratch)

    # ------------------------------------------------------------ a new epoch

    def create(self):
        """Start writing the next epoch after the live one, above every epoch
        on the flash (a rewrite cut short before its commit must never read
        as this one); ``commit`` makes it live."""
        self.wr = True
        self.w_epoch = self.top + 1
        self.w_start = self._next() if self.epoch else 0
        self.w_count = 0
        self.w_at = 0
        self.pg_fill = 0
        return self

    def _new_page(self):
        r = self
        i, off = r._where(r.w_at)
        pg = r.page
        for j in range(_PAGE):
            pg[j] = 0xFF
        r.pg_fill = off % _PAGE
        if i == r.w_count:  # a new sector: erased first, its header in its first page
            slot = (r.w_start + i) % r.n
            if i >= r.n or (r.epoch and r._owned(slot)):
                raise OSError(28)  # the new epoch would overrun the live one
            if r.ready != slot:
                r._erase(slot)
            r.ready = -1
            _fill_header(pg, r.w_epoch, i)
            r.w_count += 1
            r.pg_fill = _HDR
        r.pg_slot = (r.w_start + i) % r.n
        r.pg_off = off - off % _PAGE

    def commit(self, w):
        """Make the new epoch the live one: its first header's COMMIT byte
        programmed to 00 (the page programmed again as it is but for that
        byte)."""
        self._sync()
        self.wr = False
        pg = self.scratch
        self.dev.readblocks(self.blocks[self.w_start], pg, 0)
        pg[_COMMIT] = 0
        self._program(self.w_start, 0, pg)
        self.epoch = self.top = self.w_epoch
        self.start = self.w_start
        self.count = self.w_count
        self.pg_slot = -1

    def _owned(self, slot):
        return (slot - self.start) % self.n < self.count

    def _next(self):
        return (self.start + self.count) % self.n

    def idle(self):
        """Erase the sector the stream enters next, if not done since boot."""
        if self.open and self.ready < 0 and self.count < self.n:
            slot = self._next()
            self._erase(slot)
            self.ready = slot

    # ------------------------------------------------------------ appending

    def append(self, at):
        """Open for appending at stream byte ``at`` (the sound end)."""
        self.pos = at
        self.pg_slot = -1
        self.open = True
        return self

    def _load(self):
        """Bring the page holding ``pos`` into RAM."""
        i, off = self._where(self.pos)
        if i == self.count:  # a new sector: its header opens its first page
            slot = self._next()
            if self.count >= self.n:
                raise OSError(28)  # the ring is full: the journal tilts (write failed)
            if self.ready != slot:
                self._erase(slot)
                self.path_erases += 1
            self.ready = -1
            _fill_header(self.page, self.epoch, self.count)
            self.count += 1
            self.pg_slot = slot
            self.pg_off = 0
        else:
            self.pg_slot = (self.start + i) % self.n
            self.pg_off = off - off % _PAGE
            self.dev.readblocks(self.blocks[self.pg_slot], self.page, self.pg_off)
        self.pg_fill = off % _PAGE

    def write(self, buf):
        pg = self.page
        n = len(buf)
        k = 0
        while k < n:
            if self.pg_slot < 0:
                if self.wr:
                    self._new_page()
                else:
                    self._load()
            at = self.pg_fill
            while k < n and at < _PAGE:
                pg[at] = buf[k]
                at += 1
                k += 1
            if self.wr:
                self.w_at += at - self.pg_fill
            else:
                self.pos += at - self.pg_fill
            self.pg_fill = at
            self.dirty = True
            if at == _PAGE:
                self._sync()
                self.pg_slot = -1
        return n

    def _sync(self):
        if self.dirty and self.pg_slot >= 0:
            self._program(self.pg_slot, self.pg_off, self.page)
        self.dirty = False

    def flush(self):
        self._sync()

    def close(self):
        try:
            if self.open:
                self._sync()
        except OSError:
            # A failing flash: the unsynced tail is lost, which a write has
            # said (the journal's ``broken``) or will. Raised, it crashed the
            # device from inside the journal's own handling of that write.
            pass
        self.open = False
        self.pg_slot = -1


def _fill_header(pg, epoch, index):
    for i in range(_PAGE):
        pg[i] = 0xFF
    pg[0] = 0x53
    pg[1] = 0x52
    put_u32(pg, 2, epoch)
    put_u32(pg, 6, index)
    c = crc16(pg, 0, 10)
    pg[10] = c >> 8
    pg[11] = c & 0xFF


class RingJournal(Journal):
    """The journal (link/journal.py) with its stream on ``ring``: the same
    records, seals and checks, a page program per synced record, the next
    sector's erase and the loss marker's rewrite in idle time (``idle``,
    after the link's sends) instead of on the record's path."""

    def __init__(self, path, ring):
        Journal.__init__(self, path)
        self.ring = ring
        self.durable = 0   # the stream's length on the flash (acks wait in RAM for the next sync)
        self.marked = -1   # the length the marker last recorded

    def exists(self):
        return self.ring.exists()

    def _file(self, mode):
        r = self.ring
        if mode == "rb":
            return r.reader()
        if mode == "wb":
            return r.create()
        return r.append(self.size)

    def _done(self, w):
        self.ring.commit(w)

    def scan(self, handler, boot=False):
        """As a file's, but on raw flash a power cut inside a page program
        leaves some of its bits programmed, not a short file: a record that
        does not check is the stream's clean end when the flash from it on
        is erased, a torn write when it is erased from within one sync's
        reach of it on (``Ring.tail``), and corruption otherwise. A seal
        that does not verify is never a power cut's."""
        status, message, good = Journal.scan(self, handler, boot)
        if status == CORRUPT and SEAL not in message:
            t = self.ring.tail(good)
            if t == 0:
                return OK, None, good
            if t == 1:
                return TORN, message + " (a torn page)", good
        return status, message, good

    def open(self, good_bytes):
        if good_bytes >= len(HEADER) and not self.ring.cut_needed(good_bytes):
            self.close()  # the stream ends clean at good_bytes: append there
            self.gen = self.found_gen
            self.size = good_bytes
            self.f = self.ring.append(good_bytes)
            self._write_mark()
            return
        Journal.open(self, good_bytes)  # a new or cut stream: the next epoch

    def clear_tilt(self):
        self.close()
        self.ring.discard(self.path + ".bad")
        _remove(self.tilt_path)

    def _write(self, rec, n, sync=True):
        # Journal._write without the marker: it follows in ``idle``.
        if self.f is None:
            return
        try:
            self.f.write(rec)
            if self.hash is not None:
                self.hash.update(rec)
            self.size += n
            if sync:
                self.f.flush()
                self.durable = self.size
        except OSError as e:
            self.broken = "journal write failed (%s)" % e
            self.close()

    def _write_mark(self):
        # The marker claims only what is on the flash, never acks still in RAM.
        full = self.size
        if self.ring.dirty:
            self.size = self.durable
        else:
            self.durable = full
        self.marked = self.size
        try:
            Journal._write_mark(self)
        finally:
            self.size = full

    def idle(self):
        if self.f is None:
            return
        try:
            self.ring.idle()
            if self.marked != (self.durable if self.ring.dirty else self.size):
                self._write_mark()
        except OSError as e:
            self.broken = "journal write failed (%s)" % e
            self.close()
