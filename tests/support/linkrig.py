"""The shoe's real link session (firmware/link, CPython) and the pit's real
HostLink, joined by a wire the test controls, on one virtual clock: no pty,
no thread, no sleep. A test can power-cut the shoe, lose or stall what is on
the wire and restart the bridge, then run the clock and watch the record.

The host link reads ``time.monotonic()``; ``VirtualClock.install`` points
the module's ``time`` at this clock for the test's duration, and the shoe's
board reads the same clock in milliseconds."""

import time as _time

import host_tools  # noqa: F401  (puts the firmware's modules on the path)
from host_tools.protocol import hostlink
from host_tools.store import db

from link.journal import Journal  # noqa: E402
from link.outbox import Outbox  # noqa: E402
from link.session import Session  # noqa: E402
from support.wireboard import WireBoard, config  # noqa: E402

KEY = bytes(range(32))
SHOE = "RIG1"
STEP_MS = 20


class VirtualClock:
    """``time`` as the host link uses it, moved by the test."""

    def __init__(self, start=1000.0):
        self.t = start

    def monotonic(self):
        return self.t

    def time(self):
        return 1.7e9 + self.t

    strftime = staticmethod(_time.strftime)
    localtime = staticmethod(_time.localtime)

    def install(self, monkeypatch):
        monkeypatch.setattr(hostlink, "time", self)
        return self


class ClockBoard(WireBoard):
    """The WireBoard whose clock is the rig's."""

    def __init__(self, clock, key):
        super().__init__(key)
        self.clock = clock

    def ticks_ms(self):
        return int(self.clock.t * 1000)


class Rig:
    """One shoe (power it on and off), one wire, one bridge (restart it)."""

    def __init__(self, tmp_path, clock):
        self.clock = clock
        self.journal_path = str(tmp_path / "journal.bin")
        self.store = db.Store(str(tmp_path / "pit.db"))
        self.shoe = None
        self.board = None
        self.boots = 0
        self.to_host = bytearray()   # on the wire from the shoe
        self.to_shoe = bytearray()   # on the wire from the bridge
        self.drop_to_host = 0.0      # chance a step's bytes are lost, each way
        self.drop_to_shoe = 0.0
        self.stalled_until = 0.0     # the line carries nothing until then
        self.rng = None
        self.link = None
        self.start_bridge()

    # -- the parts ------------------------------------------------------------

    def start_bridge(self):
        """A new HostLink on the same store (a bridge restart), line attached."""
        if self.link is not None:
            self.link.close(detached=True)
        self.link = hostlink.HostLink(self.store, KEY, name="rig", send=self._send)
        self.link.attach()

    def _send(self, data):
        self.to_shoe += data
        return True

    def power_on(self):
        self.boots += 1
        self.board = ClockBoard(self.clock, KEY)
        self.shoe = Session(self.board, config(SHOE), Journal(self.journal_path), Outbox())
        self.shoe.boot()
        self._collect()

    def power_off(self):
        """A cut: the shoe's memory and what it had not yet put on the wire are gone."""
        if self.shoe is not None:
            self.shoe.journal.close()
        self.shoe = self.board = None
        self.to_shoe.clear()

    def event(self):
        """The shoe says something (a status event), if it is on."""
        if self.shoe is not None and self.shoe.halt is None:
            self.shoe.status()
            self._collect()

    # -- time -----------------------------------------------------------------

    def _collect(self):
        if self.board is not None:
            self.to_host += self.board.sent
            self.board.sent = bytearray()

    def _lost(self, p):
        return p and self.rng is not None and self.rng.random() < p

    def step(self, ms=STEP_MS):
        """``ms`` of time: the shoe runs, the wire delivers (or loses, or
        stalls), the bridge reads and ticks (and reopens a line it found dead,
        as its transport does)."""
        self.clock.t += ms / 1000.0
        stalled = self.clock.t < self.stalled_until
        if self.shoe is not None:
            if self.to_shoe and not stalled:
                data, self.to_shoe = bytes(self.to_shoe), bytearray()
                if not self._lost(self.drop_to_shoe):
                    self.board.inbox += data
            self.shoe.step()
            self._collect()
        if self.to_host and not stalled:
            data, self.to_host = bytes(self.to_host), bytearray()
            if not self._lost(self.drop_to_host):
                self.link.feed(data)
        dead = self.link.tick()
        if dead is not None:
            self.link.detach(dead)
            self.link.attach()

    def run(self, seconds, until=None):
        """Step for up to ``seconds``; stop early once ``until()`` holds.
        Returns the virtual seconds it took, or None if it never held."""
        start = self.clock.t
        while self.clock.t - start < seconds:
            if until is not None and until():
                return self.clock.t - start
            self.step()
        return None if until is not None and not until() else self.clock.t - start

    # -- what the test looks at -------------------------------------------------

    def stored(self):
        return self.store.last_seq(SHOE) or 0

    def recording_current(self):
        """The bridge says RECORDING, under the live boot's connection, and
        the shoe has taken its acks up to what the store holds."""
        s = self.shoe
        if s is None or self.link.hello is None:
            return False
        return (self.link.recording()[0] and self.link.hello["nonce"] == s.nonce.decode()
                and s.acked == self.stored() == s.seq)
