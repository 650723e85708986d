"""The shoe's real link session (firmware/link, CPython) and the pit's real
HostLink, joined by a wire the test controls, on one virtual clock: no pty,
no thread, no sleep. A test can power-cut the shoe, lose or stall what is on
the wire and restart the bridge, then run the clock and watch the record.

The host link reads ``time.monotonic()``; ``VirtualClock.install`` points
the module's ``time`` at this clock for the test's duration, and the shoe's
board reads the same clock in milliseconds."""

import binascii
import zlib

import host_tools  # noqa: F401  (makes the firmware package importable)
from host_tools.protocol import hostlink
from host_tools.sim import vclock
from host_tools.store import db

from firmware.link import frame
from firmware.link.journal import Journal
from firmware.link.outbox import Outbox
from firmware.link.session import Session
from support.wireboard import WireBoard, config  # noqa: E402

KEY = bytes(range(32))
SHOE = "RIG1"
STEP_MS = 20


class VirtualClock(vclock.VirtualClock):
    """The host link's clock (host_tools/sim/vclock.py), put in place for a test."""

    def install(self, monkeypatch):
        monkeypatch.setattr(hostlink, "time", self)
        return self


def native_crc32_into(data, start, end, out, at):
    """link/frame.py's crc32_into (the IEEE CRC-32, as zlib's) on zlib."""
    out[at:at + 8] = binascii.hexlify(zlib.crc32(bytes(data[start:end])).to_bytes(4, "big"))


def native_crc(monkeypatch):
    """Both ends' frame CRC on zlib for a test's duration (checked equal first)."""
    sample, want, got = b"$E12 {}", bytearray(8), bytearray(8)
    frame.crc32_into(sample, 0, len(sample), want, 0)
    native_crc32_into(sample, 0, len(sample), got, 0)
    assert want == got
    monkeypatch.setattr(frame, "crc32_into", native_crc32_into)


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
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.journal_path = str(tmp_path / "journal.bin")
        self.store = db.Store(str(tmp_path / "pit.db"))
        self.shoe = None
        self.board = None
        self.boots = 0
        self.to_host = bytearray()   # on the wire from the shoe
        self.to_shoe = bytearray()   # on the wire from the bridge
        self.drop_to_host = 0.0      # chance a frame is lost, each way (needs ``rng``)
        self.drop_to_shoe = 0.0
        self.stalled_until = 0.0     # the line carries nothing until then
        self.lose_hellos_until = 0.0  # the shoe's hellos are lost on the wire until then
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

    def _carry(self, data, p, lose_hellos=False):
        """What of ``data`` (whole frames, one a line) gets across: each
        frame is lost with chance ``p``."""
        if not p and not lose_hellos:
            return data
        kept = bytearray()
        for line in data.splitlines(True):
            if lose_hellos and line.startswith(b"$H"):
                continue
            if p and self.rng.random() < p:
                continue
            kept += line
        return bytes(kept)

    def step(self, ms=STEP_MS):
        """``ms`` of time: the shoe runs, the wire delivers (or loses, or
        stalls), the bridge reads and ticks (and reopens a line it found dead,
        as its transport does)."""
        self.clock.t += ms / 1000.0
        stalled = self.clock.t < self.stalled_until
        if self.shoe is None:
            self.to_shoe.clear()  # nothing hears it
        else:
            if self.to_shoe and not stalled:
                data, self.to_shoe = bytes(self.to_shoe), bytearray()
                self.board.inbox += self._carry(data, self.drop_to_shoe)
            self.shoe.step()
            self._collect()
        if self.to_host and not stalled:
            data, self.to_host = bytes(self.to_host), bytearray()
            data = self._carry(data, self.drop_to_host, self.clock.t < self.lose_hellos_until)
            if data:
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


# -- random interleavings -------------------------------------------------------

FAULTS = ("cut", "quick_cuts", "lose", "stall", "lose_hellos", "replay", "bridge", "burst")


class Interleaving:
    """One seed's random schedule of faults over ``span`` virtual seconds,
    each (start, end, kind, size): power cuts (also one falling while the
    shoe is still booting from the last), frames lost each way, a stalled
    line (longer than the link's timeouts too), the shoe's hellos lost, an
    old hello played back, a bridge restart, a burst of events."""

    def __init__(self, rng, span=8.0, most=6):
        self.faults = []
        for _ in range(rng.randint(1, most)):
            start = rng.uniform(0.0, span)
            kind = rng.choice(FAULTS)
            length = {"cut": rng.uniform(0.0, 1.5), "quick_cuts": rng.uniform(0.05, 0.6),
                      "lose": rng.uniform(0.2, 2.0), "stall": rng.uniform(0.2, 4.5),
                      "lose_hellos": rng.uniform(0.2, 2.5)}.get(kind, 0.0)
            self.faults.append((start, start + length, kind, rng.uniform(0.1, 0.7)))
        self.faults.sort()
        self.last_end = max(end for _s, end, _k, _z in self.faults)


def play(rig, rng, plan, bound, event_every=0.35):
    """Run ``plan`` on ``rig`` (shoe on, bridge recording), then clear every
    fault and return the virtual seconds from the end of the last fault until
    the bridge records under the live boot's connection with the store level
    with the shoe (None: not within ``bound``)."""
    t0 = rig.clock.t
    pending = list(plan.faults)
    hellos = []          # the shoe's hello frames seen on the wire, for playback
    back_on = None       # when a cut shoe is powered again
    next_event = t0
    while rig.clock.t - t0 < plan.last_end:
        now = rig.clock.t - t0
        while pending and pending[0][0] <= now:
            start, end, kind, size = pending.pop(0)
            if kind in ("cut", "quick_cuts"):
                rig.power_off()
                back_on = t0 + end
                if kind == "quick_cuts":
                    # it comes back, says hello, and is cut again mid-handshake
                    pending.insert(0, (now + size / 2, end + size, "cut", 0.0))
                    back_on = t0 + now + size / 4
            elif kind == "lose":
                rig.drop_to_host = rig.drop_to_shoe = size
                rig.lose_end = t0 + end
            elif kind == "stall":
                rig.stalled_until = t0 + end
            elif kind == "lose_hellos":
                rig.lose_hellos_until = t0 + end
            elif kind == "replay" and hellos:
                rig.link.feed(rng.choice(hellos))
            elif kind == "bridge":
                rig.start_bridge()
            elif kind == "burst":
                for _ in range(20):
                    rig.event()
        if back_on is not None and rig.clock.t >= back_on and rig.shoe is None:
            rig.power_on()
            back_on = None
        if getattr(rig, "lose_end", None) is not None and rig.clock.t >= rig.lose_end:
            rig.drop_to_host = rig.drop_to_shoe = 0.0
            rig.lose_end = None
        if rig.clock.t >= next_event:
            rig.event()
            next_event = rig.clock.t + rng.expovariate(1.0 / event_every)
        hellos.extend(line for line in bytes(rig.to_host).splitlines(True) if line.startswith(b"$H"))
        rig.step()
    # the last fault is over: everything back to normal
    rig.drop_to_host = rig.drop_to_shoe = 0.0
    rig.stalled_until = rig.lose_hellos_until = 0.0
    rig.lose_end = None
    if rig.shoe is None:
        rig.power_on()
    return rig.run(bound, rig.recording_current)
