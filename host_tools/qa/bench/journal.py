"""`shoe bench journal`: what the shoe's journal asks of the flash, per event.

The firmware's own session deals a seeded shoe in the MicroPython unix VM,
its journal on littlefs (``vfs.VfsLfs2``, the filesystem of the rp2 and
esp32 ports) mounted on a block device written here with the rp2 port's
geometry: 4096-byte erase blocks, littlefs's prog size 256 (rp2's
modules/_boot.py mounts ``VfsLfs2(bdev, progsize=256)``), the Pico's
1408 KiB filesystem. The device counts only what littlefs asks of it:
each erase (ioctl 6), each program call and the 256-byte pages it touches,
and it refuses to program a byte that is not erased (NOR flash turns bits
from 1 to 0 only), so the count cannot undercount a rewrite.

Per event means per event the shoe sends (the session's seq), the figure
issue 35 measured on the stock rp2 port in an RP2040 emulator (1.8 erases,
5.1 page programs per event). A W25Q16's sector erase is 45 ms typical,
400 ms worst; a page program 0.4 ms typical, 3 ms worst (datasheet).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from host_tools import vm
from host_tools.sim import vmcode

BLOCK = 4096
PAGE = 256
BLOCKS = 352   # the RPI_PICO build's filesystem: 1408 KiB


def _pico_ring():
    from host_tools import boards
    return boards.get("pico").get("journal_ring", 0)


RING = _pico_ring()   # the Pico's journal ring, in sectors (boards.toml)

PROGRAM = r"""
class Flash:
    # rp2.Flash as littlefs sees it, counting what littlefs asks of it.
    def __init__(self, blocks, size, page):
        self.size = size
        self.page = page
        self.blocks = blocks
        self.data = bytearray(blocks * size)
        self.ff = b"\xff" * size
        for b in range(blocks):
            self.data[b * size:(b + 1) * size] = self.ff
        self.erases = 0
        self.progs = 0
        self.pages = 0
        self.bytes = 0

    def readblocks(self, block, buf, off=0):
        a = block * self.size + off
        buf[:] = self.data[a:a + len(buf)]

    def writeblocks(self, block, buf, off=None):
        if off is None:  # the simple protocol: erase, then program the block
            self.ioctl(6, block)
            off = 0
        a = block * self.size + off
        d = self.data
        for i in range(len(buf)):
            if d[a + i] & buf[i] != buf[i]:
                raise OSError(5)   # programming a byte that is not erased
            d[a + i] = buf[i]
        self.progs += 1
        self.bytes += len(buf)
        self.pages += (a + len(buf) - 1) // self.page - a // self.page + 1

    def ioctl(self, op, arg):
        if op == 4:
            return self.blocks
        if op == 5:
            return self.size
        if op == 6:
            a = arg * self.size
            self.data[a:a + self.size] = self.ff
            self.erases += 1
        return 0


flash = Flash(%(blocks)d, %(block)d, %(page)d)
vfs.VfsLfs2.mkfs(flash, progsize=%(page)d)
vfs.mount(vfs.VfsLfs2(flash, progsize=%(page)d), "/flash")

import board_config
from baccarat import game
from link.journal import Journal
from link.session import Session

class Clock:
    # The dealer's pace, not this machine's: a card every 500 ms (2 a second,
    # the fastest a dealer draws), so the heartbeat's journaled acks fall
    # the same way in every run.
    t = 0


def ticks():
    return Clock.t


board = SinkBoard()
board.ticks_ms = ticks
store = None
if %(ring)d:  # the boards' journal: a ring carved out of the littlefs (boards/ring_flash.py)
    from boards import ring_flash
    from link.ring import RingJournal
    store = ring_flash.store(flash, "/flash/journal.bin", %(ring)d, lambda: None)
    journal = RingJournal("/flash/journal.bin", store)
else:
    journal = Journal("/flash/journal.bin")
s = Session(board, board_config, journal)
s.boot()
s.up = True
deck = shuffled_deck(8, %(seed)d)
at = 0
shoes = 0
base = None
while shoes < %(shoes)d:
    s.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
    s.step()
    s.acked_to(s.seq)
    if base is None:   # from the first shoe's start: the boot's own writes are not per event
        base = (flash.erases, flash.progs, flash.pages, flash.bytes, s.seq)
    while s.game.phase != game.NO_SHOE and at < min(len(deck), %(cards)d):
        if s.game.phase == game.OPEN:
            s.bets()
        else:
            s.card(deck[at], False)
            at += 1
        Clock.t += 500
        s.step()
        s.acked_to(s.seq)
        s.last_rx = Clock.t
    if s.game.phase != game.NO_SHOE:
        s.empty()
        s.step()
        s.acked_to(s.seq)
    shoes += 1
    at = 0
print("flash", at, s.seq - base[4], flash.erases - base[0], flash.progs - base[1], flash.pages - base[2],
      flash.bytes - base[3], store.path_erases if store is not None else -1)
"""


def measure(shoes=1, seed=7, cards=416, ring=RING):
    """{"events", "erases", "programs", "pages", "bytes", "path_erases"} for
    ``shoes`` 8-deck shoes dealt from the seeded order (at most ``cards``
    cards of each, then the empty sensor), counted from the first shoe's
    start. ``ring``: the journal on a ring of that many sectors carved out of
    the littlefs, as the boards keep it (``path_erases``: the ones that fell
    on an input's write rather than between inputs); 0: a littlefs file."""
    from host_tools.sim.emulate import Emulator
    with tempfile.TemporaryDirectory() as tmp:
        flash = os.path.join(tmp, "flash")
        emu = Emulator(flash, "JRNL1")   # stages the emulated shoe's image and board_config
        emu.close()
        prog = os.path.join(tmp, "journal_bench.py")
        with open(prog, "w") as f:
            # The shared VM code holds % signs of its own: it is not formatted.
            f.write("import vfs\n" + vmcode.SINK_BOARD + vmcode.SHUFFLED_DECK
                    + PROGRAM % {"blocks": BLOCKS, "block": BLOCK, "page": PAGE, "seed": seed, "shoes": shoes,
                                 "cards": cards, "ring": ring})
        cmd = vm.micropython_cmd([prog], heap="%dk" % (emu.heap // 1024 + BLOCKS * BLOCK // 1024 + 256))
        # The boards' ring carving is not on the emulated shoe's image.
        shutil.copy(os.path.join(vm.FIRMWARE, "boards", "ring_flash.py"), os.path.join(flash, "boards"))
        proc = subprocess.run(cmd, env=dict(os.environ, MICROPYPATH=flash), cwd=flash,
                              capture_output=True, text=True, timeout=1800)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("flash ")]
    if proc.returncode or not lines:
        raise SystemExit("the VM failed:\n%s%s" % (proc.stdout, proc.stderr[-2000:]))
    _, _, events, erases, programs, pages, written, path = lines[-1].split()
    return {"events": int(events), "erases": int(erases), "programs": int(programs),
            "pages": int(pages), "bytes": int(written), "path_erases": int(path)}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shoe bench journal", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shoes", type=int, default=1, help="8-deck shoes to deal (default 1)")
    parser.add_argument("--seed", type=int, default=7, help="the shuffled order")
    parser.add_argument("--cards", type=int, default=416, help="cards dealt per shoe at most (default: all)")
    parser.add_argument("--ring", type=int, default=RING, metavar="SECTORS",
                        help="the journal on a ring of SECTORS raw sectors carved out of the littlefs, "
                             "as the boards keep it (default %d, the Pico's); 0: a littlefs file" % RING)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.shoes < 1:
        parser.error("--shoes must be at least 1")
    got = measure(args.shoes, args.seed, args.cards, args.ring)
    if args.json:
        print(json.dumps(got, sort_keys=True))
        return 0
    n = max(1, got["events"])
    where = ("a ring of %d raw sectors carved out of littlefs" % args.ring) if args.ring else "a littlefs file"
    print("journal on %s, rp2 geometry (%d-byte blocks, prog size %d, %d blocks): %d events"
          % (where, BLOCK, PAGE, BLOCKS, got["events"]))
    print("  sector erases   %6d  %.2f per event" % (got["erases"], got["erases"] / n))
    if args.ring:
        print("    of them on an input's write %d (the rest between inputs, after the sends)"
              % got["path_erases"])
    print("  program calls   %6d  %.2f per event" % (got["programs"], got["programs"] / n))
    print("  pages programmed %5d  %.2f per event (%d bytes, %.0f per event)"
          % (got["pages"], got["pages"] / n, got["bytes"], got["bytes"] / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
