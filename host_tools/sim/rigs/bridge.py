"""A whole table on one PC: emulated shoe, bridge and simulated dealer.

`shoe demo`, `shoe bench link` and the end-to-end tests all need the same
arrangement, so it lives here once. The dealer deals the way a person does:
one card at a time, the next only after the shoe has taken the last. "Taken"
is measured where it matters, at the store: every dealing-script line the
dealer uses yields exactly one event of a known type (``shoe``, ``bets``,
``card``, ``cover``), so counting those stored events tells the dealer how
far the shoe has got, even across a power cut or a bridge restart.
"""

import sqlite3
import threading
import time
from contextlib import closing

from host_tools.bridge.line import Bridge
from host_tools.pit.groupcommit import TableStore
from host_tools.store import db

# The event each dealer line produces (the dealer never writes other lines).
DEALT_TYPES = ("shoe", "bets", "card", "cover")


def dealt_type(line):
    """The type of the one event a dealer line produces."""
    word = line.split()[0]
    return word if word in ("shoe", "bets", "cover") else "card"


class StoreProgress:
    """The same counts as ThreadedBridge, read from the store file, for a
    bridge running in another process. It counts everything stored for the
    shoe, so give it a store that starts empty."""

    def __init__(self, path, shoe_id):
        self.path = str(path)
        self.shoe_id = shoe_id
        self.con = None

    def _count(self, where, args):
        try:
            if self.con is None:
                self.con = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True, timeout=5)
            return self.con.execute("SELECT COUNT(*) FROM events WHERE shoe_id = ? AND " + where,
                                    (self.shoe_id,) + args).fetchone()[0]
        except sqlite3.OperationalError:
            return 0  # no file, or the bridge has not created its tables yet

    def progress(self):
        return self._count("type IN (?, ?, ?, ?)", DEALT_TYPES)

    def boots(self):
        return self._count("type = ?", ("boot",))

    def ended(self):
        """The shoe's end is stored with the checkpoint that closes it (the
        shoe sends its shoe_end as the card makes it, the checkpoint at the
        end of that pass)."""
        return self._count("type = ? AND seq > (SELECT MAX(seq) FROM events WHERE shoe_id = ? AND type = ?)",
                           ("checkpoint", self.shoe_id, "shoe_end")) > 0

    def close(self):
        if self.con is not None:
            self.con.close()


class ThreadedBridge:
    """A Bridge on its own thread (an SQLite connection belongs to one
    thread); counts the dealer lines taken and times each commit, for the
    events committed while it runs."""

    def __init__(self, db_path, port, key, deployed=None, committer=None):
        """``committer``: a host_tools.pit.groupcommit.GroupCommit that every
        table of one store shares, as `shoe pit`'s tables do; without one
        the bridge commits on its own connection, as `shoe bridge` does."""
        self.taken = 0
        self.boot_count = 0
        self.end = None
        self._end = None
        self.committed_at = {}  # seq -> time.time() just after the commit
        self.events = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.bridge = None
        self.deployed = deployed
        self.lock = threading.Lock()
        self.commands = []   # (name, args, reply list) for the bridge thread
        self.on_event = None  # also called with (seq, event) after each commit
        self.committer = committer
        self.thread = threading.Thread(target=self._main, args=(db_path, port, key), daemon=True)
        self.thread.start()
        if not self.ready.wait(10):
            raise RuntimeError("bridge thread did not start")

    def _on_event(self, seq, event):
        self.committed_at[seq] = time.time()
        self.events.append((seq, event))
        if event.get("type") in DEALT_TYPES:
            self.taken += 1
        elif event.get("type") == "boot":
            self.boot_count += 1
        elif event.get("type") == "shoe_end":
            self._end = (seq, event)
        elif event.get("type") == "checkpoint" and self._end is not None and seq > self._end[0]:
            self.end = self._end[1]  # ended: the checkpoint that closes the shoe is stored too
        if self.on_event is not None:
            self.on_event(seq, event)

    def _main(self, db_path, port, key):
        store = db.Store(db_path)
        if self.committer is not None:
            store = TableStore(store, self.committer)
        with closing(store):
            self.bridge = Bridge(store, port, key, on_event=self._on_event, deployed=self.deployed)
            self.ready.set()
            try:
                while not self.stop.is_set():
                    self.bridge.poll(0.05)
                    with self.lock:
                        todo, self.commands = self.commands, []
                    for name, args, reply in todo:
                        reply.append(self.bridge.command(name, args))
            finally:
                self.bridge.close()

    def command(self, name, args=None, timeout=10.0):
        """Sign and send a command from the bridge's own thread (as the
        pit's table thread does); its one-line reply."""
        reply = []
        with self.lock:
            self.commands.append((name, args, reply))
        end = time.monotonic() + timeout
        while not reply and time.monotonic() < end:
            time.sleep(0.01)
        return reply[0] if reply else "error no reply from the bridge thread"

    def progress(self):
        return self.taken

    def boots(self):
        return self.boot_count

    def ended(self):
        return self.end is not None

    def close(self):
        self.stop.set()
        self.thread.join(10)


class Stalled(Exception):
    """The shoe stopped taking the dealer's lines; the message says where."""


# How long a dealt line may go untaken before the Feeder calls the shoe
# stalled. Only a stalled shoe waits it out; an emulated shoe on a loaded
# 2-core machine (two suites side by side) went silent for 30 s at boot
# (sim/vmdevice.py BOOT_WAIT_S), and 30 s here failed shoes that were slow.
STALL_S = 120.0


class Feeder:
    """Deals a script into an emulated shoe in lockstep with the store."""

    def __init__(self, emu, lines, watcher, poll=0.003, stall=STALL_S, pause=0.0, patient=False):
        """``watcher`` is a ThreadedBridge or StoreProgress: ``progress()``
        counts taken lines, ``boots()`` the shoe's boot events and
        ``ended()`` says whether its shoe_end is stored. ``patient``: the
        ``stall`` bound runs from the store's last progress, not from the
        start of the wait: lines dealt far faster than the link carries
        them wait in the shoe's journal and come 32 at a time (the outbox,
        refilled from the journal), so a whole shoe dealt blind on a loaded
        machine takes minutes to store, yet it is not stalled while the
        store still moves."""
        self.emu = emu
        self.lines = list(lines)
        self.progress = watcher.progress
        self.boots = watcher.boots
        self.ended = watcher.ended
        self.poll = poll
        self.stall = stall
        self.pause = pause
        self.patient = patient
        self.written = 0
        self.written_at = {}  # line index -> time.time() when the dealer wrote it

    def wait_boot(self, count=1):
        """Lines written before the shoe has opened its dealer channel are
        lost (as cards drawn from an unpowered shoe), so deal only after the
        shoe's boot event is in the store."""
        self._wait(lambda: self.boots() >= count, "no boot event from the shoe")

    def done(self):
        return self.written >= len(self.lines)

    def wait_taken(self, n=None):
        """Block until the store shows ``n`` (default: all written) lines taken."""
        n = self.written if n is None else n
        self._wait(lambda: self.progress() >= n, "the store shows %d of %d dealt lines (last: %r)" % (
            self.progress(), n, self.lines[n - 1] if 0 < n <= len(self.lines) else None))

    def finish(self):
        """Deal the rest and wait for the shoe's end, and the checkpoint
        that closes it, to be stored."""
        self.deal()
        self._wait(self.ended, "no shoe_end and closing checkpoint stored after the last line")

    def _wait(self, predicate, message):
        end = time.monotonic() + self.stall
        last = self.progress() if self.patient else None
        while not predicate():
            if self.patient:
                now = self.progress()
                if now != last:
                    last, end = now, time.monotonic() + self.stall
            if time.monotonic() > end:
                raise Stalled("%s (%.0f s%s)" % (message, self.stall,
                                                 " without progress" if self.patient else ""))
            time.sleep(self.poll)

    def deal(self, count=None):
        """Deal ``count`` more lines (default all), each after the last is stored."""
        stop = len(self.lines) if count is None else min(len(self.lines), self.written + count)
        if self.written == 0:
            self.wait_boot()
        while self.written < stop:
            self.wait_taken()
            self.written_at[self.written] = time.time()
            self.emu.deal(self.lines[self.written])
            self.written += 1
            if self.pause:
                time.sleep(self.pause)
        self.wait_taken()

    def deal_until(self, predicate):
        """Deal line by line until ``predicate(next line index)`` is true."""
        while not self.done() and not predicate(self.written):
            self.deal(1)

    def blind(self, count=None, interval=0.02):
        """Deal without waiting for the store (its bridge is down, or the
        link is lossy and the shoe should have many events in flight)."""
        if self.written == 0:
            self.wait_boot()
        count = len(self.lines) if count is None else count
        for _ in range(count):
            if self.done():
                return
            self.written_at[self.written] = time.time()
            self.emu.deal(self.lines[self.written])
            self.written += 1
            time.sleep(interval)

    def resync(self, boots_before, settle=1.5):
        """After a power cut: wait for the shoe's new boot event, let it
        redeliver its journal, then resume from what it actually took (a line
        written as the power went may or may not have been journaled)."""
        self._wait(lambda: self.boots() > boots_before, "no boot event from the restarted shoe")
        end = time.monotonic() + self.stall
        last, since = -1, time.monotonic()
        while time.monotonic() - since < settle:
            now = self.progress()
            if now != last:
                last, since = now, time.monotonic()
            if time.monotonic() > end:
                raise Stalled("the store did not settle after the restart")
            time.sleep(0.05)
        self.written = last
        return last
