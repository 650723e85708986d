"""What an attacker holding the chip can do to an emulated shoe's journal on
its NOR flash (the file ``journal.bin.nor`` in the flash directory,
firmware/emulator/norflash.py): read the live stream, write a stream of
their choosing as the ring's next committed epoch (as the shoe's own
compaction would, so only the journal's checks can tell), or erase the ring.
The ring's format is the firmware's own (firmware/link/ring.py)."""

import os

from firmware.emulator import norflash, shoe_board
from firmware.link import journal, ring

NOR = "journal.bin" + shoe_board.NOR


def path(flash):
    return os.path.join(str(flash), NOR)


def _ring(flash):
    p = path(flash)
    return ring.Ring(norflash.NorFlash(p, os.path.getsize(p) // norflash.SECTOR))


def read(flash):
    """The live epoch's stream up to its last whole record (what a file
    journal would hold): the records are walked by their LEN fields, and
    erased flash (LEN FF FF) ends it."""
    r = _ring(flash)
    assert r.exists(), "no committed epoch on %s" % path(flash)
    data = r.reader().read(r.size())
    at = len(journal.HEADER)
    while at + 2 <= len(data) and data[at:at + 2] != b"\xff\xff":
        at += journal.OVERHEAD + ((data[at] << 8) | data[at + 1])
    r.dev.f.close()
    return data[:min(at, len(data))]


def rewrite(flash, data):
    """``data`` as the ring's new live epoch, after the old one."""
    r = _ring(flash)
    w = r.create()
    w.write(data or b"\xff")   # nothing but erased flash after the sector's header
    r.commit(w)
    r.dev.f.close()


def erase(flash):
    """Every sector of the ring erased: the journal is gone."""
    r = _ring(flash)
    for block in range(r.n):
        r.dev.ioctl(6, block)
    r.dev.f.close()
