"""The journal's ring (link/ring.py) on a board's own flash, carved out of
the littlefs the stock port mounts.

A partition beside littlefs cannot be had on the stock ports: rp2's frozen
_boot.py mounts littlefs on the whole of ``rp2.Flash()`` and formats it when
the superblock's block count is not the region's, before any of our code
runs (esp32's _boot.py does the same with its "vfs" partition). So the ring's
sectors are littlefs's own blocks, taken once: ``<journal>.ring.d/N`` is a
file of exactly one 4 KiB block (littlefs keeps such a file in a single
block with no skip-list pointers in it, and never reads, moves or rewrites
its data unless the file is written), and ``<journal>.ring`` lists the block
each one landed in. From then on the ring erases and programs those blocks
through the raw device; littlefs reads only their files' metadata, which
never changes. The files are made at the first boot that finds no list
(seconds of erases, not on any card's path); deleting the list makes new
ones, and with them an empty ring.
"""

import os

from link.journal import crc16, get_u32, put_u32
from link.ring import Ring

_TAG = b"SHOE-RING"
MAP = ".ring"       # beside the journal's path: the block list
FOLDER = ".ring.d/"  # beside it: the one-block files


def _map(path, sectors, bdev):
    """The block of each of the ``sectors`` ring files, or None."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    n = 2 * sectors
    if len(raw) != n + 2 or crc16(raw, 0, n) != (raw[n] << 8) | raw[n + 1]:
        return None
    size = bdev.ioctl(4, 0)
    out = []
    for i in range(sectors):
        b = (raw[2 * i] << 8) | raw[2 * i + 1]
        if b >= size:
            return None
        out.append(b)
    return out


def _carve(path, sectors, bdev, feed):
    folder = path[:-len(MAP)] + FOLDER[:-1]
    try:
        os.mkdir(folder)
    except OSError:
        pass
    block = bdev.ioctl(5, 0)
    nonce = os.urandom(4)
    buf = bytearray(b"\xff" * block)
    for i in range(len(_TAG)):
        buf[i] = _TAG[i]
    for i in range(4):
        buf[len(_TAG) + i] = nonce[i]
    at = len(_TAG) + 4
    for i in range(sectors):
        put_u32(buf, at, i)
        with open("%s/%d" % (folder, i), "wb") as f:
            f.write(buf)
        feed()  # an erase and a block's programs each: seconds in all
    # Find where littlefs put each one: the tag, this boot's nonce, its index.
    found = [-1] * sectors
    head = bytearray(at + 4)
    for b in range(bdev.ioctl(4, 0)):
        bdev.readblocks(b, head, 0)
        if head[:at] == buf[:at]:
            i = get_u32(head, at)
            if i < sectors:
                found[i] = b
    if min(found) < 0:
        raise OSError(5)  # a ring file not in one whole block: no ring
    raw = bytearray(2 * sectors + 2)
    for i in range(sectors):
        raw[2 * i] = found[i] >> 8
        raw[2 * i + 1] = found[i] & 0xFF
    c = crc16(raw, 0, 2 * sectors)
    raw[2 * sectors] = c >> 8
    raw[2 * sectors + 1] = c & 0xFF
    with open(path, "wb") as f:
        f.write(raw)
    return found


def store(bdev, journal_path, sectors, feed):
    """The journal's store: a ring of ``sectors`` blocks of ``bdev`` (the
    device littlefs is mounted on), carved at the first boot (``feed``: the
    watchdog's)."""
    path = journal_path + MAP
    blocks = _map(path, sectors, bdev)
    if blocks is None:
        blocks = _carve(path, sectors, bdev, feed)
    return Ring(bdev, blocks)
