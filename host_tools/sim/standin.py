"""Light stand-in shoes: recorded, signed link-v2 streams replayed over ptys.

`shoe bench pit` and `shoe demo --tables N --serve` need many tables whose
shoes cost the pit PC nothing, so that what is measured (or watched) is the
pit server. A stand-in is not a second shoe implementation: it replays the
event bodies a real run of the firmware produced (``record``: the firmware
in the MicroPython VM, dealt a seeded shoe, its store read back), and every
frame it writes is made by the firmware's own code under CPython — the frame
codec (link/frame.py), the hello, heartbeat and checkpoint writers
(link/reports.py, into the firmware's JsonOut) and the tag layout
(link/host_frames.frame_mac) — while the host's acks are checked with the
shoe's own ``auth.verify_host``. What a stand-in does that a shoe does:

- answers each hello request with a hello that covers the host's challenge
  and carries a fresh nonce, its last seq, acked seq and the acked event's tag;
- chains every event's tag to the previous one (zeros at seq 1), keeps at
  most ``proto.WINDOW`` events unacknowledged on the line, resends from the
  first unacknowledged one when no ack came for ``proto.RETRANSMIT_MS``
  (go-back-N), and sends a heartbeat after ``proto.HEARTBEAT_MS`` of silence;
- deals shoe after shoe: the recorded shoe (from its ``shoe`` event to its
  end) again and again, the seq and the tag chain running on, checkpoint
  events rebuilt with their new ``through``.

One thread drives every stand-in (``Floor``) with a selector, so hundreds of
tables cost one process a few percent of a core.
"""

import heapq
import json
import os
import random
import secrets
import selectors
import sqlite3
import threading
import time

from host_tools.sim import ptys
from host_tools.sim.rigs.bridge import DEALT_TYPES

from baccarat.jsonout import JsonOut  # noqa: E402
from link import auth, frame, host_frames, proto, reports  # noqa: E402

PACE_S = 0.5          # a real dealer's pace: one card (or dealer action) every half second
OUT_BYTES = 1024


class Recording:
    """One shoe as the firmware told it: the event bodies in seq order, and
    what its hello said of itself (fw, board, settings digest)."""

    def __init__(self, bodies, fw, board, settings):
        self.bodies = bodies
        self.fw = fw
        self.board = board
        self.settings = settings
        types = [json.loads(b).get("type") for b in bodies]
        start = types.index("shoe")
        self.opening = bodies[:start]        # boot, link_up: once per power-on
        self.groups = _groups(bodies[start:], types[start:])
        self.cards = types.count("card")

    def save(self, path):
        with open(path, "w") as f:
            json.dump({"fw": self.fw, "board": self.board, "settings": self.settings,
                       "events": [b.decode() for b in self.bodies]}, f)

    @classmethod
    def load(cls, path):
        with open(path) as f:
            data = json.load(f)
        return cls([e.encode() for e in data["events"]], data["fw"], data["board"], data["settings"])


def _groups(bodies, types):
    """The events a dealer action brings, one group per action: the dealt
    event (its line's one event, rig.DEALT_TYPES) and every event the shoe
    says in consequence (counts, result, last_hand, shoe_end, checkpoint)."""
    groups = []
    for body, kind in zip(bodies, types):
        if kind in DEALT_TYPES or not groups:
            groups.append([])
        groups[-1].append((body, kind))
    return groups


def record(workdir, seed=7, irregularities=0.03):
    """Deal one seeded 8-deck shoe into the firmware in the MicroPython VM
    (as `shoe demo` does) and read back what its store received."""
    from host_tools.sim import dealer
    from host_tools.sim.rigs.bridge import Feeder, ThreadedBridge
    from host_tools.sim.emulate import Emulator

    shoe_id = "REC1"
    store = os.path.join(workdir, "recording.db")
    emu = Emulator(os.path.join(workdir, "recording.flash"), shoe_id)
    emu.start()
    bridge = ThreadedBridge(store, emu.host_path, emu.key)
    try:
        Feeder(emu, dealer.Dealer(seed, irregularity_rate=irregularities).lines(), bridge,
               stall=60).finish()
    finally:
        bridge.close()
        emu.close()
    con = sqlite3.connect(store)
    try:
        bodies = [r[0].encode() for r in con.execute(
            "SELECT event FROM events WHERE shoe_id = ? ORDER BY seq", (shoe_id,))]
        hello = json.loads(con.execute("SELECT settings FROM shoes WHERE shoe_id = ?",
                                       (shoe_id,)).fetchone()[0])
    finally:
        con.close()
    return Recording(bodies, hello["fw"], hello["board"], hello["settings"])


class StandIn:
    """One table's shoe. The attribute names ``out``, ``fw``, ``board_name``,
    ``shoe_id``, ``seq``, ``acked``, ``counter``, ``tilt``, ``halt``, ``nonce``
    and ``acked_tag`` are the ones link/reports.py reads from a session."""

    def __init__(self, shoe_id, recording, key=None, loops=True):
        self.shoe_id = shoe_id
        self.key = key or secrets.token_bytes(32)
        self.fkey = auth.frames_key(self.key)
        self.rec = recording
        self.loops = loops
        self.master, self.slave, self.path = ptys.open_raw(nonblocking=True)
        self.decoder = frame.Decoder()
        self.out = JsonOut(OUT_BYTES)
        self.fbuf = bytearray(frame.MAX_FRAME)
        self.fw = recording.fw
        self.board_name = recording.board
        self.settings = recording.settings
        self.counter = 0
        self.tilt = None
        self.halt = None
        self.nonce = b""
        self.seq = 0                # last event made
        self.sent = 0               # last event written since the last go-back
        self.acked = 0
        self.acked_tag = auth.ZERO_MAC
        self.tags = {0: auth.ZERO_MAC}
        self.payloads = {}          # seq -> signed payload, until acked
        self.sent_at = {}           # seq -> when it was last written
        self.pending = bytearray()  # bytes the pty did not take yet
        self.last_tx = 0.0
        self._now = 0.0
        self.up = False             # a verified ack has come since the last hello
        self.group = -1             # -1: the opening (boot) events are next
        self.card_seqs = []         # (seq, dealt at) of every card made
        self.acked_at = {}          # card seq -> when the ack covering it arrived
        self.stats = {"hellos": 0, "acks": 0, "bad_acks": 0, "resends": 0, "held": 0, "beats": 0,
                      "shoes": 0}

    # -- what a session gives link/reports.py --------------------------------

    def settings_digest(self):
        return self.settings

    # -- making events --------------------------------------------------------

    def deal(self, now):
        """The next dealer action: its events join the queue, chained and signed."""
        if self.group < 0:
            items = [(b, None) for b in self.rec.opening]
            self.group = 0
        else:
            if self.group >= len(self.rec.groups):
                if not self.loops:
                    return False
                self.group = 0
            items = self.rec.groups[self.group]
            self.group += 1
        for body, kind in items:
            if kind == "checkpoint":
                reports.checkpoint(self.out, self.seq)
                body = bytes(self.out.buf[:self.out.n])
            elif kind == "shoe":
                self.stats["shoes"] += 1
            self.seq += 1
            tag = host_frames.frame_mac(self.fkey, self.shoe_id, proto.EVENT, self.seq,
                                        self.tags[self.seq - 1], body)
            self.tags[self.seq] = tag
            self.payloads[self.seq] = body + b" " + tag
            if kind == "card":
                self.card_seqs.append((self.seq, now))
        return True

    # -- the line -------------------------------------------------------------

    def _frame(self, kind, seq, payload):
        n = frame.encode(self.fbuf, kind, seq, payload, 0, len(payload))
        self._write(bytes(self.fbuf[:n]))

    def _write(self, data):
        if self.pending:
            self.pending += data
            return
        try:
            n = os.write(self.master, data)
        except BlockingIOError:
            n = 0
        except OSError:
            return  # nobody holds the port: lost, as on an unplugged cable
        if n < len(data):
            self.pending += data[n:]

    def flush_pending(self):
        if self.pending:
            data, self.pending = bytes(self.pending), bytearray()
            self._write(data)

    def pump(self, now):
        """Write what the window allows; resend, or beat, when it is time."""
        if not self.up:
            return
        if self.sent > self.acked and now - self.sent_at.get(self.acked + 1, now) > proto.RETRANSMIT_MS / 1000:
            self.sent = self.acked  # go-back-N
            self.stats["resends"] += 1
        if self.seq > self.acked + proto.WINDOW:
            self.stats["held"] += 1
        while self.sent < self.seq and self.sent < self.acked + proto.WINDOW:
            self.sent += 1
            self.sent_at[self.sent] = now
            self._frame(proto.EVENT, self.sent, self.payloads[self.sent])
            self.last_tx = now
        if now - self.last_tx > proto.HEARTBEAT_MS / 1000:
            reports.beat(self)
            body = bytes(self.out.buf[:self.out.n])
            self._frame(proto.BEAT, 0, body + b" " + host_frames.frame_mac(
                self.fkey, self.shoe_id, proto.BEAT, 0, proto.NO_CHALLENGE, body))
            self.last_tx = now
            self.stats["beats"] += 1

    def read(self, now):
        try:
            data = os.read(self.master, 4096)
        except (BlockingIOError, OSError):
            return
        self._now = now
        self.decoder.feed(data, len(data), self)

    # frame.Decoder handler
    def on_frame(self, dec):
        payload = bytes(dec.buf[dec.pstart:dec.pend])
        if dec.kind == proto.HELLO:
            _version, _sp, challenge = payload.partition(b" ")
            self._hello(challenge)
        elif dec.kind == proto.ACK:
            self._ack(dec.seq, payload)
        # B from the host only keeps the line alive; C: the bench sends none.

    def on_bad(self, dec, code, message):
        pass  # the host's frames are not under test here

    def _hello(self, challenge):
        self.nonce = auth.new_nonce()
        self.acked_tag = self.tags.get(self.acked, auth.ZERO_MAC)
        reports.hello(self)
        body = bytes(self.out.buf[:self.out.n])
        self._frame(proto.HELLO, self.seq, body + b" " + host_frames.frame_mac(
            self.fkey, self.shoe_id, proto.HELLO, self.seq, challenge, body))
        self.last_tx = self._now
        self.sent = self.acked  # everything unacknowledged goes again after a hello
        self.up = False
        self.stats["hellos"] += 1

    def _ack(self, seq, payload):
        try:
            auth.verify_host(self.key, self.shoe_id, self.nonce, "A", seq, payload)
        except proto.Rejected:
            self.stats["bad_acks"] += 1
            return
        self.stats["acks"] += 1
        self.up = True
        if seq <= self.acked or seq > self.seq:
            return
        for s in range(self.acked + 1, seq + 1):
            self.payloads.pop(s, None)
            self.sent_at.pop(s, None)
            if s - 1 in self.tags and s - 1 != 0:
                del self.tags[s - 1]
        self.acked_at_mark(seq)
        self.acked = seq
        self.sent = max(self.sent, seq)

    def acked_at_mark(self, seq):
        i = len(self.card_seqs) - 1
        while i >= 0 and self.card_seqs[i][0] > self.acked:
            if self.card_seqs[i][0] <= seq:
                self.acked_at[self.card_seqs[i][0]] = self._now
            i -= 1

    def close(self):
        ptys.close(self.master, self.slave)


class Floor:
    """Every stand-in of a pit on one thread: a selector over their ptys and
    a heap of deal times. ``start_dealing`` gives each table a random phase
    within one pace, as real dealers are not in step."""

    def __init__(self, stand_ins, pace=PACE_S, seed=1):
        self.tables = stand_ins
        self.pace = pace
        self.rng = random.Random(seed)
        self.sel = selectors.DefaultSelector()
        for t in stand_ins:
            self.sel.register(t.master, selectors.EVENT_READ, t)
        self.heap = []
        self.lock = threading.Lock()
        self.stop_flag = threading.Event()
        self.dealing = threading.Event()
        self.deal_until = None
        self.thread = threading.Thread(target=self._main, name="stand-ins", daemon=True)

    def start(self):
        self.thread.start()

    def all_up(self):
        return all(t.up for t in self.tables)

    def start_dealing(self, until=None):
        now = time.time()
        with self.lock:
            for i, t in enumerate(self.tables):
                heapq.heappush(self.heap, (now + self.rng.random() * self.pace, i))
            self.deal_until = until
        self.dealing.set()

    def stop_dealing(self):
        with self.lock:
            self.heap = []

    def _main(self):
        last_pump = 0.0
        while not self.stop_flag.is_set():
            now = time.time()
            with self.lock:
                wait = max(0.0, min(0.05, self.heap[0][0] - now)) if self.heap else 0.05
            for key, _mask in self.sel.select(wait):
                key.data.read(time.time())
            now = time.time()
            with self.lock:
                due = []
                while self.heap and self.heap[0][0] <= now:
                    at, i = heapq.heappop(self.heap)
                    due.append(i)
                    if self.deal_until is None or at + self.pace < self.deal_until:
                        heapq.heappush(self.heap, (at + self.pace, i))
            for i in due:
                t = self.tables[i]
                t.deal(now)
                t.pump(now)
            if now - last_pump > 0.05:
                last_pump = now
                for t in self.tables:
                    t.flush_pending()
                    t._now = now
                    t.pump(now)

    def close(self):
        self.stop_flag.set()
        if self.thread.is_alive():
            self.thread.join(5)
        self.sel.close()
        for t in self.tables:
            t.close()
