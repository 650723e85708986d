"""A NOR flash region in a file, for the emulated shoe's journal ring
(link/ring.py): the block-device protocol rp2.Flash and esp32.Partition
speak, with the rules of the chip behind them enforced, so a test sees what
a board would do wrong. A program only clears bits and must be whole
256-byte pages at a page-aligned offset; a byte other than FF that needs a
bit from 0 back to 1 (a write to flash that was not erased) raises; an erase sets a whole
4096-byte sector to FF. Erases and page programs are counted.

The file is the flash: restarting the VM on it is a power cycle, and a
test that edits it edits the flash as someone holding the chip would.
``failing`` (the dealer channel's ``flash fail``) is a chip worn out or
gone bad: every program and erase fails with EIO from then on, until a
power cycle; reads still work.
"""

import os

SECTOR = 4096
PAGE = 256


class NorFlash:
    def __init__(self, path, sectors):
        self.path = path
        self.sectors = sectors
        size = sectors * SECTOR
        try:
            have = os.stat(path)[6]
        except OSError:
            have = -1
        if have != size:
            with open(path, "wb") as f:  # a new chip: erased
                blank = b"\xff" * PAGE
                for _ in range(sectors * SECTOR // PAGE):
                    f.write(blank)
        self.f = open(path, "r+b")
        self.old = bytearray(PAGE)
        # An erase writes this page over the sector: nothing allocated then,
        # when a shoe with its card set has no 4 KiB block to spare.
        self.blank = bytearray(b"\xff" * PAGE)
        self.erases = 0
        self.pages = 0
        self.failing = False

    def readblocks(self, block, buf, off=0):
        self.f.seek(block * SECTOR + off)
        self.f.readinto(buf)

    def writeblocks(self, block, buf, off=None):
        if off is None:  # the protocol's whole-block form: erase, then program
            self.ioctl(6, block)
            off = 0
        n = len(buf)
        if self.failing:
            raise OSError(5)  # EIO: the program did not verify
        if off % PAGE or n % PAGE or off + n > SECTOR:
            raise OSError(22)  # EINVAL: not whole pages (rp2's flash_range_program)
        old = self.old
        for p in range(0, n, PAGE):
            self.f.seek(block * SECTOR + off + p)
            self.f.readinto(old)
            for i in range(PAGE):
                b = buf[p + i]
                # FF leaves a byte as it is (how a page is programmed again
                # with only some of its bytes new); any other byte that
                # needs a bit set from 0 would be lost on the chip.
                if b != 0xFF and b & ~old[i] & 0xFF:
                    raise OSError(5)  # EIO: a bit set that only an erase can set
                old[i] = b & old[i]
            self.f.seek(block * SECTOR + off + p)
            self.f.write(old)
            self.pages += 1
        self.f.flush()

    def ioctl(self, op, arg):
        if op == 4:
            return self.sectors
        if op == 5:
            return SECTOR
        if op == 6:
            if self.failing:
                raise OSError(5)  # EIO: the erase did not verify
            self.f.seek(arg * SECTOR)
            for _ in range(SECTOR // PAGE):
                self.f.write(self.blank)
            self.f.flush()
            self.erases += 1
            return 0
        return 0
