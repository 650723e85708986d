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
"""

import os
import random
import threading
import tty

from host_tools import ptys


class Relay:
    def __init__(self, shoe_path, seed=0, drop=0.0, corrupt=0.0, duplicate=0.0):
        self.shoe_path = shoe_path
        self.rng = random.Random(seed)
        self.drop = drop
        self.corrupt = corrupt
        self.duplicate = duplicate
        self.master, self._slave, self.path = ptys.open_raw()
        self.shoe = os.open(shoe_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.shoe)
        self.faults = {"dropped": 0, "corrupted": 0, "duplicated": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        for fd in (self.master, self._slave, self.shoe):
            try:
                os.close(fd)
            except OSError:
                pass

    def _damage(self, data):
        out = bytearray()
        rng = self.rng
        for b in data:
            r = rng.random()
            if r < self.drop:
                self.faults["dropped"] += 1
                continue
            r -= self.drop
            if r < self.corrupt:
                self.faults["corrupted"] += 1
                out.append(b ^ (1 << rng.randrange(8)))
                continue
            r -= self.corrupt
            out.append(b)
            if r < self.duplicate:
                self.faults["duplicated"] += 1
                out.append(b)
        return bytes(out)

    def _run(self):
        ptys.relay(self.master, self.shoe, self._stop.is_set, lambda _src, data: self._damage(data))
