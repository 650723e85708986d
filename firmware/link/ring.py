"""The journal's byte stream on raw NOR flash: a ring of pre-erased sectors,
so that appending a record on a card's path programs a page and never waits
on a sector erase (docs/protocol.md 8, "The ring").

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
at the stream's end is found by the journal's scan (``tail``: erased flash
from some point within one sync's reach of the failure on) and cut off by a
rewrite. Nothing here is trusted beyond that: the journal's CRCs and seals
are checked over the stream as over a file.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from link.journal import crc16, get_u32, put_u32

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
    device's blocks listed in ``blocks`` (all of them when None)."""

    MARK_EACH = False  # the journal's loss marker follows epochs, not appends

    def __init__(self, dev, blocks=None):
        self.dev = dev
        self.sector = dev.ioctl(5, 0)
        self.blocks = blocks if blocks is not None else list(range(dev.ioctl(4, 0)))
        self.n = len(self.blocks)
        self.pay = self.sector - _HDR
        self.page = bytearray(_PAGE)
        self.hdr = bytearray(_HDR)
        self.epoch = 0      # the live epoch (0: none)
        self.start = 0      # its first sector's slot in the ring
        self.count = 0      # its sectors
        self.pos = 0        # the stream's end, where the next byte goes
        self.pg_slot = -1   # the slot of the page mirrored in ``page`` (-1: none)
        self.pg_off = 0     # its offset in the sector
        self.pg_fill = 0    # where ``pos`` falls in it
        self.dirty = False
        self.scratch = bytearray(_PAGE)
        self.ready = -1     # a slot erased since boot and not yet used
        self.erases = 0
        self.programs = 0
        self.path_erases = 0
        self.open = False
        self.mount()

    # ------------------------------------------------------------ flash

    def _erase(self, slot):
        self.dev.ioctl(6, self.blocks[slot])
        self.erases += 1

    def _program(self, slot, off, buf):
        self.dev.writeblocks(self.blocks[slot], buf, off)
        self.programs += 1

    def _header(self, slot):
        """(epoch, index, committed) of the sector at ``slot``, epoch 0 when
        its header is not sound (erased, half-erased, torn)."""
        h = self.hdr
        self.dev.readblocks(self.blocks[slot], h, 0)
        if h[0] != 0x53 or h[1] != 0x52 or crc16(h, 0, 10) != (h[10] << 8) | h[11]:
            return 0, 0, False
        return get_u32(h, 2), get_u32(h, 6), h[_COMMIT] == 0

    def mount(self):
        """Find the live epoch: the newest committed one, and its sectors."""
        best = 0
        self.top = 0  # the newest epoch any sound header names, committed or not
        for slot in range(self.n):
            e, i, c = self._header(slot)
            if e > self.top:
                self.top = e
            if c and i == 0 and e > best:
                best = e
                self.start = slot
        self.epoch = best
        self.count = 0
        if best:
            while self.count < self.n:
                e, i, c = self._header((self.start + self.count) % self.n)
                if e != best or i != self.count:
                    break
                self.count += 1
        self.pos = 0
        self.pg_slot = -1

    def _where(self, at):
        """(slot, offset in the sector) of stream byte ``at`` of an epoch
        starting at slot ``start``."""
        i = at // self.pay
        return i, _HDR + at - i * self.pay

    def _read(self, start, at, buf, n):
        """``n`` stream bytes from ``at`` into ``buf`` (page by page)."""
        got = 0
        mv = memoryview(buf)
        while got < n:
            i, off = self._where(at + got)
            k = min(n - got, self.sector - off)
            self.dev.readblocks(self.blocks[(start + i) % self.n], mv[got:got + k], off)
            got += k

    # ------------------------------------------------------ what journal.py uses

    def exists(self):
        return self.epoch != 0

    def size(self):
        """The bytes the live epoch's sectors can hold (its stream ends
        where the journal's scan finds erased flash)."""
        return self.count * self.pay

    def reader(self):
        return _Reader(self)

    def tail(self, at):
        """The journal's scan stopped at stream byte ``at``: 0 when the flash
        after it is erased (a clean end), 1 when it is not but only within a
        torn sync's reach of ``at`` (a power cut), 2 beyond it (corruption)."""
        end = self.size()
        last = -1
        buf = self.scratch
        p = at
        while p < end:
            k = min(_PAGE, end - p)
            self._read(self.start, p, buf, k)
            for j in range(k):
                if buf[j] != 0xFF:
                    last = p + j
            p += k
        if last < 0:
            return 0
        return 1 if last < at + TORN_REACH else 2

    def cut_needed(self, good):
        """Whether the journal must rewrite its sound prefix of ``good``
        bytes into a new epoch before appending (no epoch yet, or bytes of
        a torn write after it)."""
        return self.epoch == 0 or self.tail(good) != 0

    def append(self, at):
        """Open for appending at stream byte ``at`` (the sound end)."""
        self.pos = at
        self.pg_slot = -1
        self.open = True
        return self

    def create(self):
        """Start the next epoch after the live one; ``commit`` makes it live."""
        return _Writer(self)

    def commit(self, w):
        """Make the epoch ``w`` wrote the live one: its first header's
        COMMIT byte programmed to 00 (the page programmed again as it is
        but for that byte)."""
        w.flush()
        pg = self.scratch
        self.dev.readblocks(self.blocks[w.start], pg, 0)
        pg[_COMMIT] = 0
        self._program(w.start, 0, pg)
        self.epoch = self.top = w.epoch
        self.start = w.start
        self.count = w.count
        self.pg_slot = -1

    def discard(self, bad):
        """Keep the stream for the technician as the file ``bad``; the live
        epoch stays until a rewrite replaces it."""
        r = self.reader()
        with open(bad, "wb") as f:
            while True:
                chunk = r.read(512)
                if not chunk:
                    break
                f.write(chunk)

    def _owned(self, slot):
        return (slot - self.start) % self.n < self.count

    def _next(self):
        return (self.start + self.count) % self.n

    def idle(self):
        """Erase the sector the stream enters next, if not done since boot:
        called between cards, after the link's sends (link/core.py)."""
        if self.open and self.ready < 0 and self.count < self.n:
            slot = self._next()
            self._erase(slot)
            self.ready = slot

    # ------------------------------------------------------------ appending

    def _load(self):
        """Bring the page holding ``pos`` into RAM."""
        i, off = self._where(self.pos)
        if i == self.count:  # a new sector: its header opens its first page
            self._enter()
            self.pg_off = 0
        else:
            self.pg_slot = (self.start + i) % self.n
            self.pg_off = off - off % _PAGE
            self.dev.readblocks(self.blocks[self.pg_slot], self.page, self.pg_off)
        self.pg_fill = off % _PAGE

    def _enter(self):
        slot = self._next()
        if self.count >= self.n:
            raise OSError(28)  # the ring is full: the journal tilts (write failed)
        if self.ready != slot:
            self._erase(slot)
            self.path_erases += 1
        self.ready = -1
        _fill_header(self.page, self.epoch, self.count, False)
        self.count += 1
        self.pg_slot = slot

    def write(self, buf):
        pg = self.page
        n = len(buf)
        k = 0
        while k < n:
            if self.pg_slot < 0:
                self._load()
            at = self.pg_fill
            while k < n and at < _PAGE:
                pg[at] = buf[k]
                at += 1
                k += 1
            self.pos += at - self.pg_fill
            self.pg_fill = at
            self.dirty = True
            if at == _PAGE:
                self._sync()
                self.pg_slot = -1
        return n

    def _sync(self):
        if self.dirty:
            self._program(self.pg_slot, self.pg_off, self.page)
            self.dirty = False

    def flush(self):
        self._sync()

    def close(self):
        if self.open:
            self._sync()
        self.open = False
        self.pg_slot = -1


def _fill_header(pg, epoch, index, committed):
    for i in range(_PAGE):
        pg[i] = 0xFF
    pg[0] = 0x53
    pg[1] = 0x52
    put_u32(pg, 2, epoch)
    put_u32(pg, 6, index)
    c = crc16(pg, 0, 10)
    pg[10] = c >> 8
    pg[11] = c & 0xFF
    if committed:
        pg[_COMMIT] = 0


class _Reader:
    """The live epoch's stream, read like a file (``read``, ``readinto``)."""

    def __init__(self, ring):
        self.r = ring
        self.at = 0

    def readinto(self, buf):
        r = self.r
        n = min(len(buf), r.size() - self.at)
        if n <= 0:
            return 0
        r._read(r.start, self.at, buf, n)
        self.at += n
        return n

    def read(self, n):
        b = bytearray(min(n, max(0, self.r.size() - self.at)))
        self.readinto(b)
        return bytes(b)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass


class _Writer:
    """A new epoch being written (a compaction's stream), after the live one."""

    def __init__(self, ring):
        r = self.r = ring
        # Above every epoch on the flash: sectors of a rewrite cut short
        # before its commit must never read as this one's.
        self.epoch = r.top + 1
        self.start = r._next() if r.epoch else 0
        self.count = 0
        self.at = 0
        self.buf = bytearray(_PAGE)
        self.fill = 0

    def write(self, buf):
        r = self.r
        n = len(buf)
        k = 0
        while k < n:
            if self.fill == 0:
                i, off = r._where(self.at)
                if i == self.count:
                    if self.count >= r.n or (r.epoch and r._owned((self.start + i) % r.n)):
                        raise OSError(28)  # the new epoch would overrun the live one
                    slot = (self.start + i) % r.n
                    if r.ready != slot:
                        r._erase(slot)
                    else:
                        r.ready = -1
                    _fill_header(self.buf, self.epoch, self.count, False)
                    self.count += 1
                    self.fill = _HDR
                else:
                    for j in range(_PAGE):
                        self.buf[j] = 0xFF
                    self.fill = off % _PAGE
            while k < n and self.fill < _PAGE:
                self.buf[self.fill] = buf[k]
                self.fill += 1
                self.at += 1
                k += 1
            if self.fill == _PAGE:
                self._page()
        return n

    def _page(self):
        r = self.r
        i, off = r._where(self.at - 1)
        r._program((self.start + i) % r.n, off - off % _PAGE, self.buf)
        self.fill = 0

    def flush(self):
        if self.fill:
            self._page()

    def close(self):
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass
