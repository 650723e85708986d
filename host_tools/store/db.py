"""The SQLite store: shoes, their chained events, and the link log.

Why these choices:

- WAL with ``synchronous=FULL``: `append` returns only after the commit is on
  disk, because the bridge acknowledges the event to the shoe straight after,
  and the shoe then forgets it. A power cut of the pit PC after the ack must
  not lose the event.
- One hash chain per shoe (not one for the whole file): shoes are independent
  sources with their own sequence counters, and several bridges may write one
  file at once without serialising on a global chain head.
- The chain head (last seq and hash) is also kept in the ``shoes`` row, updated
  in the same transaction, so deleting the newest rows is detected too.
- The event text is stored byte for byte as the shoe sent it. It is the record;
  the pit PC never rewrites what the shoe said.
- ``link_log`` keeps what happened to the connection (connect, disconnect,
  bad frames, gaps, refusals, commands sent): a regulator asks for loss of
  communication to be logged, and it is not part of any shoe's chain
  because the shoe did not say it.

Hash of a row (all integers big-endian)::

    sha256( prev_hash[32] || u32 len(event) || event bytes || u64 seq || shoe id UTF-8 )

``prev_hash`` of a shoe's first stored row is 32 zero bytes. The event length
makes the split between event and shoe id unambiguous.
"""

import hashlib
import json
import os
import sqlite3
import struct
import time

GENESIS = bytes(32)

SCHEMA = """
CREATE TABLE IF NOT EXISTS shoes (
    shoe_id    TEXT PRIMARY KEY,
    key_id     TEXT,
    settings   TEXT,
    first_seq  INTEGER,
    last_seq   INTEGER,
    head_hash  TEXT,
    first_seen REAL NOT NULL,
    last_seen  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    shoe_id   TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    type      TEXT,
    round     INTEGER,
    event     TEXT NOT NULL,
    received  REAL NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL,
    PRIMARY KEY (shoe_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS link_log (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    shoe_id TEXT,
    time    REAL NOT NULL,
    kind    TEXT NOT NULL,
    detail  TEXT NOT NULL
);
"""

# append() outcomes
STORED = "stored"
DUPLICATE = "duplicate"


class StoreError(Exception):
    """An event the store refuses; the message says exactly why."""


class SequenceGap(StoreError):
    """The event is ahead of the chain head: an earlier event is missing."""

    def __init__(self, shoe_id, expected, got):
        StoreError.__init__(
            self, "shoe %s: expected seq %d, got %d" % (shoe_id, expected, got))
        self.expected = expected
        self.got = got


class Conflict(StoreError):
    """A seq that is already stored arrived with different content."""


def chain_hash(prev_hash, event_bytes, seq, shoe_id):
    h = hashlib.sha256(prev_hash)
    h.update(struct.pack(">I", len(event_bytes)))
    h.update(event_bytes)
    h.update(struct.pack(">Q", seq))
    h.update(shoe_id.encode("utf-8"))
    return h.digest()


def parse_event(event_bytes):
    """The event as a dict; raises StoreError if it is not a JSON object."""
    try:
        obj = json.loads(event_bytes)
    except ValueError as e:
        raise StoreError("event is not JSON (%s): %r" % (e, event_bytes[:80]))
    if not isinstance(obj, dict):
        raise StoreError("event is not a JSON object: %r" % event_bytes[:80])
    return obj


class Store:
    def __init__(self, path, timeout=10.0):
        self.path = str(path)
        self.timeout = timeout
        # isolation_level=None: we issue BEGIN ourselves so each write is
        # exactly one transaction. SQLite's own busy handler is left short:
        # its back-off sleeps grow to 100 ms, which with many bridges on one
        # file turned lock waits into 100 ms latency tails; _begin waits in
        # steps of at most 2 ms instead.
        self.db = sqlite3.connect(self.path, timeout=0.001, isolation_level=None)
        self._retry(lambda: self.db.execute("PRAGMA journal_mode=WAL"))
        self.db.execute("PRAGMA synchronous=FULL")
        self._retry(lambda: self.db.executescript(SCHEMA))

    def close(self):
        self.db.close()

    def _retry(self, action):
        """Run a write ``action`` until the file's write lock is free
        (bounded by ``timeout``); another bridge may hold it for a commit."""
        deadline = time.monotonic() + self.timeout
        delay = 0.0002
        while True:
            try:
                return action()
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                if time.monotonic() > deadline:
                    raise StoreError("store %s stayed locked for %.0f s" % (self.path, self.timeout))
                time.sleep(delay)
                delay = min(2 * delay, 0.002)

    def _begin(self):
        self._retry(lambda: self.db.execute("BEGIN IMMEDIATE"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- shoes --------------------------------------------------------------

    def register_shoe(self, shoe_id, key_id=None, settings=None):
        """Record (or refresh) a shoe seen at a handshake."""
        now = time.time()
        settings_text = None if settings is None else json.dumps(settings, sort_keys=True)
        self._begin()
        try:
            self.db.execute(
                "INSERT INTO shoes (shoe_id, key_id, settings, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(shoe_id) DO UPDATE SET"
                " key_id = COALESCE(excluded.key_id, key_id),"
                " settings = COALESCE(excluded.settings, settings),"
                " last_seen = excluded.last_seen",
                (shoe_id, key_id, settings_text, now, now))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def shoe_ids(self):
        return [r[0] for r in self.db.execute("SELECT shoe_id FROM shoes ORDER BY shoe_id")]

    def shoe(self, shoe_id):
        row = self.db.execute(
            "SELECT shoe_id, key_id, settings, first_seq, last_seq, head_hash"
            " FROM shoes WHERE shoe_id = ?", (shoe_id,)).fetchone()
        if row is None:
            return None
        keys = ("shoe_id", "key_id", "settings", "first_seq", "last_seq", "head_hash")
        return dict(zip(keys, row))

    def last_seq(self, shoe_id):
        """The newest stored seq of a shoe, or None when nothing is stored."""
        row = self.db.execute(
            "SELECT last_seq FROM shoes WHERE shoe_id = ?", (shoe_id,)).fetchone()
        return None if row is None else row[0]

    # -- events -------------------------------------------------------------

    def append(self, shoe_id, seq, event_bytes, received=None):
        """Store one event durably; return STORED or DUPLICATE.

        The first event of a shoe may carry any seq (the shoe may have been
        running before this file existed); after that only head + 1 is
        accepted. A lower seq with identical bytes is a retransmission and is
        dropped; with different bytes it is a Conflict. A higher seq raises
        SequenceGap so the caller can ask for the missing events.
        """
        if isinstance(event_bytes, str):
            event_bytes = event_bytes.encode("utf-8")
        event = parse_event(event_bytes)
        received = time.time() if received is None else received
        self._begin()
        try:
            outcome = self._append_locked(shoe_id, seq, event_bytes, event, received)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return outcome

    def _append_locked(self, shoe_id, seq, event_bytes, event, received):
        head = self.db.execute(
            "SELECT last_seq, head_hash FROM shoes WHERE shoe_id = ?", (shoe_id,)).fetchone()
        if head is None:
            self.db.execute(
                "INSERT INTO shoes (shoe_id, first_seen, last_seen) VALUES (?, ?, ?)",
                (shoe_id, received, received))
            head = (None, None)
        last_seq, head_hex = head
        if last_seq is not None and seq <= last_seq:
            row = self.db.execute(
                "SELECT event FROM events WHERE shoe_id = ? AND seq = ?",
                (shoe_id, seq)).fetchone()
            if row is not None and row[0].encode("utf-8") == event_bytes:
                return DUPLICATE
            raise Conflict("shoe %s seq %d: already stored as %r, now received as %r" % (
                shoe_id, seq, row[0] if row else None, event_bytes.decode("utf-8", "replace")))
        if last_seq is not None and seq != last_seq + 1:
            raise SequenceGap(shoe_id, last_seq + 1, seq)
        prev = GENESIS if head_hex is None else bytes.fromhex(head_hex)
        digest = chain_hash(prev, event_bytes, seq, shoe_id).hex()
        rnd = event.get("round")
        self.db.execute(
            "INSERT INTO events (shoe_id, seq, type, round, event, received, prev_hash, hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (shoe_id, seq, event.get("type"), rnd if isinstance(rnd, int) else None,
             event_bytes.decode("utf-8"), received, prev.hex(), digest))
        self.db.execute(
            "UPDATE shoes SET first_seq = COALESCE(first_seq, ?), last_seq = ?,"
            " head_hash = ?, last_seen = ? WHERE shoe_id = ?",
            (seq, seq, digest, received, shoe_id))
        return STORED

    def events(self, shoe_id=None):
        """(shoe_id, seq, event text, prev_hash, hash) in shoe then seq order."""
        sql = "SELECT shoe_id, seq, event, prev_hash, hash FROM events"
        if shoe_id is None:
            return self.db.execute(sql + " ORDER BY shoe_id, seq")
        return self.db.execute(sql + " WHERE shoe_id = ? ORDER BY seq", (shoe_id,))

    def count(self, shoe_id):
        return self.db.execute(
            "SELECT COUNT(*) FROM events WHERE shoe_id = ?", (shoe_id,)).fetchone()[0]

    # -- link log -----------------------------------------------------------

    def log_link(self, shoe_id, kind, detail):
        """Record a connect, disconnect or link error (its own transaction)."""
        self._retry(lambda: self.db.execute(
            "INSERT INTO link_log (shoe_id, time, kind, detail) VALUES (?, ?, ?, ?)",
            (shoe_id, time.time(), kind, detail)))

    def link_log(self, shoe_id=None):
        sql = "SELECT shoe_id, time, kind, detail FROM link_log"
        if shoe_id is None:
            return list(self.db.execute(sql + " ORDER BY id"))
        return list(self.db.execute(sql + " WHERE shoe_id = ? ORDER BY id", (shoe_id,)))


def with_seq(event_text, seq):
    """The shoe's event object with "seq" added, every other byte unchanged."""
    body = event_text.rstrip()
    if body == "{}":
        return '{"seq":%d}' % seq
    return '%s,"seq":%d}' % (body[:-1], seq)


def open_existing(path):
    """Open a store for reading; a mistyped path must not create an empty file."""
    if not os.path.exists(str(path)):
        raise StoreError("no store at %s" % path)
    return Store(path)
