"""A fault-injecting relay between two serial devices, for link testing.

A real USB or RS-485 run drops, corrupts and repeats bytes; the link protocol
must ride through all three with nothing lost or stored twice. The relay
opens a fresh pty for the bridge side, connects it to the shoe's device, and
copies bytes both ways, damaging them with seeded probabilities so a failing
run can be reproduced exactly.

    relay = Relay("/dev/pts/7", seed=3, drop=0.002, corrupt=0.002, duplicate=0.002)
    relay.start()          # relay.path is the device to give the bridge
    ...
    relay.stop()

Two harsher faults serve `shoe soak noise` (both off unless asked for):

- ``reorder``: per byte, the chance that it is held back and delivered after
  the next 1..16 bytes going the same way (at the latest at the end of the
  next chunk in that direction), so frames arrive with bytes swapped, or
  with a byte of one frame inside the next;
- ``garbage``: per chunk read, the chance that a long garbage line (100 to
  3000 bytes: random bytes, or printable text that opens a frame with ``$``
  and never closes it) is sent before the chunk, as from a babbling device
  on the line.

``faults`` counts each kind injected: the three byte faults always, and
``reordered`` / ``garbage_lines`` when those are enabled. With both off the
relay draws exactly the random numbers it always did, so a seed reproduces
the same damage as before they existed.
"""

import os
import random
import threading
import tty

from host_tools.sim import ptys

REORDER_SPAN = 16           # a held byte comes out after at most this many later bytes
GARBAGE_LEN = (100, 3000)   # bytes in one garbage line


class Relay:
    def __init__(self, shoe_path, seed=0, drop=0.0, corrupt=0.0, duplicate=0.0,
                 reorder=0.0, garbage=0.0):
        self.shoe_path = shoe_path
        self.rng = random.Random(seed)
        self.drop = drop
        self.corrupt = corrupt
        self.duplicate = duplicate
        self.reorder = reorder
        self.garbage = garbage
        self.master, self._slave, self.path = ptys.open_raw()
        self.shoe = os.open(shoe_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.shoe)
        self.faults = {"dropped": 0, "corrupted": 0, "duplicated": 0}
        if reorder:
            self.faults["reordered"] = 0
        if garbage:
            self.faults["garbage_lines"] = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        ptys.close(self.master, self._slave, self.shoe)

    def _damage(self, data):
        out = bytearray()
        rng = self.rng
        held = []  # [bytes still to pass, byte] of reordered bytes
        if self.garbage and rng.random() < self.garbage:
            self.faults["garbage_lines"] += 1
            out += self._garbage_line()
        for b in data:
            r = rng.random()
            if r < self.drop:
                self.faults["dropped"] += 1
                continue
            r -= self.drop
            if r < self.corrupt:
                self.faults["corrupted"] += 1
                self._put(out, held, b ^ (1 << rng.randrange(8)))
                continue
            r -= self.corrupt
            if r < self.duplicate:
                self.faults["duplicated"] += 1
                self._put(out, held, b)
                self._put(out, held, b)
                continue
            r -= self.duplicate
            if r < self.reorder:
                self.faults["reordered"] += 1
                held.append([rng.randint(1, REORDER_SPAN), b])
                continue
            self._put(out, held, b)
        # Held bytes never wait past the end of their chunk: a quiet line
        # would otherwise keep them for ever.
        for h in held:
            out.append(h[1])
        return bytes(out)

    @staticmethod
    def _put(out, held, b):
        out.append(b)
        if held:
            for h in held:
                h[0] -= 1
            while held and held[0][0] <= 0:
                out.append(held.pop(0)[1])

    def _garbage_line(self):
        rng = self.rng
        n = rng.randint(*GARBAGE_LEN)
        if rng.random() < 0.5:
            return bytes(rng.getrandbits(8) for _ in range(n)) + b"\n"
        return b"$" + bytes(rng.randint(0x20, 0x7E) for _ in range(n)).replace(b"$", b"#") + b"\n"

    def _run(self):
        ptys.relay(self.master, self.shoe, self._stop.is_set, lambda _src, data: self._damage(data))
