"""One shoe stream: the firmware's own shoe under CPython, for everything
that needs a shoe without a MicroPython VM (the pit's stand-in tables, the
casino's simulated tables, benches, soaks, tests).

Nothing here writes an event. A ``ShoeStream`` is the shoe's session
(firmware/link/session.py on the device-agnostic link core,
firmware/link/core.py: game, journal, outbox, tag chain, acks, go-back-N,
heartbeats, checkpoints) on a board made of host parts, dealt by the
simulated dealer (host_tools/sim/dealer.py) one dealing-script line at a time,
exactly as firmware/main.py feeds it from the emulator's dealer channel. So
every event it makes is one the firmware makes (it passes the link schema
by construction), numbered, chained and signed by the firmware's code.

Two ways to take the events out:

- **on a wire** (``fd``: a pty's master, ``host_tools.sim.standin``): the
  session speaks link v2 over it as a shoe does (the hello with the host's
  challenge, the window, resends, heartbeats, acks checked against the
  shoe key); a real bridge or pit is the host;
- **as a stream** (``next()``): each event is taken in order with its tag
  and the tag before it, and acknowledged at once through the session's own
  ``acked_to``, as a host that stores everything would. The casino's
  simulated tables write these straight into a pit store
  (host_tools/sim/simtable.py).

Cost. The stream signs with ``HostSigner``, the same tag made by CPython's
``hmac`` over ``host_frames.frame_message`` (whose bytes equal the shoe's
``FrameSigner``'s: tests/test_link_v2*.py, and tests/e2e/test_shoestream.py for
this class), with the key's inner and outer hashes made once and copied per
tag; ``--shoe-signer`` signs with the firmware's own ``FrameSigner`` instead
(``python -m host_tools.sim.shoestream`` prints both figures). Enough for
the casino bench's backlog (100 shoes x 2,000 events) and for hundreds of
tables at a dealer's pace, so nothing is pre-recorded and re-signed.

The journal is the firmware's, in files under ``workdir`` (a temporary
directory by default, removed by ``close``): two open files per shoe.
"""

import collections
import hashlib
import hmac
import os
import secrets
import shutil
import tempfile
import time

from host_tools.sim import dealer

from firmware.baccarat import script
from firmware.link import auth, host_frames, journal, proto, session

FIRMWARE_VERSION = "stream-1"   # what the stream's hellos and boot events say the firmware is
BOARD = "stream"
NEXT_SHOE = 1000                # the dealer's seed moves on by this much per shoe
CARD_PREFIX = b'{"type":"card"'
SHOE_PREFIX = b'{"type":"shoe"'


class HostSigner:
    """``auth.FrameSigner``'s ``sign_into`` with CPython's ``hmac``: the same
    bytes (the message layout is host_frames.frame_message), the keyed
    state made once and copied per tag."""

    def __init__(self, shoe_key, shoe_id):
        self.base = hmac.new(auth.frames_key(shoe_key), digestmod=hashlib.sha256)
        self.id = shoe_id.encode() if isinstance(shoe_id, str) else bytes(shoe_id)

    def sign_into(self, kind, seq, link, lstart, lend, payload, start, end, out, at):
        h = self.base.copy()
        h.update(host_frames.frame_message(self.id, kind, seq, bytes(link[lstart:lend]),
                                           bytes(payload[start:end])))
        out[at:at + proto.MAC_HEX] = h.digest()[:proto.MAC_BYTES].hex().encode()


class Config:
    """The board_config module a board's bring-up would read (the fields
    the link core takes)."""

    def __init__(self, shoe_id):
        self.SHOE_ID = shoe_id
        self.BOARD = BOARD
        self.FIRMWARE_VERSION = FIRMWARE_VERSION


class Board:
    """The board contract (docs/design.md) from host parts: the clock is
    the CPython substitute of firmware/clock.py, the host link a non-blocking
    fd (or nothing: frames go nowhere), the journal a file in ``workdir``."""

    def __init__(self, key, workdir, fd=None, secure=None, manifest=""):
        self._key = key
        self.secure_element = secure   # drivers.atecc608.ATECC608 or None, as a board has
        self.manifest = manifest       # what main.py's boot check would set
        self.journal_path = os.path.join(workdir, "journal.bin")
        self.fd = fd
        self.pending = bytearray()   # bytes the pty did not take yet
        self.written = 0

    @staticmethod
    def ticks_ms():
        return int(time.monotonic() * 1000)

    @staticmethod
    def ticks_diff(a, b):
        return a - b

    def key(self):
        return self._key

    def feed(self):
        pass

    def link_read(self, buf):
        if self.fd is None:
            return 0
        try:
            return os.readv(self.fd, [buf])
        except (BlockingIOError, OSError):
            return 0

    def link_write(self, buf, n):
        if self.fd is None:
            return
        self.written += n
        self._write(bytes(buf[:n]))

    def _write(self, data):
        if self.pending:
            self.pending += data
            return
        try:
            n = os.write(self.fd, data)
        except BlockingIOError:
            n = 0
        except OSError:
            return  # nobody holds the port: lost, as on an unplugged cable
        if n < len(data):
            self.pending += data[n:]

    def flush(self):
        """Write what the pty would not take before (a bounded buffer: a
        line nobody reads for long drops frames, as a cable would)."""
        if self.pending:
            data, self.pending = bytes(self.pending), bytearray()
            self._write(data[-65536:])


class _Session(session.Session):
    """The shoe's session, watched: every event the session makes and every
    frame it sends pass one method each (core.Link's ``_emit`` and
    ``_send``), which the stream observes and passes on unchanged."""

    watcher = None

    def _emit(self, buf, n):
        seq = self.seq
        session.Session._emit(self, buf, n)
        if self.seq != seq and self.watcher is not None:
            self.watcher.made(self.seq, buf, n)

    def _send(self, kind, seq, buf, start, end, tag, at):
        session.Session._send(self, kind, seq, buf, start, end, tag, at)
        if self.watcher is not None:
            self.watcher.sent(kind, seq)


def dealer_lines(seed=0, decks=8, irregularities=0.0):
    """Shoe after shoe from the simulated dealer, the seed moving on by
    ``NEXT_SHOE`` per shoe: an endless dealing script."""
    while True:
        yield from dealer.Dealer(seed, decks=decks, irregularity_rate=irregularities).lines()
        seed += NEXT_SHOE


class ShoeStream:
    """One shoe. ``lines``: the dealing script to deal (default: the
    simulated dealer from ``seed``, shoe after shoe, never ending)."""

    def __init__(self, shoe_id, key=None, seed=0, decks=8, irregularities=0.0, lines=None, fd=None,
                 workdir=None, on_event=None, on_frame=None, secure=None, manifest="", journal_from=None):
        self.shoe_id = shoe_id
        self.key = key if key is not None else secrets.token_bytes(32)
        self.dir = tempfile.mkdtemp(prefix="shoestream-%s-" % shoe_id, dir=workdir)
        self.board = Board(self.key, self.dir, fd, secure, manifest)
        if journal_from is not None:  # a journal restored from a copy (tests of rollback)
            for name in os.listdir(journal_from):
                shutil.copy(os.path.join(journal_from, name), self.dir)
        self.lines = iter(lines) if lines is not None else dealer_lines(seed, decks, irregularities)
        self.session = _Session(self.board, Config(shoe_id), journal.Journal(self.board.journal_path))
        self.session.signer = HostSigner(self.key, shoe_id)
        self.session.watcher = self
        self.on_event = on_event      # fn(seq, body bytes) for every event the shoe makes
        self.on_frame = on_frame      # fn(kind, seq) for every frame the shoe sends
        self.queue = collections.deque()
        self._tag = auth.ZERO_MAC     # the tag of the last event queued
        self.seq = 0                  # the last event next() gave
        self.prev = auth.ZERO_MAC     # its tag: the PREV of the next one
        self.session.boot(None)

    # -- the shoe's inputs ---------------------------------------------------------

    def action(self):
        """Feed the next dealing-script line (one dealer action), then one
        step of the shoe's loop (checkpoints and sending happen there).
        False once the script is over."""
        try:
            line = next(self.lines)
        except StopIteration:
            return False
        message = script.feed_line(self.session, line)
        if message is not None:
            self.session.error(message)  # as firmware/main.py does with a bad dealer line
        self.session.step()
        return True

    def step(self):
        """One pass of the shoe's link: read the wire, resend, beat."""
        self.session.step()

    # -- watching the session --------------------------------------------------------

    def made(self, seq, buf, n):
        if self.on_event is not None:
            self.on_event(seq, bytes(buf[:n]))

    def sent(self, kind, seq):
        if self.on_frame is not None:
            self.on_frame(kind, seq)

    # -- the stream -------------------------------------------------------------------

    def next(self):
        """(seq, event bytes, tag, prev tag) of the next event, tags as 32
        hex bytes; each is acknowledged to the session as it is taken.
        StopIteration when a finite script is over. Not on a wire, where
        the host acknowledges."""
        if self.board.fd is not None:
            raise RuntimeError("shoe stream %s is on a wire: its host takes its events" % self.shoe_id)
        while not self.queue:
            if not self._take() and not self.action():
                raise StopIteration
        got = self.queue.popleft()
        self.seq, self.prev = got[0], got[2]
        return got

    def _take(self):
        """Move the session's unacknowledged events into the queue, each
        signed onto the chain by the session (``acked_to``)."""
        s = self.session
        box = s.outbox
        got = False
        while s.acked < s.seq:
            if not box.holds(s.acked + 1):
                if s.spilled and box.count == 0:
                    s.RECOVERY.refill(s)   # events beyond the ring live in the journal
                    if box.holds(s.acked + 1):
                        continue
                raise RuntimeError("shoe stream %s: event %d is neither in the outbox nor the "
                                   "journal" % (self.shoe_id, s.acked + 1))
            seq = s.acked + 1
            slot = box.slot(seq)
            off = box.off[slot]
            body = bytes(box.data[off:off + box.len[slot]])
            s.acked_to(seq)
            tag = bytes(s.acked_tag)
            self.queue.append((seq, body, tag, self._tag))
            self._tag = tag
            got = True
        return got

    def skip_to(self, seq, tag=None):
        """Deal on to event ``seq`` (a restarted table carries on from its
        store). The stream is deterministic, so ``tag`` (the stored tag of
        ``seq``), when given, must be the one it makes: ValueError if not."""
        while self.seq < seq:
            self.next()
        if tag is not None and self.prev != (tag.encode() if isinstance(tag, str) else tag):
            raise ValueError("shoe %s: the stored tag of seq %d is not this stream's (another "
                             "key or seed made that store)" % (self.shoe_id, seq))
        return self

    def close(self):
        """Close the journal and remove its directory (the stream's own,
        under ``workdir`` when one was given)."""
        self.session.journal.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def main(argv=None):
    """``python -m host_tools.sim.shoestream [--events N] [--shoe-signer]``:
    events per second of one stream on this machine (the figure the module
    docstring quotes), with the stream's signer or the shoe's own."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m host_tools.sim.shoestream", description=main.__doc__)
    p.add_argument("--events", type=int, default=20000)
    p.add_argument("--shoe-signer", action="store_true",
                   help="sign with the firmware's own signer (auth.FrameSigner)")
    args = p.parse_args(argv)
    stream = ShoeStream("BENCH", seed=1)
    if args.shoe_signer:
        stream.session.signer = auth.FrameSigner(stream.key, stream.shoe_id)
    try:
        t = time.perf_counter()
        for _ in range(args.events):
            stream.next()
        took = time.perf_counter() - t
    finally:
        stream.close()
    print("%d events in %.2f s: %.0f events/s (%s signer)" % (
        args.events, took, args.events / took, "the shoe's" if args.shoe_signer else "the stream's"))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
