"""The SQLite store: shoes, their chained events, the link log and alerts.

Why these choices:

- WAL with ``synchronous=FULL``: `append` returns only after the commit is on
  disk, because the bridge acknowledges the event to the shoe straight after,
  and the shoe then forgets it. A power cut of the pit PC after the ack must
  not lose the event.
- Two chains per shoe. The SHA-256 chain below is the store's own: it shows
  that rows were not edited, dropped or reordered *by accident* or by anyone
  who did not bother to recompute it. The shoe's tag chain (link v2,
  docs/protocol.md) is what makes the record trustworthy: each event's tag
  (column ``mac``) is an HMAC-SHA256 (first 16 bytes) over the shoe id, the seq, the previous
  event's tag and the event bytes, so only the key holder can extend it, and
  ``shoe verify --key-file`` catches a store edited and re-chained by anyone
  with write access to this file. ``first_prev`` is the PREV of the first
  stored event (zeros at seq 1; the hello's ``chain`` when the shoe was
  already running before this store saw it), so the tag chain can be checked
  from the first row.
- One chain per shoe (not one for the whole file): shoes are independent
  sources with their own sequence counters, and several bridges may write one
  file at once without serialising on a global chain head.
- The chain head (last seq and hash) is also kept in the ``shoes`` row, updated
  in the same transaction, so deleting the newest rows is detected too.
- The event text is stored byte for byte as the shoe sent it (without its
  tag, which has its own column). It is the record; the pit PC never rewrites
  what the shoe said.
- ``link_log`` keeps what happened to the connection (connect, disconnect,
  bad frames, gaps, refusals, commands sent): a regulator asks for loss of
  communication to be logged, and it is not part of any shoe's chain
  because the shoe did not say it.
- ``alerts`` keeps what surveillance must act on: forged frames (aggregated,
  one row per flood, so a flood cannot fill the disk), a shoe that rolled
  back, a shoe that signed two different events for one seq. ``shoe verify``
  fails on a critical one.

Hash of a row (all integers big-endian)::

    sha256( prev_hash[32] || u32 len(event) || event bytes || u64 seq || shoe id UTF-8 )

``prev_hash`` of a shoe's first stored row is 32 zero bytes. The event length
makes the split between event and shoe id unambiguous.

Tag of a row (checked with the shoe key, firmware/link/host_frames.py)::

    HMAC-SHA256-128(K_frames, SHOE_ID " E" SEQ " " PREV " " event bytes)

PREV is the previous row's ``mac``, ``first_prev`` for the first row, or 32
zeros where the shoe restarted its chain (host_tools/protocol/chain.py, ``may_restart``).
"""

import hashlib
import json
import os
import sqlite3
import struct
import time

from host_tools.protocol.record import Conflict, Record, SequenceGap, StoreError, record_proto  # noqa: F401  (db.X is what callers name)
from host_tools.store import audit
from firmware.link import auth as _auth

GENESIS = bytes(32)
FORMAT = 2  # PRAGMA user_version of a store written for link protocol 2
SEVERITIES = ("info", "warning", "critical")

SCHEMA = """
CREATE TABLE IF NOT EXISTS shoes (
    shoe_id    TEXT PRIMARY KEY,
    key_id     TEXT,
    settings   TEXT,
    first_seq  INTEGER,
    first_prev TEXT,
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
    mac       TEXT,
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
CREATE TABLE IF NOT EXISTS alerts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    shoe_id    TEXT,
    time       REAL NOT NULL,
    severity   TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    kind       TEXT NOT NULL,
    detail     TEXT NOT NULL,
    count      INTEGER NOT NULL,
    first_time REAL NOT NULL,
    last_time  REAL NOT NULL
);
"""

# append() outcomes
STORED = "stored"
DUPLICATE = "duplicate"

ZERO_HEX = _auth.ZERO_MAC.decode("ascii")  # the first_prev of a chain that starts at seq 1


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


def event_columns(event):
    """The columns the store derives from a parsed event for its queries:
    (type, round), round only when it is an integer."""
    rnd = event.get("round")
    return event.get("type"), rnd if isinstance(rnd, int) else None


def event_object(event):
    """``event`` when it is a parsed JSON object, else StoreError."""
    if not isinstance(event, dict):
        raise StoreError("event is not a JSON object: %r" % (event,))
    return event


class Store(Record):
    def __init__(self, path, timeout=10.0, readonly=False):
        """Open (creating if need be) a store. ``readonly`` opens an existing
        file through SQLite's ``mode=ro``: `shoe verify` must not change a
        byte of the evidence it checks, and cannot by accident."""
        self.path = str(path)
        self.timeout = timeout
        self.readonly = readonly
        # isolation_level=None: we issue BEGIN ourselves so each write is
        # exactly one transaction. SQLite's own busy handler is left short:
        # its back-off sleeps grow to 100 ms, which with many bridges on one
        # file turned lock waits into 100 ms latency tails; _begin waits in
        # steps of at most 2 ms instead.
        try:
            if readonly:
                from urllib.parse import quote
                self.db = sqlite3.connect("file:%s?mode=ro" % quote(os.path.abspath(self.path)),
                                          uri=True, timeout=timeout, isolation_level=None)
            else:
                self.db = sqlite3.connect(self.path, timeout=0.001, isolation_level=None)
            # Reading the format also waits out a writer's lock (a table's
            # bridge creating the file while the casino publisher opens it).
            current = self._check_format() if readonly else self._retry(self._check_format)
            if not readonly:
                self._retry(lambda: self.db.execute("PRAGMA journal_mode=WAL"))
                self.db.execute("PRAGMA synchronous=FULL")
                if not current:  # a write: a pit opening 256 connections at once queued on it
                    self._retry(self._create)
        except sqlite3.DatabaseError as e:
            raise StoreError("cannot use %s as a store: %s" % (self.path, e))

    def _create(self):
        self.db.executescript(SCHEMA + audit.SCHEMA)
        self.db.execute("PRAGMA user_version = %d" % FORMAT)

    def _check_format(self):
        """Refuse a file this code cannot keep its promises on, in one line."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == FORMAT:
            return True
        if version == 0 and "events" in tables:
            self.db.close()
            raise StoreError(
                "%s is a link-protocol-1 store (events without the shoe's tags); this version "
                "cannot extend or verify it: keep it as it is and give the bridge a new --db" % self.path)
        if version == 0 and not tables:
            if self.readonly:
                self.db.close()
                raise StoreError("%s is not a store (no tables)" % self.path)
            return
        self.db.close()
        raise StoreError("%s is not a store of this version (format %d, tables %s)"
                         % (self.path, version, ", ".join(sorted(tables)) or "none"))

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
        return self.write(self.register_shoe_write(shoe_id, key_id, settings))

    def register_shoe_write(self, shoe_id, key_id=None, settings=None):
        now = time.time()
        settings_text = None if settings is None else json.dumps(settings, sort_keys=True)

        def write(store):
            store.db.execute(
                "INSERT INTO shoes (shoe_id, key_id, settings, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(shoe_id) DO UPDATE SET"
                " key_id = COALESCE(excluded.key_id, key_id),"
                " settings = COALESCE(excluded.settings, settings),"
                " last_seen = excluded.last_seen",
                (shoe_id, key_id, settings_text, now, now))
        return write

    def shoe_ids(self):
        return [r[0] for r in self.db.execute("SELECT shoe_id FROM shoes ORDER BY shoe_id")]

    def shoe(self, shoe_id):
        """The shoe's row with its chain head (``last_mac``: the tag of the
        newest stored event, the PREV the next event must carry), or None."""
        row = self.db.execute(
            "SELECT s.shoe_id, s.key_id, s.settings, s.first_seq, s.first_prev, s.last_seq,"
            " s.head_hash, e.mac FROM shoes s LEFT JOIN events e"
            " ON e.shoe_id = s.shoe_id AND e.seq = s.last_seq WHERE s.shoe_id = ?",
            (shoe_id,)).fetchone()
        if row is None:
            return None
        keys = ("shoe_id", "key_id", "settings", "first_seq", "first_prev", "last_seq",
                "head_hash", "last_mac")
        return dict(zip(keys, row))

    def last_seq(self, shoe_id):
        """The newest stored seq of a shoe, or None when nothing is stored."""
        row = self.db.execute(
            "SELECT last_seq FROM shoes WHERE shoe_id = ?", (shoe_id,)).fetchone()
        return None if row is None else row[0]

    def max_counter(self, shoe_id):
        """The highest command counter of a stored ``accepted`` event (0 if
        none): a hello reporting less has lost commands the record shows."""
        best = 0
        for (text,) in self.db.execute(
                "SELECT event FROM events WHERE shoe_id = ? AND type = 'accepted'", (shoe_id,)):
            try:
                counter = json.loads(text).get("counter")
            except (ValueError, AttributeError):
                continue
            if isinstance(counter, int) and not isinstance(counter, bool):
                best = max(best, counter)
        return best

    # -- events -------------------------------------------------------------

    def append(self, shoe_id, seq, event_bytes, received=None, mac=None, first_seq=None,
               first_prev=None, event=None):
        """Store one event durably; return STORED or DUPLICATE.

        ``mac`` is the event's tag as the shoe sent it (the caller has
        verified it; see ``tag_link``). The first event of a shoe must carry
        ``first_seq`` when it is given (the seq after the hello's ``acked``:
        a later one means the first event was lost, and is a SequenceGap like
        any other, never a new start), and ``first_prev`` is recorded as the
        PREV of that first event. Without ``first_seq`` the first event may
        carry any seq (stores filled by tests and tools without a shoe).
        After that only head + 1 is accepted. A lower seq with identical
        bytes and tag is a retransmission and is dropped; anything else at a
        stored seq is a Conflict. A higher seq raises SequenceGap so the
        caller can wait for the missing events.

        ``event``: ``event_bytes`` already parsed by the caller (the bridge's
        schema check parses every event before it stores it), so the store
        need not parse it again; it must be the JSON object those very bytes
        decode to. Without it the store parses the bytes itself.
        """
        columns = None if event is None else event_columns(event_object(event))
        return self.write(self.append_write(shoe_id, seq, event_bytes, received, mac, first_seq,
                                            first_prev, columns))

    def append_write(self, shoe_id, seq, event_bytes, received=None, mac=None, first_seq=None,
                     first_prev=None, columns=None):
        """``append``'s checks as a write for ``write``/``write_many``: the
        arguments are checked here, the chain inside the transaction.
        ``columns``: ``event_columns`` the parsed event, when the caller parsed
        it (the pit's table threads, whose committer then parses nothing)."""
        if self.readonly:
            raise StoreError("store %s is open read-only" % self.path)
        if isinstance(event_bytes, str):
            event_bytes = event_bytes.encode("utf-8")
        if isinstance(mac, (bytes, bytearray)):
            mac = bytes(mac).decode("ascii")
        if isinstance(first_prev, (bytes, bytearray)):
            first_prev = bytes(first_prev).decode("ascii")
        try:
            text = event_bytes.decode("utf-8")  # before the transaction: a refusal of its own
        except UnicodeDecodeError as e:
            raise StoreError("event is not UTF-8 text (%s): %r" % (e, event_bytes[:80]))
        if columns is None:
            columns = event_columns(parse_event(event_bytes))
        else:
            kind, rnd = columns
            if not (kind is None or isinstance(kind, str)) or not (rnd is None or isinstance(rnd, int)):
                raise StoreError("an event's columns are (type text, round integer), not %r"
                                 % (columns,))
        received = time.time() if received is None else received
        return lambda store: store._append_locked(shoe_id, seq, event_bytes, text, columns, received,
                                                  mac, first_seq, first_prev)

    # -- transactions -------------------------------------------------------

    def write(self, action):
        """Run one write (a function of the store, from a ``*_write``
        method) as its own durable transaction; its result, or its error
        (the transaction then undone). ``write_many``'s outcome for one
        write, without its savepoint: a bridge pays this per card."""
        if self.readonly:
            raise StoreError("store %s is open read-only" % self.path)
        self._begin()
        try:
            out = action(self)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return out

    def write_many(self, actions):
        """Group commit: run every write in ONE transaction, so one fsync
        makes them all durable (the pit's tables share it, host_tools/pit/
        groupcommit.py). Each runs under its own savepoint: one that raises
        a StoreError (a gap, a conflict) is undone alone and its error is its
        result; the others still commit. Returns the results in order only
        after COMMIT returned; any other failure undoes all and raises."""
        if self.readonly:
            raise StoreError("store %s is open read-only" % self.path)
        results = []
        self._begin()
        try:
            for action in actions:
                self.db.execute("SAVEPOINT one")
                try:
                    results.append(action(self))
                except StoreError as e:
                    self.db.execute("ROLLBACK TO one")
                    results.append(e)
                self.db.execute("RELEASE one")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return results

    def _append_locked(self, shoe_id, seq, event_bytes, text, columns, received, mac, first_seq,
                       first_prev):
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
                "SELECT event, mac FROM events WHERE shoe_id = ? AND seq = ?",
                (shoe_id, seq)).fetchone()
            if row is not None and row[0].encode("utf-8") == event_bytes and row[1] == mac:
                return DUPLICATE
            raise Conflict("shoe %s seq %d: already stored as %r, now received as %r" % (
                shoe_id, seq, row[0] if row else None, event_bytes.decode("utf-8", "replace")))
        if last_seq is not None and seq != last_seq + 1:
            raise SequenceGap(shoe_id, last_seq + 1, seq)
        if last_seq is None and first_seq is not None and seq != first_seq:
            raise SequenceGap(shoe_id, first_seq, seq)
        prev = GENESIS if head_hex is None else bytes.fromhex(head_hex)
        digest = chain_hash(prev, event_bytes, seq, shoe_id).hex()
        self.db.execute(
            "INSERT INTO events (shoe_id, seq, type, round, event, mac, received, prev_hash, hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (shoe_id, seq, columns[0], columns[1], text, mac, received, prev.hex(), digest))
        if last_seq is None:
            self.db.execute("UPDATE shoes SET first_seq = ?, first_prev = ? WHERE shoe_id = ?",
                            (seq, first_prev, shoe_id))
        self.db.execute(
            "UPDATE shoes SET last_seq = ?, head_hash = ?, last_seen = ? WHERE shoe_id = ?",
            (seq, digest, received, shoe_id))
        return STORED

    def events(self, shoe_id=None):
        """(shoe_id, seq, event text, prev_hash, hash) in shoe then seq order."""
        sql = "SELECT shoe_id, seq, event, prev_hash, hash FROM events"
        if shoe_id is None:
            return self.db.execute(sql + " ORDER BY shoe_id, seq")
        return self.db.execute(sql + " WHERE shoe_id = ? ORDER BY seq", (shoe_id,))

    def rows(self, shoe_id):
        """Every stored column of a shoe's events, as dicts in seq order."""
        keys = ("seq", "type", "round", "event", "mac", "prev_hash", "hash")
        for row in self.db.execute("SELECT %s FROM events WHERE shoe_id = ? ORDER BY seq"
                                   % ", ".join(keys), (shoe_id,)):
            yield dict(zip(keys, row))

    def event_row(self, shoe_id, seq):
        """(event text, tag) stored at ``seq``, or None."""
        return self.db.execute("SELECT event, mac FROM events WHERE shoe_id = ? AND seq = ?",
                               (shoe_id, seq)).fetchone()

    def count(self, shoe_id):
        return self.db.execute(
            "SELECT COUNT(*) FROM events WHERE shoe_id = ?", (shoe_id,)).fetchone()[0]

    def latest_checkpoint(self, shoe_id):
        row = self.db.execute(
            "SELECT seq, mac FROM events WHERE shoe_id = ? AND type = 'checkpoint'"
            " ORDER BY seq DESC LIMIT 1", (shoe_id,)).fetchone()
        return None if row is None or not row[1] else (row[0], row[1])

    # -- link log -----------------------------------------------------------

    def log_link(self, shoe_id, kind, detail):
        """Record a connect, disconnect or link error (its own transaction)."""
        return self.write(self.log_link_write(shoe_id, kind, detail))

    def log_link_write(self, shoe_id, kind, detail):
        now = time.time()

        def write(store):
            store.db.execute("INSERT INTO link_log (shoe_id, time, kind, detail) VALUES (?, ?, ?, ?)",
                             (shoe_id, now, kind, detail))
        return write

    def link_log(self, shoe_id=None):
        sql = "SELECT shoe_id, time, kind, detail FROM link_log"
        if shoe_id is None:
            return list(self.db.execute(sql + " ORDER BY id"))
        return list(self.db.execute(sql + " WHERE shoe_id = ? ORDER BY id", (shoe_id,)))

    # -- alerts -------------------------------------------------------------

    def alert(self, shoe_id, severity, kind, detail, count=1, first_time=None, last_time=None,
              merge_within=None):
        """Raise an alert, or merge it into the newest one of the same shoe,
        kind and severity when that one's last occurrence is no more than
        ``merge_within`` seconds before this one's first: a flood of forged
        frames is then one row whose count and last time grow, so it cannot
        fill the disk. Returns the row id."""
        return self.write(self.alert_write(shoe_id, severity, kind, detail, count, first_time,
                                           last_time, merge_within))

    def alert_write(self, shoe_id, severity, kind, detail, count=1, first_time=None, last_time=None,
                    merge_within=None):
        if severity not in SEVERITIES:
            raise ValueError("severity must be one of %s, not %r" % (", ".join(SEVERITIES), severity))
        now = time.time()
        first_time = now if first_time is None else first_time
        last_time = first_time if last_time is None else last_time

        def write(store):
            row = None
            if merge_within is not None:
                row = store.db.execute(
                    "SELECT id FROM alerts WHERE shoe_id IS ? AND kind = ? AND severity = ?"
                    " AND last_time >= ? ORDER BY id DESC LIMIT 1",
                    (shoe_id, kind, severity, first_time - merge_within)).fetchone()
            if row is not None:
                store.db.execute(
                    "UPDATE alerts SET count = count + ?, last_time = MAX(last_time, ?),"
                    " detail = ? WHERE id = ?", (count, last_time, detail, row[0]))
                audit.log_alert(store.db, row[0])
                return row[0]
            rid = store.db.execute(
                "INSERT INTO alerts (shoe_id, time, severity, kind, detail, count,"
                " first_time, last_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (shoe_id, now, severity, kind, detail, count, first_time, last_time)).lastrowid
            audit.log_alert(store.db, rid)  # the alerts' chained history (audit.py)
            return rid
        return write

    def alerts(self, shoe_id=None, severity=None):
        """Alerts as dicts, oldest first; filtered by shoe and/or severity."""
        keys = ("id", "shoe_id", "time", "severity", "kind", "detail", "count", "first_time",
                "last_time")
        sql, args = alerts_query(keys, shoe_id, severity, "?")
        return [dict(zip(keys, r)) for r in self.db.execute(sql, args)]


def alerts_query(columns, shoe_id=None, severity=None, mark="?"):
    """The alert listing's SQL and arguments, oldest first, filtered by shoe
    and/or severity: one query for both readers of an ``alerts`` table, the
    pit store here (SQLite, ``?``) and the central record
    (host_tools/central/record.py, PostgreSQL, ``%s``), so the two listings
    cannot drift apart. ``mark`` is the driver's placeholder."""
    where, args = [], []
    for column, value in (("shoe_id", shoe_id), ("severity", severity)):
        if value is not None:
            where.append("%s = %s" % (column, mark))
            args.append(value)
    sql = "SELECT %s FROM alerts" % ", ".join(columns)
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY id", args


def with_seq(event_text, seq):
    """The shoe's event object with "seq" added, every other byte unchanged.

    An event that already names its seq (a ``status`` event reports its own,
    firmware/link/reports.py) is returned as it is: a second "seq" key would
    make the line a JSON object whose meaning depends on the reader's parser.
    If the two numbers differ, the store and the shoe disagree, which is an
    error to report, not a line to print.
    """
    body = event_text.rstrip()
    if body == "{}":
        return '{"seq":%d}' % seq
    if '"seq"' in body:  # cheap test first: only status events pay for the parse
        own = json.loads(body).get("seq")
        if own is not None:
            if own != seq:
                raise StoreError("stored event %d names itself seq %r" % (seq, own))
            return body
    return '%s,"seq":%d}' % (body[:-1], seq)


def open_existing(path):
    """Open a store for reading only; a mistyped path must not create an
    empty file, and a reader must not change the evidence."""
    if not os.path.exists(str(path)):
        raise StoreError("no store at %s" % path)
    return Store(path, readonly=True)
