"""`shoe soak powercut`: cut the shoe's power at its journal's writes, syncs
and renames, and hold the record to the shoe after every cut.

The table: the firmware's shoe session under CPython (the game, the link,
the journal, the outbox; host_tools/sim/shoestream.py's board) with the
simulated ATECC608B signing its checkpoints through the firmware's own
driver, dealt by the seeded simulated dealer (one-deck shoes, with dealer
mistakes, so a new shoe and its journal compaction come often); its link
read by the pit's own HostLink into a real SQLite store. Both run on one
clock the soak moves (no sleeping), joined by a wire the soak carries.

The journal's files live in an in-memory file system the soak gives the
journal module (``MemFS``): it counts every write, sync (``flush``: on the
boards a littlefs commit, the point the journal relies on) and rename, and
keeps what each file holds and what of it is synced. A cut is planned as the
N-th operation of one kind from the last boot (``--cuts`` of them, kinds in
turn); there the power goes: the shoe's memory and what was on the wire to
it are gone, and each file's unsynced bytes are *kept*, *dropped* or *torn*
(an append cut to a random prefix; the marker, rewritten in place, is kept
or dropped whole, as littlefs's copy-on-write commit and a sector write do). The chip keeps
its counter (it is another part). The shoe then boots again on what is left,
and may be cut again while booting.

With ``--ring SECTORS`` the journal is the boards' (link/ring.py
``RingJournal``): its stream on a ring of NOR flash the soak keeps in memory
(``MemNor``), the marker and the tilt still files of MemFS. The cuts fall
inside the ring's sector erases and page programs (and the marker's syncs),
and the operation cut is *kept* (it completed), *dropped* (it never began)
or *torn*: an erase leaves some bits of the sector still programmed, a page
program leaves some of its bits unprogrammed, as a NOR chip does when its
supply fails mid-operation.

Checked, and printed: every event the shoe sent is stored, once, with the
body the shoe made it with; every event the store holds is one the shoe
kept (lost 0, duplicated 0: no card twice in a shoe); the stored game events
equal `shoe deal`'s events for the dealing lines the shoe kept (deal:
identical); the checkpoints' chip counters strictly increase; the bridge
records again, under the new boot's connection and level with the shoe,
within hostlink.RECOVER_S after every cut (the time is the soak clock's);
and `shoe verify --key-file --pubkey` passes on the store.
"""

import collections
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from host_tools.protocol import hostlink, pubkeys
from host_tools.sim import dealer
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C
from host_tools.sim.shoestream import Board, Config, HostSigner
from host_tools.sim.vclock import VirtualClock
from host_tools.store import db

from firmware.baccarat import script
from firmware.drivers.atecc608 import ATECC608
from firmware.drivers.atecc608_setup import provision
from firmware.link import journal, proto, ring, session
from firmware.link import replay as link_replay

SHOE_ID = "CUT1"
KEY = bytes(range(40, 72))
STEP_MS = 20          # the soak's clock moves by this much a turn
DEAL_MS = 60          # a dealer action every this many ms
KINDS = ("write", "sync", "rename")
RING_KINDS = ("program", "erase", "program", "sync")   # the ring's flash operations, and the marker's
MODES = ("kept", "dropped", "torn")
# A cut falls at the 1st..this-th op of its kind.
FURTHEST = {"write": 60, "sync": 60, "rename": 2, "program": 60, "erase": 3}
NO_CUT_S = 300.0      # a planned cut that never comes (the kind never happens) gives up after this


def add_arguments(parser):
    parser.add_argument("--cuts", type=int, default=200, help="power cuts (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shoes and of the cut plan")
    parser.add_argument("--mistakes", type=float, default=0.05,
                        help="dealer mistakes per round (default 0.05)")
    parser.add_argument("--dir", help="keep the store, the keys and the chip here (default: a temp dir)")
    parser.add_argument("--each", action="store_true", help="print a line for every cut")
    parser.add_argument("--ring", type=int, default=0, metavar="SECTORS",
                        help="the journal on a ring of SECTORS 4 KiB NOR sectors, as on the boards "
                             "(%d-%d; boards.toml has %d), cut inside its erases and page programs; "
                             "0 (the default): a littlefs-style file" % (RING_LOW, RING_HIGH, RING_BOARDS))


def _ring_sizes():
    from host_tools import boards
    return boards.RING_SECTORS + (boards.get("pico").get("journal_ring", 0),)


RING_LOW, RING_HIGH, RING_BOARDS = _ring_sizes()


class PowerCut(BaseException):
    """The power went (a BaseException: no ``except Exception`` of the
    firmware may take it for an error it handles)."""


# -- the journal's file system ----------------------------------------------------

class MemFS:
    """The files the journal sees: ``current`` (what a read returns) and
    ``synced`` (what survives a cut) per path, and a counter per operation
    kind that raises PowerCut at the planned one."""

    def __init__(self, rng):
        self.rng = rng
        self.current = {}
        self.synced = {}
        self.counts = collections.Counter()   # since the plan was made
        self.plan = None                      # (kind, n): cut at the n-th op of kind
        self.where = None                     # (kind, path) of the cut that fell

    def arm(self, kind, n):
        self.plan = (kind, n)
        self.counts.clear()

    def _op(self, kind, path):
        self.counts[kind] += 1
        if self.plan == (kind, self.counts[kind]):
            self.plan = None
            self.where = (kind, os.path.basename(path))
            raise PowerCut()

    def settle(self, mode):
        """The power is gone: each file's unsynced bytes kept, dropped or
        torn; what is left is all synced. Returns how many files changed."""
        changed = 0
        for path in set(self.current) | set(self.synced):
            cur, old = self.current.get(path), self.synced.get(path)
            if cur == old:
                continue
            changed += 1
            if mode == "kept":
                left = cur
            elif mode == "dropped":
                left = old
            elif old is not None and cur is not None and cur[:len(old)] != old:
                # A rewrite in place (the 16-byte marker) is all or nothing:
                # littlefs commits a file copy-on-write, and a disk writes
                # a sector whole. Only an append is torn.
                left = self.rng.choice((cur, old))
            else:
                cur, base = cur or b"", old or b""
                left = bytes(cur[:self.rng.randint(len(base), len(cur))])
            if left is None:
                self.current.pop(path, None)
                self.synced.pop(path, None)
            else:
                self.current[path] = bytearray(left)
                self.synced[path] = bytes(left)
        return changed

    # the journal's ``open`` and ``os``
    def open(self, path, mode="r"):
        return MemFile(self, path, mode)

    def stat(self, path):
        if path not in self.current:
            raise OSError(2, "no such file: %s" % path)
        return (0, 0, 0, 0, 0, 0, len(self.current[path]), 0, 0, 0)

    def remove(self, path):
        if path not in self.current:
            raise OSError(2, "no such file: %s" % path)
        self._op("rename", path)   # a directory change, atomic like a rename
        self.current.pop(path, None)
        self.synced.pop(path, None)

    def rename(self, src, dst):
        if src not in self.current:
            raise OSError(2, "no such file: %s" % src)
        if self.rng.random() < 0.5:
            self._op("rename", dst)   # the cut falls before the rename ...
        for files in (self.current, self.synced):
            if src in files:
                files[dst] = files.pop(src)
            else:
                files.pop(dst, None)
        if self.plan is not None and self.plan[0] == "rename" and self.counts["rename"] + 1 == self.plan[1]:
            self._op("rename", dst)   # ... or just after it
        return None


class MemFile:
    """A file of MemFS with the methods the journal uses."""

    def __init__(self, fs, path, mode):
        self.fs, self.path = fs, path
        if "w" in mode:
            fs.current[path] = bytearray()
        elif path not in fs.current:
            if "a" in mode:
                fs.current[path] = bytearray()
            else:
                raise OSError(2, "no such file: %s" % path)
        self.pos = len(fs.current[path]) if "a" in mode else 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self, n=-1):
        data = self.fs.current.get(self.path, b"")
        end = len(data) if n is None or n < 0 else min(len(data), self.pos + n)
        out = bytes(data[self.pos:end])
        self.pos = end
        return out

    def readinto(self, buf):
        got = self.read(len(buf))
        buf[:len(got)] = got
        return len(got)

    def write(self, data):
        data = bytes(data)
        f = self.fs.current.setdefault(self.path, bytearray())
        f[self.pos:self.pos + len(data)] = data
        self.pos += len(data)
        self.fs._op("write", self.path)   # written, not synced: a cut here keeps, drops or tears it
        return len(data)

    def flush(self):
        self.fs._op("sync", self.path)
        if self.path in self.fs.current:
            self.fs.synced[self.path] = bytes(self.fs.current[self.path])

    def seek(self, pos, whence=0):
        self.pos = pos

    def close(self):
        pass


class MemNor:
    """The ring's NOR flash, in memory, with the block-device protocol
    link/ring.py drives (as firmware/emulator/norflash.py, whose rules it
    enforces: a program only clears bits, in whole pages; an erase sets a
    sector to FF). Each erase and page program is an operation of ``fs``'s
    plan; the one the power cuts completes, never begins or is torn
    (``mode``, set before the cut)."""

    SECTOR = 4096
    PAGE = 256
    NAME = "journal.bin.nor"

    def __init__(self, fs, sectors, rng):
        self.fs, self.rng, self.sectors = fs, rng, sectors
        self.data = bytearray(b"\xff" * (sectors * self.SECTOR))
        self.mode = "kept"

    def readblocks(self, block, buf, off=0):
        at = block * self.SECTOR + off
        buf[:] = self.data[at:at + len(buf)]

    def _cut(self, done, torn):
        """The planned cut, if this is it: the operation as ``mode`` leaves it."""
        try:
            self.fs._op(self.fs_kind, self.NAME)
        except PowerCut:
            if self.mode == "kept":
                done()
            elif self.mode == "torn":
                torn()
            raise

    def writeblocks(self, block, buf, off=None):
        if off is None:
            self.ioctl(6, block)
            off = 0
        n = len(buf)
        if off % self.PAGE or n % self.PAGE or off + n > self.SECTOR:
            raise OSError(22)
        at = block * self.SECTOR + off
        for p in range(0, n, self.PAGE):
            self._page(at + p, memoryview(buf)[p:p + self.PAGE])

    def _page(self, at, page):
        data = self.data
        for i in range(self.PAGE):
            if page[i] != 0xFF and page[i] & ~data[at + i] & 0xFF:
                raise OSError(5)   # a bit only an erase can set

        def done():
            for i in range(self.PAGE):
                data[at + i] &= page[i]

        def torn():
            r = self.rng
            for i in range(self.PAGE):
                data[at + i] &= page[i] | r.getrandbits(8)
        self.fs_kind = "program"
        self._cut(done, torn)
        done()

    def ioctl(self, op, arg):
        if op == 4:
            return self.sectors
        if op == 5:
            return self.SECTOR
        if op == 6:
            data, at = self.data, arg * self.SECTOR

            def done():
                data[at:at + self.SECTOR] = b"\xff" * self.SECTOR

            def torn():
                r = self.rng
                for i in range(at, at + self.SECTOR):
                    data[i] |= 0xFF if r.random() < 0.5 else r.getrandbits(8)
            self.fs_kind = "erase"
            self._cut(done, torn)
            done()
        return 0


class _OsOf:
    """The part of ``os`` the journal calls, on a MemFS."""

    def __init__(self, fs):
        self.stat, self.remove, self.rename = fs.stat, fs.remove, fs.rename


@contextlib.contextmanager
def journal_on(fs):
    """The firmware's journal (and its marker reader) on ``fs`` meanwhile."""
    saved = journal.os, journal.__dict__.get("open"), link_replay.__dict__.get("open"), ring.__dict__.get("open")
    journal.os, journal.open, link_replay.open, ring.open = _OsOf(fs), fs.open, fs.open, fs.open
    try:
        yield
    finally:
        journal.os = saved[0]
        for module, value in ((journal, saved[1]), (link_replay, saved[2]), (ring, saved[3])):
            if value is None:
                del module.open
            else:
                module.open = value


# -- the clock and the table --------------------------------------------------------

@contextlib.contextmanager
def host_link_on(clock):
    saved = hostlink.time
    hostlink.time = clock
    try:
        yield
    finally:
        hostlink.time = saved


class WireBoard(Board):
    """The stream's board on the soak's clock and wire."""

    def __init__(self, table, se):
        Board.__init__(self, KEY, table.work, None, se, manifest="")
        self.table = table
        self.journal_path = "/flash/journal.bin"

    def ticks_ms(self):
        return int(self.table.clock.t * 1000)

    def link_read(self, buf):
        inbox = self.table.to_shoe
        n = min(len(buf), len(inbox))
        buf[:n] = inbox[:n]
        del inbox[:n]
        return n

    def link_write(self, buf, n):
        self.table.to_host += bytes(buf[:n])


class Shoe(session.Session):
    """The shoe's session, its events and sent frames watched."""

    table = None

    def _emit(self, buf, n):
        seq = self.seq
        session.Session._emit(self, buf, n)
        if self.seq != seq:
            self.table.made(self.seq, bytes(buf[:n]))

    def _send(self, kind, seq, buf, start, end, tag, at):
        session.Session._send(self, kind, seq, buf, start, end, tag, at)
        if kind == proto.EVENT:
            self.table.sent.add(seq)


class Table:
    def __init__(self, work, seed, mistakes, fs, clock, nor=None):
        self.work, self.fs, self.clock, self.nor = work, fs, clock, nor
        self.chip = Chip(None, timing=0.0)
        self.public = bytearray(64)
        provision(self._driver(), self.public)
        self.store = db.Store(os.path.join(work, "pit.db"))
        self.to_shoe, self.to_host = bytearray(), bytearray()
        self.link = hostlink.HostLink(self.store, KEY, name="wire", send=self._send)
        self.link.attach()
        self.lines = dealer_lines(seed, mistakes)
        self.shoe = None
        self.boots = 0
        self.events = {}        # seq -> (body, line index or None): what the shoe made, latest boot's
        self.sent = set()       # seqs the shoe put on the wire
        self.line_of = {}       # line index -> the line
        self.current_line = None
        self.interrupted = None
        self.again = None       # (index, line) to deal again first
        self.deal_at = 0.0
        self.signed = True      # whether the last checkpoint the shoe made is signed

    def _driver(self):
        return ATECC608(DirectI2C(Bus({ADDRESS: self.chip})))

    def _send(self, data):
        self.to_shoe += data
        return True

    def made(self, seq, body):
        if body.startswith(b'{"type":"checkpoint"'):
            self.signed = b'"sig"' in body
        line = self.current_line
        if line is None:
            old = self.events.get(seq)
            if old is not None and old[0] == body:
                return  # the boot's replay of the journal making it again: the same event
            if not body.startswith(b'{"type":') or b'"source":"link"' not in body:
                # a game event only a boot makes: the input the power cut
                # interrupted was journaled, and the boot's replay dealt it
                line = self.interrupted
        self.events[seq] = (body, line)

    def boot(self):
        """Power on: a new board and session on what the flash holds."""
        self.boots += 1
        self.to_shoe.clear()
        self.shoe = None
        board = WireBoard(self, self._driver())
        if self.nor is None:
            j = journal.Journal(board.journal_path)
        else:
            j = ring.RingJournal(board.journal_path, ring.Ring(self.nor))
        shoe = Shoe(board, Config(SHOE_ID), j)
        shoe.table = self
        shoe.signer = HostSigner(KEY, SHOE_ID)
        self.current_line = None
        shoe.boot(None)
        self.shoe = shoe
        lost = self.interrupted
        if lost is not None and not any(line == lost and seq <= shoe.seq
                                        for seq, (_b, line) in self.events.items()):
            # The shoe never took the line the power cut: the dealer sees
            # nothing happened (no LED, no event) and deals it again.
            self.again = (lost, self.line_of[lost])
        self.interrupted = None

    def power_off(self):
        if self.current_line is not None:
            self.interrupted = self.current_line   # the line being dealt as the power went
        self.current_line = None
        self.shoe = None
        self.to_shoe.clear()

    def turn(self):
        """STEP_MS of time: the dealer (every DEAL_MS), the shoe, the wire, the bridge."""
        self.clock.t += STEP_MS / 1000.0
        s = self.shoe
        if s is not None:
            if self.clock.t >= self.deal_at and s.tilt is None and s.halt is None:
                self.deal_at = self.clock.t + DEAL_MS / 1000.0
                if self.again is not None:
                    (index, line), self.again = self.again, None
                else:
                    index, line = next(self.lines)
                self.line_of[index] = line
                self.current_line = index
                message = script.feed_line(s, line)
                if message is not None:
                    s.error(message)
                self.current_line = None
            s.step()
        if self.to_host:
            data, self.to_host = bytes(self.to_host), bytearray()
            self.link.feed(data)
        dead = self.link.tick()
        if dead is not None:
            self.link.detach(dead)
            self.link.attach()

    def stored(self):
        return self.store.last_seq(SHOE_ID) or 0

    def level(self):
        """Recording under the live boot's connection, level with the shoe."""
        s, link = self.shoe, self.link
        return (s is not None and link.hello is not None and link.recording()[0]
                and link.hello["nonce"] == s.nonce.decode() and s.acked == self.stored() == s.seq)


def dealer_lines(seed, mistakes):
    """(index, line) of one-deck shoe after shoe, for ever."""
    index = 0
    shoe = 0
    while True:
        for line in dealer.script(seed * 100000 + shoe, decks=1, irregularity_rate=mistakes):
            index += 1
            yield index, line
        shoe += 1


# -- the checks ---------------------------------------------------------------------

def check(table, work):
    """The record against the shoe: a dict of counts and the failures found."""
    rows = {seq: text for _s, seq, text, _p, _h in table.store.events(SHOE_ID)}
    made = {seq: body.decode() for seq, (body, _line) in table.events.items()}
    out = {"events": len(rows), "failures": []}
    lost = [seq for seq in table.sent if rows.get(seq) != made.get(seq)]
    out["lost"] = len(lost)
    if lost:
        out["failures"].append("sent but not stored as made: seq %s" % lost[:5])
    extra = [seq for seq, text in rows.items() if made.get(seq) != text]
    out["duplicated"] = 0
    seen, shoe_no = set(), 0
    for seq in sorted(rows):
        event = json.loads(rows[seq])
        if event.get("type") == "shoe":
            shoe_no += 1
        elif event.get("type") == "card" and "card" in event:
            key = (shoe_no, event["card"])
            if key in seen:
                out["duplicated"] += 1
            seen.add(key)
    if extra:
        out["failures"].append("stored but not the shoe's: seq %s" % extra[:5])
    if out["duplicated"]:
        out["failures"].append("%d cards stored twice in one shoe" % out["duplicated"])
    if sorted(rows) != list(range(1, len(rows) + 1)):
        out["failures"].append("the stored seqs are not 1..%d" % len(rows))
    # identical to `shoe deal`: the game events of the lines the shoe kept
    kept_lines = sorted({line for seq, (body, line) in table.events.items()
                         if line is not None and rows.get(seq) == body.decode()})
    from host_tools import deal
    want = [json.dumps(e, separators=(",", ":")) for e in
            deal.deal_events("\n".join(table.line_of[i] for i in kept_lines) + "\n")]
    got = [rows[seq] for seq in sorted(rows) if json.loads(rows[seq]).get("source") is None]
    out["deal"] = "identical" if _game(got) == _game(want) else "DIFFERENT"
    if out["deal"] != "identical":
        out["failures"].append("the stored game events differ from `shoe deal` of the kept lines "
                               "(%d stored, %d replayed)" % (len(got), len(want)))
    counters = [json.loads(rows[seq]).get("counter") for seq in sorted(rows)
                if json.loads(rows[seq]).get("type") == "checkpoint"]
    counters = [c for c in counters if isinstance(c, int)]
    out["checkpoints"] = len(counters)
    gaps = ["%d -> %d" % (a, b) for a, b in zip(counters, counters[1:]) if b != a + 1]
    out["counters"] = "strictly increasing" if all(b > a for a, b in zip(counters, counters[1:])) \
        else "NOT increasing"
    if gaps:
        # a value the chip spent that no checkpoint in the record carries
        # (shoe verify fails on it too)
        out["counters"] += ", %d gap%s (%s)" % (len(gaps), "s" if len(gaps) > 1 else "", ", ".join(gaps[:5]))
    if out["counters"] != "strictly increasing" or not counters:  # (gaps included)
        out["failures"].append("the checkpoints' chip counters: %s" % (out["counters"] if counters else "none"))
    return out


def _game(texts):
    """Events as compared: `shoe deal`'s errors name the script's line, the shoe's cannot."""
    out = []
    for t in texts:
        e = json.loads(t)
        if e.get("type") == "error":
            e.pop("line", None)
        out.append(e)
    return out


def verify(table, work):
    key_file = os.path.join(work, "%s.key" % SHOE_ID)
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(KEY)
    pub = os.path.join(work, "%s.pub" % SHOE_ID)
    pubkeys.write_public(pub, bytes(table.public))
    table.store.close()
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", table.store.path,
                        "--key-file", key_file, "--pubkey", pub], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


# -- the soak -------------------------------------------------------------------------

def soak(cuts, seed, mistakes, work, check_verify=True, each=None, ring_sectors=0):
    rng = random.Random(seed)
    fs = MemFS(random.Random(seed + 1))
    nor = MemNor(fs, ring_sectors, random.Random(seed + 2)) if ring_sectors else None
    kinds = RING_KINDS if nor is not None else KINDS
    boot_kinds = ("program", "erase", "sync") if nor is not None else ("write", "sync")
    clock = VirtualClock()
    results = {"cuts": collections.Counter(), "modes": collections.Counter(), "recovery": [],
               "boots_cut": 0, "quick": 0, "failures": [], "ring": ring_sectors}
    with journal_on(fs), host_link_on(clock):
        table = Table(work, seed, mistakes, fs, clock, nor)
        table.boot()
        quick = False
        for n in range(cuts):
            kind = kinds[n % len(kinds)]
            mode = rng.choice(MODES)
            if nor is not None:
                nor.mode = mode
            if quick:
                # the shoe's first write after it said hello: the bridge has
                # asked it for a fresh hello, and it dies before reading that
                kind = "program" if nor is not None else "write"
                fs.arm(kind, 1)
            else:
                fs.arm(kind, rng.randint(1, FURTHEST[kind]))
            start = clock.t
            try:
                while clock.t - start < NO_CUT_S and table.shoe.tilt is None:
                    table.turn()
                fs.plan = None
                why = "the shoe is tilted (%s)" % table.shoe.tilt if table.shoe.tilt is not None else \
                    "no %s within %.0f s" % (kind, NO_CUT_S)
                results["failures"].append("cut %d: %s: the soak stops" % (n + 1, why))
                break
            except PowerCut:
                pass
            results["cuts"]["%s %s" % fs.where] += 1
            results["modes"][mode] += 1
            if each is not None:
                each("cut %d: %s %s, %s, at the shoe's seq %d (stored %d)" % (
                    n + 1, fs.where[0], fs.where[1], mode, table.shoe.seq, table.stored()))
            table.power_off()
            fs.settle(mode)
            # Power back on; one boot in five is cut too, at one of its first
            # writes or syncs (the boot event, the marker, a torn tail's rewrite).
            if rng.random() < 0.2:
                fs.arm(rng.choice(boot_kinds), rng.randint(1, 4))
                if nor is not None:
                    nor.mode = rng.choice(MODES)
            while True:
                try:
                    table.boot()
                    break
                except PowerCut:
                    results["boots_cut"] += 1
                    if each is not None:
                        each("  its boot cut: %s %s" % fs.where)
                    table.power_off()
                    fs.settle(nor.mode if nor is not None else rng.choice(MODES))
            fs.plan = None
            quick = n + 1 < cuts and rng.random() < 0.1
            if quick:
                results["quick"] += 1
                continue  # recovery is measured after the last of the two
            on = clock.t
            took = None
            while clock.t - on < hostlink.RECOVER_S * 4:
                if table.level():
                    took = clock.t - on
                    break
                table.turn()
            if took is None or took > hostlink.RECOVER_S:
                results["failures"].append("cut %d (%s %s, %s): recording again only after %s: %s" % (
                    n + 1, fs.where[0], fs.where[1], mode, "%.2f s" % took if took else "never",
                    table.link.recording_line()))
            results["recovery"].append(took if took is not None else float("inf"))

        # A cut inside the chip's signature leaves an unsigned checkpoint that
        # only the next signed one proves (`shoe verify`): deal on, uncut, to
        # it, as the table would; then let the last events through.
        end = clock.t + NO_CUT_S
        while not table.signed and clock.t < end and table.shoe.tilt is None:
            table.turn()
        for _ in range(200):
            table.turn()
            if table.level():
                break
        if table.shoe.tilt is not None and not results["failures"]:
            results["failures"].append("the shoe ended tilted: %s" % table.shoe.tilt)
        results["boots"] = table.boots
        results["record"] = check(table, work)
    results["verify_rc"], results["verify"] = verify(table, work) if check_verify else (0, "not run")
    return results


def report(r, say=print):
    rec = r["record"]
    cuts = sum(r["cuts"].values())
    say("power cuts            %d (%s)" % (cuts, ", ".join("%s %d" % kv for kv in sorted(r["cuts"].items()))))
    say("%s%s" % ("the cut op, unsynced  " if r.get("ring") else "unsynced bytes        ",
                  ", ".join("%s %d" % kv for kv in sorted(r["modes"].items()))))
    say("cuts while booting    %d" % r["boots_cut"])
    say("cuts just after hello %d (the next cut at the shoe's first write after its hello)" % r["quick"])
    say("boots                 %d" % r["boots"])
    say("events stored         %d (%d checkpoints)" % (rec["events"], rec["checkpoints"]))
    say("lost                  %d" % rec["lost"])
    say("duplicated            %d" % rec["duplicated"])
    say("deal                  %s" % rec["deal"])
    say("chip counters         %s" % rec["counters"])
    finite = sorted(x for x in r["recovery"] if x != float("inf"))
    if finite:
        p99 = finite[min(len(finite) - 1, int(round(0.99 * (len(finite) - 1))))]
        say("recording again       p50 %.2f s, p99 %.2f s, max %.2f s (bound %.1f s; soak clock)"
            % (statistics.median(finite), p99, finite[-1], hostlink.RECOVER_S))
    say("shoe verify --pubkey  %s" % ("PASS" if r["verify_rc"] == 0 else "FAIL (exit %d)" % r["verify_rc"]))
    failures = r["failures"] + rec["failures"]
    if r["verify_rc"] != 0:
        failures.append("shoe verify:\n" + r["verify"])
    for f in failures:
        say("FAIL " + f)
    return failures


def run(args):
    t0 = time.monotonic()
    if args.ring and not RING_LOW <= args.ring <= RING_HIGH:
        print("shoe soak powercut: --ring %d: give 0 (a file) or %d-%d sectors" % (args.ring, RING_LOW, RING_HIGH),
              file=sys.stderr)
        return 2
    print("soak powercut: seed %d, %d cuts%s" % (args.seed, args.cuts,
                                                ", the journal on a ring of %d sectors" % args.ring if args.ring else ""),
          flush=True)
    with (contextlib.nullcontext(args.dir) if args.dir else tempfile.TemporaryDirectory(
            prefix="shoe-soak-powercut-")) as work:
        os.makedirs(work, exist_ok=True)
        r = soak(args.cuts, args.seed, args.mistakes, work, each=print if args.each else None,
                 ring_sectors=args.ring)
        failures = report(r)
    print("soak powercut: %.0f s: %s" % (time.monotonic() - t0, "FAIL" if failures else "PASS"))
    return 1 if failures else 0
