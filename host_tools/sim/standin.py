"""Light stand-in shoes: the firmware's own shoe under CPython on a pty.

`shoe bench pit` and `shoe demo --tables N --serve` need many tables whose
shoes cost the pit PC little, so that what is measured (or watched) is the
pit server. A stand-in is not a second shoe implementation: it is a shoe
stream (host_tools/sim/shoestream.py): the shoe's session, game, journal
and link core (firmware/link/session.py on firmware/link/core.py) under
CPython, its host link the pty's master, dealt seeded shoes one after the
other by the simulated dealer, one dealing-script line per dealer action.
So the hello and its challenge, the window, go-back-N after
``proto.RETRANSMIT_MS``, heartbeats, checkpoints, link_up/link_down and the
acks checked against the shoe key are the firmware's code, not a copy.

What a stand-in adds is only what the bench reads: when each card was
dealt, when an ack covering it came, and counts of hellos, acks, refused
acks, resends, beats, full windows and shoes (from the events the session
makes and the frames it sends, watched, not changed).

One thread drives every stand-in (``Floor``) with a selector, so hundreds of
tables cost one process a fraction of a core.
"""

import heapq
import json
import random
import resource
import selectors
import threading
import time

from host_tools.sim import ptys
from host_tools.sim import shoestream

PACE_S = 0.5          # a real dealer's pace: one card (or dealer action) every half second
FDS_PER_TABLE = 4     # the pty's two ends, the journal and its marker
_BAD_ACKS = b'{"type":"error","source":"link","reason":"bad_mac"'


class StandIn:
    """One table's shoe: a shoe stream on a pty (``path`` is the port the
    pit opens), dealing the simulated dealer's shoes from ``seed``."""

    def __init__(self, shoe_id, seed=7, irregularities=0.03, key=None, workdir=None, secure=None, manifest=""):
        self._now = 0.0
        self.max_sent = 0           # the newest event seq sent so far (a lower one is a resend)
        self.noted_ack = 0
        self.card_seqs = []         # (seq, dealt at) of every card made
        self.acked_at = {}          # card seq -> when the ack covering it arrived
        self.stats = {"hellos": 0, "acks": 0, "bad_acks": 0, "resends": 0, "held": 0, "beats": 0,
                      "shoes": 0}
        self.master, self.slave, self.path = ptys.open_raw(nonblocking=True)
        self.stream = shoestream.ShoeStream(shoe_id, key, seed=seed, irregularities=irregularities,
                                            fd=self.master, workdir=workdir, on_event=self._made,
                                            on_frame=self._sent, secure=secure, manifest=manifest)
        self.shoe_id = shoe_id
        self.key = self.stream.key
        self.session = self.stream.session

    @property
    def up(self):
        """The host has acknowledged an event of this shoe on this link."""
        return self.session.up and self.session.acked > 0

    # -- what the floor does ----------------------------------------------------------

    def deal(self, now):
        """The next dealer action, and the frames it lets the shoe send at once."""
        self._now = now
        s = self.session
        if s.seq >= s.acked + shoestream.proto.WINDOW:
            self.stats["held"] += 1   # the shoe's window is full: this card waits
        dealt = self.stream.action()
        self._note_acks(now)
        return dealt

    def pump(self, now):
        """One pass of the shoe's loop: read the line, resend, beat."""
        self._now = now
        self.stream.step()
        self._note_acks(now)

    read = pump

    def flush_pending(self):
        self.stream.board.flush()

    # -- watching the shoe ------------------------------------------------------------

    def _made(self, seq, body):
        if body.startswith(shoestream.CARD_PREFIX):
            self.card_seqs.append((seq, self._now))
        elif body.startswith(shoestream.SHOE_PREFIX):
            self.stats["shoes"] += 1
        elif body.startswith(_BAD_ACKS):
            self.stats["bad_acks"] += json.loads(body)["count"]

    def _sent(self, kind, seq):
        if kind == shoestream.proto.EVENT:
            if seq <= self.max_sent:
                self.stats["resends"] += 1
            else:
                self.max_sent = seq
        elif kind == shoestream.proto.HELLO:
            self.stats["hellos"] += 1
        elif kind == shoestream.proto.BEAT:
            self.stats["beats"] += 1

    def _note_acks(self, now):
        acked = self.session.acked
        if acked <= self.noted_ack:
            return
        self.stats["acks"] += 1
        i = len(self.card_seqs) - 1
        while i >= 0 and self.card_seqs[i][0] > self.noted_ack:
            if self.card_seqs[i][0] <= acked:
                self.acked_at[self.card_seqs[i][0]] = now
            i -= 1
        self.noted_ack = acked

    def close(self):
        self.stream.close()
        ptys.close(self.master, self.slave)


def room_for(tables):
    """Raise this process's open-file limit to its hard limit when ``tables``
    stand-ins (and a margin) would not fit under the soft one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = FDS_PER_TABLE * tables + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (want if hard == resource.RLIM_INFINITY else min(hard, want), hard))


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
        # held while a dealer action runs: stop_dealing takes it, so once it
        # returns no card is made any more (the bench counts them then)
        self.acting = threading.Lock()
        self.halted = False
        self.skipped = 0   # dealer actions not made because the floor fell a whole pace behind
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
            self.halted = False
        self.dealing.set()

    def stop_dealing(self):
        """No dealer action after this returns (one under way is finished)."""
        with self.lock:
            self.heap = []
            self.halted = True
        with self.acting:
            pass

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
                    nxt = at + self.pace
                    if nxt <= now:
                        # A whole pace behind (a starved process): a dealer
                        # does not deal the missed cards in a burst, and a
                        # burst stamped with one time would lie about when
                        # each card was dealt. Counted, not hidden.
                        self.skipped += int((now - at) // self.pace)
                        nxt = now + self.pace
                    if self.deal_until is None or nxt < self.deal_until:
                        heapq.heappush(self.heap, (nxt, i))
            for i in due:
                with self.acting:
                    if self.halted:
                        break
                    t = self.tables[i]
                    at = time.time()   # each card's own time: the batch may take a while
                    t.deal(at)
                    t.pump(at)
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
