"""The journal on raw NOR flash (firmware/link/ring.py) against the journal's
own reader, on the emulator's NOR device (firmware/emulator/norflash.py),
which refuses a program over unerased flash.

A power cut may fall inside any erase (a half-erased sector) or page program
(some of its bits programmed): every such cut must boot to a sound or torn
journal holding every record whose write returned before the cut, and the
journal must go on from there. The seal chain must hold across the ring's
wrap, and an edit of the ring's flash must still fail its seal."""

import random

import pytest

from firmware.emulator import norflash
from firmware.link import journal as J
from firmware.link import ring

KEY = bytes(range(32))


class Cut(Exception):
    """The power went."""


class CuttingFlash(norflash.NorFlash):
    """A NOR flash whose power fails inside its ``left``-th next operation
    of ``kind``: an erase leaves some bits of the sector still programmed,
    a program leaves some of its bits unprogrammed."""

    def __init__(self, path, sectors, kind, left, rng):
        super().__init__(path, sectors)
        self.kind = kind
        self.left = left
        self.rng = rng

    def _tick(self, kind):
        if kind == self.kind:
            self.left -= 1
        return self.left == 0

    def writeblocks(self, block, buf, off=None):
        if self._tick("program"):
            n = len(buf)
            old = bytearray(n)
            self.readblocks(block, old, off or 0)
            r = self.rng
            for i in range(n):
                old[i] &= buf[i] | r.getrandbits(8)
            self.f.seek(block * norflash.SECTOR + (off or 0))
            self.f.write(old)
            self.f.flush()
            raise Cut("program")
        super().writeblocks(block, buf, off)

    def ioctl(self, op, arg):
        if op == 6 and self._tick("erase"):
            old = bytearray(norflash.SECTOR)
            self.readblocks(arg, old, 0)
            r = self.rng
            for i in range(len(old)):
                old[i] |= r.getrandbits(8) if r.random() < 0.5 else 0xFF
            self.f.seek(arg * norflash.SECTOR)
            self.f.write(old)
            self.f.flush()
            raise Cut("erase")
        return super().ioctl(op, arg)


class Records:
    def __init__(self):
        self.items = []

    def record(self, kind, body, blen):
        self.items.append((chr(kind), bytes(body[:blen])))


def _journal(tmp_path, dev, key=None):
    j = ring.RingJournal(str(tmp_path / "journal.bin"), ring.Ring(dev))
    if key is not None:
        j.ipad = bytearray(k ^ 0x36 for k in key + bytes(32))
        j.opad = bytearray(k ^ 0x5C for k in key + bytes(32))
    return j


def _boot(j):
    r = Records()
    status, message, good = j.scan(r, True)
    return status, message, good, r.items


EVENT = b'{"type":"link_up","source":"link","down_ms":-1}'


def _deal(j, n, done):
    """A shoe's worth of the journal's traffic: cards, bets, lazy acks, the
    chip's counter sealed; ``done`` gets each record once its write returned."""
    for i in range(n):
        j.card(i % 52, i % 3 == 0, i)
        done.append(("C", i))
        if i % 4 == 3:
            j.simple(J.BETS)
            done.append(("b", i))
        if i % 5 == 4:
            j.ack(i, b"0123456789abcdef0123456789abcdef")
        if i % 9 == 8:
            j.number(J.INTENT, i)
            done.append(("I", i))
            j.blob(J.EVENT, EVENT, 0, len(EVENT))
            done.append(("E", i))
        j.idle()


def _expect(done):
    """What a scan must yield for the records in ``done``."""
    out = []
    for kind, i in done:
        if kind == "C":
            ident = i + 1
            out.append(("C", bytes((i % 52, 1 if i % 3 == 0 else 0, ident >> 8, ident & 0xFF))))
        elif kind == "b":
            out.append(("b", b""))
        elif kind == "I":
            out.append(("I", i.to_bytes(4, "big")))
        elif kind == "E":
            out.append(("E", EVENT))
    return out


def _cards_and_inputs(items):
    return [it for it in items if it[0] in "CbIE"]


def test_the_ring_holds_the_same_stream_as_a_file(tmp_path):
    """Same calls, same bytes: the seal's digest is over the stream either way."""
    dev = norflash.NorFlash(str(tmp_path / "ring.nor"), 8)
    jr = _journal(tmp_path, dev, KEY)
    jr.scan(Records(), True)
    jr.open(0)
    jf = J.Journal(str(tmp_path / "file.bin"))
    jf.ipad, jf.opad = jr.ipad, jr.opad
    jf.scan(Records(), True)
    jf.open(0)
    for j in (jr, jf):
        _deal(j, 300, [])
        j.close()
    stream = bytearray()
    rd = jr.ring.reader()
    while True:
        chunk = rd.read(512)
        if not chunk:
            break
        stream += chunk
    data = open(tmp_path / "file.bin", "rb").read()
    assert bytes(stream[:len(data)]) == data
    assert set(stream[len(data):]) <= {0xFF}
    status, message, good, items = _boot(_journal(tmp_path, norflash.NorFlash(str(tmp_path / "ring.nor"), 8), KEY))
    assert (status, message, good) == (J.OK, None, len(data))
    assert len(_cards_and_inputs(items)) > 300


def test_a_card_after_idle_never_waits_on_an_erase(tmp_path):
    """The sector the stream enters next is erased by ``idle``; every
    synced record costs page programs only (one, two across a page)."""
    dev = norflash.NorFlash(str(tmp_path / "ring.nor"), 8)
    j = _journal(tmp_path, dev)
    j.scan(Records(), True)
    j.open(0)
    j.idle()
    store = j.ring
    for i in range(1500):  # about four sectors of card records
        p = store.programs
        j.card(i % 52, False, i)
        assert store.programs - p in (1, 2)
        j.idle()
    assert store.count >= 4
    assert store.path_erases == 0
    # Without the idle erases the path pays them: the ring still works.
    for i in range(1000):
        j.card(i % 52, False, i)
    assert store.path_erases >= 1


def test_a_power_cut_anywhere_keeps_every_written_record(tmp_path):
    rng = random.Random(35)
    cuts = set()
    plan = [("erase", n) for n in range(1, 7)] + [("program", n) for n in range(1, 30)] + \
        [("program", rng.randrange(30, 900)) for _ in range(20)]
    for kind, left in plan:
        path = tmp_path / ("cut-%s-%d.nor" % (kind, left))
        dev = CuttingFlash(str(path), 6, kind, left, rng)
        j = _journal(tmp_path, dev, KEY)
        done = []
        try:
            j.scan(Records(), True)
            j.open(0)
            for shoe in range(4):  # compactions wrap the small ring
                _deal(j, 100, done)
                j.number(J.CHIP, 1000 + shoe)
                j.compact(0, 0, 0, b"0" * 32, [])
                done = []  # what a compaction keeps: the chip's counter, sealed
        except Cut as e:
            cuts.add((e.args[0], left))
        j2 = _journal(tmp_path, norflash.NorFlash(str(path), 6), KEY)
        status, message, good, items = _boot(j2)
        assert status in (J.OK, J.TORN), (left, message)
        got = _cards_and_inputs(items)
        want = _expect(done)
        assert got[:len(want)] == want, left
        # The journal goes on after the cut, and reads back sound.
        j2.open(good)
        j2.card(7, False, 7)
        j2.close()
        status, message, _, items2 = _boot(_journal(tmp_path, norflash.NorFlash(str(path), 6), KEY))
        assert status == J.OK, (left, message)
        assert items2[-1] == ("C", bytes((7, 0, 0, 8)))
    kinds = [k for k, _ in cuts]
    assert kinds.count("erase") >= 5 and kinds.count("program") > 40


def test_the_seal_chain_survives_the_wrap_and_an_edit_fails_it(tmp_path):
    path = tmp_path / "ring.nor"
    j = _journal(tmp_path, norflash.NorFlash(str(path), 6), KEY)
    j.scan(Records(), True)
    j.open(0)
    for shoe in range(8):  # eight compactions round a six-sector ring
        _deal(j, 150, [])
        j.number(J.CHIP, 500 + shoe)
        j.compact(0, 0, 0, b"0" * 32, [])
    _deal(j, 50, [])
    j.close()
    assert j.ring.epoch >= 9
    status, message, _, items = _boot(_journal(tmp_path, norflash.NorFlash(str(path), 6), KEY))
    assert status == J.OK, message
    assert ("U", (507).to_bytes(4, "big")) in items  # kept across the wrap, sealed
    # Someone with the flash edits a card before the last seal, fixing its
    # CRC as the shoe's own codec would: the seal no longer holds.
    dev = norflash.NorFlash(str(path), 6)
    st = ring.Ring(dev)
    buf = bytearray(st.size())
    st.reader().readinto(buf)
    at = buf.find(bytes((0, 4, J.CARD, 0 ^ 4 ^ J.CARD ^ 0x5A)))
    assert at > 0
    rec = bytearray(buf[at:at + 10])
    rec[4] ^= 1
    J.seal(rec, 4)
    i, off = st._where(at)
    slot = (st.start + i) % st.n
    sector = bytearray(norflash.SECTOR)
    dev.readblocks(slot, sector, 0)
    sector[off:off + 10] = rec
    dev.ioctl(6, slot)
    dev.writeblocks(slot, sector, 0)
    status, message, _, _ = _boot(_journal(tmp_path, norflash.NorFlash(str(path), 6), KEY))
    assert status == J.CORRUPT and J.SEAL in message


def test_the_nor_device_refuses_a_program_over_unerased_flash(tmp_path):
    dev = norflash.NorFlash(str(tmp_path / "n.nor"), 2)
    page = bytearray(b"\xff" * 256)
    page[0] = 0x0F
    dev.writeblocks(0, page, 0)
    page[0] = 0xF0
    with pytest.raises(OSError):
        dev.writeblocks(0, page, 0)
    with pytest.raises(OSError):
        dev.writeblocks(0, page[:100], 0)
    dev.ioctl(6, 0)
    dev.writeblocks(0, page, 0)
    assert (dev.erases, dev.pages) == (1, 1 + 1)


def test_a_ring_cut_back_or_erased_is_caught_by_its_marker(tmp_path):
    """Someone with the flash erases the live epoch's newest sector (the
    ring then ends, soundly, where that sector began), or the whole ring:
    the loss marker, brought up to date in idle time, still says how far
    the journal reached, and the boot names the loss."""
    from firmware.link import replay
    path = tmp_path / "ring.nor"
    j = _journal(tmp_path, norflash.NorFlash(str(path), 8))
    j.scan(Records(), True)
    j.open(0)
    _deal(j, 900, [])  # about three sectors, the marker following in idle
    j.close()
    dev = norflash.NorFlash(str(path), 8)
    st = ring.Ring(dev)
    assert st.count >= 3
    dev.ioctl(6, (st.start + st.count - 1) % st.n)
    j2 = _journal(tmp_path, norflash.NorFlash(str(path), 8))
    status, message, good, _ = _boot(j2)
    assert status in (J.OK, J.TORN), message  # a record may straddle into the erased sector
    assert replay.loss(j2, good).startswith("journal truncated")
    for slot in range(8):
        dev.ioctl(6, slot)
    j3 = _journal(tmp_path, norflash.NorFlash(str(path), 8))
    status, _, good, _ = _boot(j3)
    assert (status, good) == (J.OK, 0)
    assert replay.loss(j3, good).startswith("journal deleted")


def test_a_flash_that_stops_taking_writes_breaks_the_journal_without_raising(tmp_path):
    """Every program and erase fails from some record on (a worn-out chip,
    the emulator's ``flash fail``): the write that meets it marks the
    journal broken (the session tilts on that) and lets the ring go without
    trying the failed page again, and every later write is a no-op. What
    the flash took before still reads back, a record cut by the failure
    being only a torn tail. Before, the close after the failure programmed
    the same page again and its EIO escaped: the shoe crashed."""
    path = tmp_path / "ring.nor"
    dev = norflash.NorFlash(str(path), 8)
    j = _journal(tmp_path, dev, KEY)
    j.scan(Records(), True)
    j.open(0)
    done = []
    _deal(j, 100, done)
    dev.failing = True
    j.blob(J.EVENT, EVENT, 0, len(EVENT))   # meets the failure: no exception
    assert j.broken is not None and j.broken.startswith("journal write failed (")
    assert j.f is None
    j.blob(J.EVENT, EVENT, 0, len(EVENT))
    j.idle()
    status, message, good, items = _boot(_journal(tmp_path, norflash.NorFlash(str(path), 8), KEY))
    assert status in (J.OK, J.TORN), message
    got = _cards_and_inputs(items)
    assert got == _expect(done)[:len(got)] and len(got) >= len(_expect(done)) - 8
