"""The central record: a durable JetStream pull consumer writing PostgreSQL.

Every message is untrusted until its tag verifies under the shoe's key and
links to the event stored before it (link v2, ``chain.tag_link``: the same one
check the bridge and `shoe verify` use). Only then is it a row of
``events``. What fails is never stored as good: it is counted into an
``alerts`` row, and the message is acked (it has been dealt with; a forger
must not be able to fill the broker with redeliveries).

Exactly once:

- ``events`` has PRIMARY KEY (shoe_id, seq): no row is ever written twice
  or overwritten (verified rows go in by COPY, which the key stops on a
  collision; the batch is then retried with ``ON CONFLICT DO NOTHING``); a
  message whose (shoe, seq) is stored is compared
  byte for byte: the same bytes and tag are a duplicate (dropped, counted),
  different ones are an alert (``rollback`` when the shoe's key signed them:
  the shoe signed two events for one seq; ``conflict`` when not: a replay or
  a forgery), never an overwrite.
- A message is acked only after the transaction holding its row (or its
  alert, or its held copy) committed. A consumer killed in between leaves
  the message unacked, JetStream redelivers it, and the key absorbs it.

Two or more consumers share one durable consumer name, so JetStream splits
the messages between them. Each batch runs in one transaction that first
locks the ``shoes`` rows it touches (``SELECT ... FOR UPDATE``, in shoe-id
order so two consumers cannot deadlock; a deadlock or serialization failure
anyway just retries the batch). Events of one shoe that arrive out of order
(split across the two consumers, or redelivered late) wait in ``held``
until their predecessor is stored, and are then verified and promoted in
the transaction that stored the predecessor: the tag of seq N is made over
the tag of N-1, so it cannot be checked before N-1 is known. Holding in
PostgreSQL instead of nak-with-delay means no redelivery round trips and no
head-of-line stall; docs/casino.md has the comparison. A shoe whose held
events wait longer than ``GAP_S`` for a predecessor gets a ``gap`` alert.
"""

import asyncio
import collections
import json
import logging
import os
import time

from host_tools.protocol import alerts, chain, walk
from host_tools.protocol.untrusted import excerpt
from host_tools.casino import access, wire
from host_tools.central import pitlog

log = logging.getLogger("shoe.casino.central")

DURABLE = access.DURABLE
BATCH = 256           # messages per fetch (each a run of up to wire.MAX_EVENTS events)
# A pull's expiry. Short on purpose: nats-py's fetch, once a waiting pull
# has its first message, waits for the rest of the batch until the pull
# expires, so the expiry is the worst added delay at a real pace (it was
# 0.25 s and made the p99 of pit -> central 230 ms). With a backlog the
# no-wait probe of each fetch returns at once, so throughput is unaffected.
FETCH_TIMEOUT_S = 0.04
ACK_WAIT_S = 10.0
MAX_ACK_PENDING = 20000
GAP_S = 5.0
SWEEP_S = 1.0
NOTIFY = "shoe_central"  # NOTIFY channel: a batch stored events or alerts (the central view LISTENs)
SCHEMA_LOCK = 130013   # pg_advisory_xact_lock id: one consumer creates the schema at a time

SCHEMA = """
CREATE TABLE IF NOT EXISTS shoes (
    shoe_id    TEXT PRIMARY KEY,
    casino     TEXT, pit TEXT, tbl TEXT,
    first_seq  BIGINT,
    first_prev TEXT,
    last_seq   BIGINT,
    last_mac   TEXT,
    updated    DOUBLE PRECISION
);
-- Every batch moves the chain head of each shoe it stores: half of each
-- page free keeps those updates HOT (no new index entry; measured with
-- `shoe bench casino` at 6,000 tables, 17-84 % HOT at the default 100).
ALTER TABLE shoes SET (fillfactor = 50);
CREATE TABLE IF NOT EXISTS events (
    shoe_id   TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    casino    TEXT NOT NULL, pit TEXT NOT NULL, tbl TEXT NOT NULL,
    type      TEXT,
    round     BIGINT,
    event     TEXT NOT NULL,
    mac       TEXT NOT NULL,
    pit_committed     DOUBLE PRECISION,
    central_committed DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (shoe_id, seq)
);
CREATE TABLE IF NOT EXISTS held (
    shoe_id TEXT NOT NULL, seq BIGINT NOT NULL, mac TEXT NOT NULL,
    event   TEXT NOT NULL,
    casino TEXT NOT NULL, pit TEXT NOT NULL, tbl TEXT NOT NULL,
    first_prev TEXT,
    pit_committed DOUBLE PRECISION,
    held_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (shoe_id, seq, mac)
);
CREATE TABLE IF NOT EXISTS anchors (
    shoe_id TEXT NOT NULL, seq BIGINT NOT NULL, mac TEXT NOT NULL,
    recorded DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (shoe_id, seq)
);
CREATE TABLE IF NOT EXISTS alerts (
    id       BIGSERIAL PRIMARY KEY,
    shoe_id  TEXT,
    time     DOUBLE PRECISION NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    kind     TEXT NOT NULL,
    detail   TEXT NOT NULL,
    casino TEXT, pit TEXT, tbl TEXT
);
-- Refused messages merge: one row per cause per device (merge_key), with
-- how many and the first (time) and last times; detail is the latest.
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS count BIGINT NOT NULL DEFAULT 1;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS last_time DOUBLE PRECISION;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS merge_key TEXT UNIQUE;
-- The device registry (`shoe central register`): which casino, pit and
-- table a shoe or shuffler belongs to. Central files an event under the
-- table named here, whatever the message's subject or headers say.
-- public_key: the PEM of the device's secure-element key (`shoe central
-- register --pubkey SHOE-ID.pub`), for `shoe verify --central`.
CREATE TABLE IF NOT EXISTS devices (
    device_id  TEXT PRIMARY KEY,
    kind       TEXT NOT NULL DEFAULT 'shoe' CHECK (kind IN ('shoe', 'shuffler')),
    casino     TEXT NOT NULL, pit TEXT NOT NULL, tbl TEXT NOT NULL,
    public_key TEXT,
    registered DOUBLE PRECISION NOT NULL
);
-- Each pit's alerts and audit rows as its store holds them, keyed by the
-- pit's own row id (a republish is absorbed); the pit's row chain rides in
-- the body.
CREATE TABLE IF NOT EXISTS pit_log (
    casino TEXT NOT NULL, pit TEXT NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('alert', 'audit')),
    pit_id BIGINT NOT NULL,
    time   DOUBLE PRECISION,
    body   TEXT NOT NULL,
    received DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (casino, pit, kind, pit_id)
);
-- Each pit's two chains at central (central/pitlog.py): a row is linked
-- once it extends the pit's chain; one that waits for its predecessor is
-- kept unlinked. pit_log_heads: the last linked row of each chain.
ALTER TABLE pit_log ADD COLUMN IF NOT EXISTS prev_hash TEXT;
ALTER TABLE pit_log ADD COLUMN IF NOT EXISTS hash TEXT;
ALTER TABLE pit_log ADD COLUMN IF NOT EXISTS linked BOOLEAN NOT NULL DEFAULT true;
CREATE TABLE IF NOT EXISTS pit_log_heads (
    casino TEXT NOT NULL, pit TEXT NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('alert', 'audit')),
    last_id BIGINT NOT NULL,
    last_hash TEXT NOT NULL,
    PRIMARY KEY (casino, pit, kind)
);
"""

WRITER_TABLES = ("shoes", "events", "held", "anchors", "alerts", "pit_log", "pit_log_heads")


def grant(conn, writer, reader):
    """Least privilege in PostgreSQL (admin's connection): the writer
    (`shoe central`) reads and writes the record but only reads the device
    registry; the reader (the central view, `shoe verify --central`) only
    reads. Neither may create, alter or drop anything."""
    from psycopg import sql
    with conn.transaction():
        for role in (writer, reader):
            conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {}").format(
                sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
                sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(
            sql.SQL(", ").join(map(sql.Identifier, WRITER_TABLES)), sql.Identifier(writer)))
        conn.execute(sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {}").format(
            sql.Identifier(writer)))


def register(conn, device_id, casino, pit, table, kind="shoe", public_key=None):
    """Add or move a device in the registry (admin's connection).
    ``public_key``: the PEM of its secure element's key (`shoe deploy`'s
    SHOE-ID.pub), which `shoe verify --central` checks signed checkpoints
    with; a registration without one keeps the key already registered."""
    conn.execute("INSERT INTO devices (device_id, kind, casino, pit, tbl, public_key, registered)"
                 " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (device_id) DO UPDATE SET"
                 " kind = excluded.kind, casino = excluded.casino, pit = excluded.pit,"
                 " tbl = excluded.tbl, registered = excluded.registered,"
                 " public_key = COALESCE(excluded.public_key, devices.public_key)",
                 (device_id, kind, casino, pit, table, public_key, time.time()))


def start_prev(seq):
    """The PREV a shoe's first central event links to: ZERO for seq 1, and
    nothing else. The record never starts at a later seq on a publisher's
    word (``Shoe-First-Prev`` is ignored). The seam for the root-of-trust
    work: a start at a checkpoint the device signed will be accepted here,
    once devices have keys in the registry to check that signature."""
    return chain.ZERO_HEX if seq == 1 else None

# The per-session staging table of a batch's verified rows (emptied at
# every commit), and its COPY: columns in the order of ``events``.
STAGE_SQL = "CREATE TEMP TABLE IF NOT EXISTS stage_events (LIKE events) ON COMMIT DELETE ROWS"
# The verified rows straight into ``events``: under the shoes' row locks no
# stored row can collide with them, so the staging table's ON CONFLICT is only
# the fallback when one does anyway (Central.process retries the batch so).
EVENTS_COPY = ("COPY events (shoe_id, seq, casino, pit, tbl, type, round, event, mac,"
               " pit_committed, central_committed) FROM STDIN (FORMAT BINARY)")
STAGE_COPY = ("COPY stage_events (shoe_id, seq, casino, pit, tbl, type, round, event, mac,"
              " pit_committed, central_committed) FROM STDIN (FORMAT BINARY)")
# The same for the events a batch holds (several consumers split one shoe's
# messages, so a backlog holds about one event in seven for a moment:
# `shoe bench casino`; one row at a time they cost a sixth of the consumer).
STAGE_HELD_SQL = "CREATE TEMP TABLE IF NOT EXISTS stage_held (LIKE held) ON COMMIT DELETE ROWS"
STAGE_HELD_COPY = ("COPY stage_held (shoe_id, seq, mac, event, casino, pit, tbl, first_prev,"
                   " pit_committed, held_at) FROM STDIN (FORMAT BINARY)")
STAGE_HELD_TYPES = ["text", "int8", "text", "text", "text", "text", "text", "text", "float8", "float8"]
STAGE_TYPES = ["text", "int8", "text", "text", "text", "text", "int8", "text", "text", "float8",
               "float8"]

CRITICAL, WARNING = alerts.CRITICAL, alerts.WARNING


def create_schema(conn):
    """Create the tables (sync psycopg connection); safe with two consumers."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute(SCHEMA)


# A verified row of ``events``, its columns in the table's order (the COPY writes it as is).
EventRow = collections.namedtuple("EventRow", "shoe_id seq casino pit tbl type round event mac "
                                  "pit_committed central_committed")


class Msg:
    """One decoded message (or a held row) the batch logic works on."""
    __slots__ = ("casino", "pit", "tbl", "shoe", "seq", "mac", "first_prev", "committed", "body",
                 "held", "text")

    def __init__(self, casino, pit, tbl, shoe, seq, mac, first_prev, committed, body, held=False,
                 text=None):
        self.casino, self.pit, self.tbl = casino, pit, tbl
        self.shoe, self.seq, self.mac = shoe, seq, mac
        self.first_prev, self.committed, self.body = first_prev, committed, body
        self.held = held
        self.text = text    # the body decoded once (consumer.decode checked it is UTF-8)


class Outcome:
    """What one batch did, for the counters and the tests."""

    def __init__(self):
        self.stored = self.duplicates = self.held = self.refused = self.pit_log = 0
        self.alerts = []     # (shoe, severity, kind, detail, casino, pit, tbl, merge key or None)


class Writes:
    """What one batch writes: verified ``rows`` (EventRow), held events
    settled (``unhold``: (shoe, seq, mac)), events to ``hold``, checkpoint
    ``anchors`` and the shoes' new chain ``heads`` (whole rows) or ``moved``
    heads (only the chain's end)."""

    def __init__(self):
        self.rows, self.unhold, self.hold, self.anchors, self.heads = [], [], [], [], []
        self.moved = []   # heads that only moved on: (shoe, last seq, last tag, time)

    def keep(self, msgs, out):
        """Hold the new messages of ``msgs`` until their predecessor is stored
        (a held row among them is held already)."""
        for m in msgs:
            if not m.held:
                self.hold.append(m)
                out.held += 1


class Central:
    """The batch logic on one async psycopg connection (no NATS in here, so
    the tests and the soak can feed it messages straight)."""

    def __init__(self, conn, keys):
        self.conn = conn
        self.keys = keys
        self.staged = False
        self.direct = True   # verified rows by COPY into events (False: through stage_events)
        self.counts = {"stored": 0, "duplicates": 0, "held": 0, "refused": 0, "alerts": 0,
                       "batches": 0, "retries": 0, "pit_log": 0}

    async def _stage(self):
        if not self.staged:
            await self.conn.execute(STAGE_SQL)
            await self.conn.execute(STAGE_HELD_SQL)
            self.staged = True

    @staticmethod
    def _malformed(out, items):
        """Alerts for messages that are not a pit's event ((reason, subject)
        pairs): merged into one row per publishing pit (the subject's casino
        and pit, which the pit's credential vouches for)."""
        for why, subj in items:
            parts = str(subj).split(".")
            casino, pit = (parts[1], parts[2]) if len(parts) >= 3 else (None, None)
            out.refused += 1
            out.alerts.append((None, WARNING, "malformed", "%s (subject %s)" % (why, excerpt(subj)),
                               casino, pit, None, "malformed|%s.%s" % (casino, pit)))

    async def _pit_log(self, cur, items, out, now):
        """Take each pit's alert-history and audit rows ((casino, pit, kind,
        rows) from the pit's own subjects, which its credential may publish
        to) where they extend that pit's hash chain (pitlog.accept)."""
        groups = {}
        for casino, pit, kind, rows in items:
            groups.setdefault((casino, pit, kind), []).extend(rows)
        for key in sorted(groups):
            casino, pit, kind = key
            merge = "pit_log_forged|%s.%s.%s" % key
            rows = []
            for r in groups[key]:
                if pitlog.well_formed(kind, r):
                    rows.append(r)
                else:
                    out.refused += 1
                    out.alerts.append((None, alerts.severity("pit_log_forged"), "pit_log_forged",
                                       "pit %s %s row %s lacks its chain fields: refused" % (
                                           pit, kind, excerpt(str(r.get("id")), 20)),
                                       casino, pit, None, merge))
            await cur.execute("INSERT INTO pit_log_heads (casino, pit, kind, last_id, last_hash)"
                              " VALUES (%s, %s, %s, 0, %s) ON CONFLICT DO NOTHING",
                              key + (pitlog.GENESIS,))
            await cur.execute("SELECT last_id, last_hash FROM pit_log_heads WHERE casino = %s AND"
                              " pit = %s AND kind = %s FOR UPDATE", key)
            head_id, head_hash = await cur.fetchone()
            await cur.execute("SELECT body FROM pit_log WHERE casino = %s AND pit = %s AND kind = %s"
                              " AND NOT linked ORDER BY pit_id", key)
            held = [json.loads(r[0]) for r in await cur.fetchall()]
            low = sorted({r["id"] for r in rows if r["id"] <= head_id})
            stored = {}
            if low:
                await cur.execute("SELECT pit_id, hash FROM pit_log WHERE casino = %s AND pit = %s AND"
                                  " kind = %s AND linked AND pit_id = ANY(%s)", key + (low,))
                stored = dict(await cur.fetchall())
            step = pitlog.accept(kind, head_id, head_hash, rows, held, stored.get)
            out.duplicates += step.duplicates
            for rid, why in step.refused:
                out.refused += 1
                out.alerts.append((None, alerts.severity("pit_log_forged"), "pit_log_forged",
                                   "pit %s %s %s" % (pit, kind, why), casino, pit, None, merge))
            if step.drop:
                await cur.execute("DELETE FROM pit_log WHERE casino = %s AND pit = %s AND kind = %s"
                                  " AND NOT linked AND pit_id = ANY(%s)", key + (sorted(set(step.drop)),))

            def values(r, linked):
                return key + (r["id"], pitlog.row_time(kind, r),
                              json.dumps(r, sort_keys=True, separators=(",", ":")), now,
                              r["prev_hash"], r["hash"], linked)
            if step.link:
                await cur.executemany(
                    "INSERT INTO pit_log (casino, pit, kind, pit_id, time, body, received, prev_hash,"
                    " hash, linked) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT"
                    " (casino, pit, kind, pit_id) DO UPDATE SET time = excluded.time,"
                    " body = excluded.body, prev_hash = excluded.prev_hash, hash = excluded.hash,"
                    " linked = true", [values(r, True) for r in step.link])
                last = step.link[-1]
                await cur.execute("UPDATE pit_log_heads SET last_id = %s, last_hash = %s WHERE"
                                  " casino = %s AND pit = %s AND kind = %s",
                                  (last["id"], last["hash"]) + key)
                out.pit_log += len(step.link)
            for r in step.hold:
                await cur.execute(
                    "INSERT INTO pit_log (casino, pit, kind, pit_id, time, body, received, prev_hash,"
                    " hash, linked) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT"
                    " DO NOTHING RETURNING pit_id", values(r, False))
                if await cur.fetchone() is None:   # another row waits for that id already
                    out.refused += 1
                    out.alerts.append((None, alerts.severity("pit_log_forged"), "pit_log_forged",
                                       "pit %s %s row %d: two different rows wait for one id" % (
                                           pit, kind, r["id"]), casino, pit, None, merge))

    async def process(self, msgs, shoes=(), logs=(), bad=()):
        """Verify and commit one batch of Msg (plus the held events of
        ``shoes``, the pit-log messages ``logs`` and the alerts for ``bad``
        messages) in ONE transaction: one commit per fetched batch, after
        which the consumer acks it. Returns its Outcome. Raises only when
        PostgreSQL failed (then nothing of the batch committed)."""
        import psycopg
        self.direct = True
        for attempt in range(20):
            try:
                async with self.conn.transaction():
                    out = await self._batch(msgs, shoes, logs, bad)
                break
            except BaseException as e:
                self.staged = False  # a staging table made in this transaction is gone with it
                if isinstance(e, psycopg.errors.UniqueViolation) and self.direct:
                    # a verified row collided with a stored one (cannot
                    # happen under the row locks): again through the
                    # staging table, which keeps the stored row and says so
                    self.direct = False
                elif not isinstance(e, (psycopg.errors.DeadlockDetected,
                                        psycopg.errors.SerializationFailure)):
                    raise
                self.counts["retries"] += 1
                await asyncio.sleep(0.01 * (attempt + 1))
        else:
            raise RuntimeError("batch kept deadlocking")
        self.counts["batches"] += 1
        for k in ("stored", "duplicates", "held", "refused", "pit_log"):
            self.counts[k] += getattr(out, k)
        self.counts["alerts"] += len(out.alerts)
        return out

    async def _batch(self, msgs, extra_shoes=(), logs=(), bad=()):
        out = Outcome()
        now = time.time()
        cur = self.conn.cursor()
        self._malformed(out, bad)
        if logs:
            await self._pit_log(cur, logs, out, now)
        by_shoe = {s: [] for s in extra_shoes}
        for m in msgs:
            by_shoe.setdefault(m.shoe, []).append(m)
        writes = Writes()
        if by_shoe:
            await self._provenance(cur, by_shoe, out)
            heads, where, stored = await self._load(cur, by_shoe)
            for shoe in sorted(by_shoe):
                self._shoe(out, writes, shoe, heads[shoe], by_shoe[shoe], stored, now, where[shoe])
        await self._write(cur, writes, out, now)
        return out

    @staticmethod
    async def _load(cur, by_shoe):
        """Lock the batch's shoes (in shoe-id order) and read what the walk
        needs: each shoe's chain head, its held events (added to
        ``by_shoe``) and the stored rows the batch's messages collide with,
        with their predecessors' tags. Returns (heads, {shoe: (casino, pit,
        table) as its row has them}, stored)."""
        shoes = sorted(by_shoe)
        heads, where = {}, {}
        # Lock the shoes the record knows, then make (and lock) the few it
        # does not: an insert of every shoe of every batch, absorbed by ON
        # CONFLICT, cost PostgreSQL an index probe per event at a real pace.
        # (New shoes are locked after the known ones, so the shoe-id order
        # holds within each lock only: a deadlock that allows is retried
        # with the batch, as any, in process.)
        todo = shoes
        for attempt in range(2):
            await cur.execute("SELECT shoe_id, first_seq, first_prev, last_seq, last_mac, casino, pit,"
                              " tbl FROM shoes WHERE shoe_id = ANY(%b) ORDER BY shoe_id FOR UPDATE",
                              (todo,))
            for shoe, first_seq, first_prev, last_seq, last_mac, casino, pit, tbl in await cur.fetchall():
                heads[shoe] = chain.Head(first_seq, first_prev, last_seq, last_mac)
                where[shoe] = (casino, pit, tbl)
            todo = [shoe for shoe in shoes if shoe not in heads]
            if not todo:
                break
            if attempt == 0:
                await cur.execute("INSERT INTO shoes (shoe_id) SELECT s FROM unnest(%b::text[]) AS s"
                                  " ORDER BY s ON CONFLICT DO NOTHING", (todo,))
        else:
            raise RuntimeError("shoes %s not in the shoes table after their insert" % todo[:3])
        await cur.execute("SELECT shoe_id, seq, mac, event, casino, pit, tbl, first_prev, pit_committed"
                          " FROM held WHERE shoe_id = ANY(%b)", (shoes,))
        for shoe, seq, mac, text, casino, pit, tbl, first_prev, committed in await cur.fetchall():
            by_shoe[shoe].append(Msg(casino, pit, tbl, shoe, seq, mac, first_prev, committed,
                                     text.encode("utf-8"), held=True, text=text))
        want_s, want_q = [], []
        for shoe in shoes:
            last = heads[shoe].last_seq
            for m in by_shoe[shoe]:
                if last is not None and m.seq <= last and not m.held:
                    want_s += [shoe, shoe]
                    want_q += [m.seq, m.seq - 1]
        stored = {}
        if want_s:
            await cur.execute("SELECT e.shoe_id, e.seq, e.event, e.mac FROM events e JOIN"
                              " unnest(%b::text[], %b::bigint[]) AS w(s, q)"
                              " ON e.shoe_id = w.s AND e.seq = w.q", (want_s, want_q))
            stored = {(shoe, seq): (text, mac) for shoe, seq, text, mac in await cur.fetchall()}
        return heads, where, stored

    def _shoe(self, out, writes, shoe, head, msgs, stored, now, where=None):
        """One shoe's messages and held events against its chain ``head``:
        collisions with stored rows are told apart here (they need the
        record), the rest go through the one chain walk (protocol/walk.py)."""
        fkey = self.keys.frames_key(shoe)
        cands = {}
        for m in msgs:
            if head.last_seq is not None and m.seq <= head.last_seq:
                if not m.held:
                    self._collision(out, m, stored, fkey, head.first_seq, head.first_prev)
                else:
                    writes.unhold.append((m.shoe, m.seq, m.mac))
                continue
            same = cands.setdefault(m.seq, [])
            if any(c.body == m.body and c.mac == m.mac for c in same):
                if not m.held:
                    out.duplicates += 1
                continue
            same.append(m)
        if fkey is None:
            if cands:
                self._alert(out, cands[min(cands)][0], CRITICAL, "no_key", "no key for shoe %s in the "
                            "key directory: its events are held, unverified" % shoe, dedupe=True)
            writes.keep([m for seq_c in cands.values() for m in seq_c], out)
            return
        done = walk.walk(fkey, shoe, head, cands, start_prev)
        for m, kind, detail in done.refused:
            self._refuse(out, m, kind, detail)
        writes.unhold += [(m.shoe, m.seq, m.mac) for m in done.settled]
        for m, event in done.stored:
            row = self._row(m, event, now)
            writes.rows.append(row)
            if row.type == "checkpoint":
                writes.anchors.append((shoe, m.seq, m.mac, now))
        out.stored += len(done.stored)
        writes.keep(done.left, out)
        if done.stored:
            last = done.stored[-1][0]
            if (head.last_seq is not None and head.first_seq == done.head.first_seq
                    and head.first_prev == done.head.first_prev
                    and where == (last.casino, last.pit, last.tbl)):
                writes.moved.append((shoe, done.head.last_seq, done.head.last_mac, now))
            else:   # the shoe's first events, or its place changed: every column
                writes.heads.append((shoe, done.head.first_seq, done.head.first_prev,
                                     done.head.last_seq, done.head.last_mac, last.casino, last.pit,
                                     last.tbl, now))

    async def _provenance(self, cur, by_shoe, out):
        """File each message under the device registry's casino, pit and
        table, whatever its subject says: an unknown device's messages are
        refused (one merged alert per publishing pit), so are those of a
        device published from a pit that is not its own; a table that
        differs from the registered one is corrected, with an alert."""
        shoes = sorted(by_shoe)
        if not shoes:
            return
        await cur.execute("SELECT device_id, casino, pit, tbl FROM devices WHERE device_id = ANY(%b)",
                          (shoes,))
        reg = {r[0]: r[1:] for r in await cur.fetchall()}
        for shoe in shoes:
            msgs = by_shoe[shoe]
            where = reg.get(shoe)
            if where is None:
                for m in msgs:
                    if not m.held:
                        out.refused += 1
                        out.alerts.append((None, alerts.severity("unknown_device"), "unknown_device",
                                           "shoe %s is in no registry entry: its event seq %d "
                                           "refused" % (excerpt(shoe, 40), m.seq), m.casino, m.pit,
                                           m.tbl, "unknown_device|%s.%s" % (m.casino, m.pit)))
                del by_shoe[shoe]
                continue
            keep = []
            for m in msgs:
                if (m.casino, m.pit) != where[:2]:
                    self._refuse(out, m, "wrong_pit", "seq %d came from pit %s/%s; the registry "
                                 "puts shoe %s at %s/%s/%s" % (m.seq, m.casino, m.pit, shoe,
                                                                *where),
                                 severity=alerts.severity("wrong_pit"))
                    continue
                if m.tbl != where[2] and m.tbl != wire.UNASSIGNED:   # "unassigned" claims nothing
                    self._alert(out, m, alerts.severity("table_mismatch"), "table_mismatch", "seq %d claimed table %s; filed "
                                "under the registered table %s" % (m.seq, m.tbl, where[2]))
                m.tbl = where[2]
                keep.append(m)
            by_shoe[shoe] = keep

    def _collision(self, out, m, stored, fkey, first_seq, first_prev):
        """A message for a seq the record holds (or holds before): the one
        chain acceptance says duplicate, fork, forgery or before-first."""
        if fkey is None:
            return
        head = chain.Head(first_seq, first_prev, m.seq, None)
        verdict = chain.accept(fkey, m.shoe, head, m.seq, m.body, m.mac or "",
                               stored=lambda q: stored.get((m.shoe, q)))
        if verdict.kind == chain.DUPLICATE:
            out.duplicates += 1
            return
        kind = alerts.FOR_VERDICT[verdict.kind] or alerts.FOR_VERDICT[chain.FORGED]
        self._refuse(out, m, kind, "seq %d: %s" % (m.seq, verdict.why), severity=alerts.severity(kind))

    def _refuse(self, out, m, kind, detail, severity=WARNING):
        if not m.held:
            out.refused += 1
        self._alert(out, m, severity, kind, detail)

    def _alert(self, out, m, severity, kind, detail, dedupe=False):
        # merged per cause per device: one row, a count, first/last times
        out.alerts.append((m.shoe, severity, kind, detail, m.casino, m.pit, m.tbl,
                           "%s|%s" % (kind, m.shoe)))

    @staticmethod
    def _row(m, event, now):
        rnd = event.get("round")
        return EventRow(m.shoe, m.seq, m.casino, m.pit, m.tbl, event["type"],
                        rnd if isinstance(rnd, int) and not isinstance(rnd, bool) else None,
                        m.text if m.text is not None else m.body.decode("utf-8"), m.mac,
                        m.committed or None, now)

    async def _write(self, cur, writes, out, now):
        rows, unhold, hold, anchors, new_heads = (writes.rows, writes.unhold, writes.hold, writes.anchors,
                                                  writes.heads)
        if rows and self.direct:
            # Binary COPY (psycopg's array parameters, unnest, cost more CPU
            # than the verification itself: profiled with py-spy).
            async with cur.copy(EVENTS_COPY) as copy:
                copy.set_types(STAGE_TYPES)
                for row in rows:
                    await copy.write_row(row)
        elif rows:
            await self._stage()
            async with cur.copy(STAGE_COPY) as copy:
                copy.set_types(STAGE_TYPES)
                for row in rows:
                    await copy.write_row(row)
            await cur.execute("INSERT INTO events SELECT * FROM stage_events ORDER BY shoe_id, seq"
                              " ON CONFLICT (shoe_id, seq) DO NOTHING")
            if cur.rowcount != len(rows):
                # Cannot happen under the row locks; if it does, the stored
                # rows stand and the batch says so rather than overwrite.
                out.alerts.append((None, CRITICAL, "lost_race", "%d of %d verified events were "
                                   "already stored" % (len(rows) - cur.rowcount, len(rows)),
                                   None, None, None, None))
        if unhold:
            s, q, mac = zip(*unhold)
            await cur.execute("DELETE FROM held h USING unnest(%s::text[], %s::bigint[], %s::text[])"
                              " AS u(s, q, m) WHERE h.shoe_id = u.s AND h.seq = u.q AND h.mac = u.m",
                              (list(s), list(q), list(mac)))
        if hold:
            await self._stage()
            async with cur.copy(STAGE_HELD_COPY) as copy:
                copy.set_types(STAGE_HELD_TYPES)
                for m in hold:
                    await copy.write_row((m.shoe, m.seq, m.mac, m.text if m.text is not None else
                                          m.body.decode("utf-8", "replace"), m.casino, m.pit, m.tbl,
                                          m.first_prev, m.committed or None, now))
            await cur.execute("INSERT INTO held SELECT * FROM stage_held ON CONFLICT DO NOTHING")
        if anchors:
            await cur.executemany("INSERT INTO anchors (shoe_id, seq, mac, recorded) VALUES"
                                  " (%s, %s, %s, %s) ON CONFLICT DO NOTHING", anchors)
        # One statement for every shoe of the batch (a batch at a real pace
        # touches thousands of shoes, one event each): not one each. Most
        # only move their chain's end; the arrays go as binary (%b): in
        # text, psycopg's quoting of every element cost more than the walk.
        if writes.moved:
            cols = list(zip(*writes.moved))
            await cur.execute(
                "UPDATE shoes s SET last_seq = n.l, last_mac = n.m, updated = n.u"
                " FROM unnest(%b::text[], %b::bigint[], %b::text[], %b::float8[]) AS n(shoe, l, m, u)"
                " WHERE s.shoe_id = n.shoe", [list(c) for c in cols])
        if new_heads:
            cols = list(zip(*new_heads))
            await cur.execute(
                "UPDATE shoes s SET first_seq = n.f, first_prev = n.fp, last_seq = n.l,"
                " last_mac = n.m, casino = n.c, pit = n.p, tbl = n.t, updated = n.u"
                " FROM unnest(%b::text[], %b::bigint[], %b::text[], %b::bigint[], %b::text[],"
                " %b::text[], %b::text[], %b::text[], %b::float8[]) AS n(shoe, f, fp, l, m, c, p, t, u)"
                " WHERE s.shoe_id = n.shoe", [list(c) for c in cols])
        if out.alerts:
            await self._write_alerts(cur, out.alerts, now)
        if rows or out.alerts or out.pit_log:
            # Delivered at commit, once per transaction: readers (the central
            # view) look when there is something new, not on a timer.
            await cur.execute("SELECT pg_notify(%s, '')", (NOTIFY,))

    @staticmethod
    async def _write_alerts(cur, alerts, now):
        """Insert alerts; those with a merge key add to the one row of their
        cause and device (count, last_time, latest detail) instead of a row
        each: a flood of junk is a few rows, not a flood."""
        merged, single = {}, []
        for a in alerts:
            if a[7] is None:
                single.append(a)
                continue
            have = merged.get(a[7])
            merged[a[7]] = (a, 1) if have is None else (a, have[1] + 1)
        rows = [(a[0], now, a[1], a[2], a[3], a[4], a[5], a[6], n, now, key)
                for key, (a, n) in sorted(merged.items())]
        rows += [(a[0], now, a[1], a[2], a[3], a[4], a[5], a[6], 1, now, None) for a in single]
        if rows:
            await cur.executemany(
                "INSERT INTO alerts (shoe_id, time, severity, kind, detail, casino, pit, tbl,"
                " count, last_time, merge_key) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (merge_key) DO UPDATE SET count = alerts.count + excluded.count,"
                " last_time = excluded.last_time, detail = excluded.detail", rows)

    async def _pit_log_gaps(self, cur):
        """One ``pit_log_gap`` alert per pit chain whose held rows waited
        past GAP_S for a row that has not arrived (once per missing row)."""
        now = time.time()
        async with self.conn.transaction():
            await cur.execute(
                "SELECT l.casino, l.pit, l.kind, h.last_id, min(l.pit_id) FROM pit_log l JOIN"
                " pit_log_heads h USING (casino, pit, kind) WHERE NOT l.linked"
                " GROUP BY l.casino, l.pit, l.kind, h.last_id HAVING min(l.received) < %s",
                (now - GAP_S,))
            for casino, pit, kind, last, first_held in await cur.fetchall():
                detail = "pit %s %s row %d missing: rows from %d wait for it" % (
                    pit, kind, last + 1, first_held)
                await cur.execute("SELECT 1 FROM alerts WHERE kind = 'pit_log_gap' AND detail = %s"
                                  " AND casino = %s AND pit = %s", (detail, casino, pit))
                if await cur.fetchone() is None:
                    await cur.execute(
                        "INSERT INTO alerts (shoe_id, time, severity, kind, detail, casino, pit)"
                        " VALUES (NULL, %s, %s, 'pit_log_gap', %s, %s, %s)",
                        (now, alerts.severity("pit_log_gap"), detail, casino, pit))
                    self.counts["alerts"] += 1

    async def sweep(self):
        """Retry held events (a key may have been installed since) and raise
        one ``gap`` alert per missing seq for a shoe whose held events waited
        past GAP_S for their predecessor."""
        cur = self.conn.cursor()
        await self._pit_log_gaps(cur)
        await cur.execute("SELECT DISTINCT shoe_id FROM held")
        shoes = [r[0] for r in await cur.fetchall()]
        if not shoes:
            return
        await self.process([], shoes)
        now = time.time()
        async with self.conn.transaction():
            await cur.execute(
                "SELECT h.shoe_id, s.last_seq, min(h.seq), min(h.casino), min(h.pit), min(h.tbl)"
                " FROM held h JOIN shoes s USING (shoe_id) GROUP BY h.shoe_id, s.last_seq"
                " HAVING min(h.held_at) < %s", (now - GAP_S,))
            for shoe, last, first_held, casino, pit, tbl in await cur.fetchall():
                missing = "%d" % (last + 1) if last is not None else "the first event"
                detail = "seq %s missing: held events from seq %d wait for it" % (missing, first_held)
                await cur.execute("SELECT 1 FROM alerts WHERE shoe_id = %s AND kind = 'gap'"
                                  " AND detail = %s", (shoe, detail))
                if await cur.fetchone() is None:
                    await cur.execute(
                        "INSERT INTO alerts (shoe_id, time, severity, kind, detail, casino, pit, tbl)"
                        " VALUES (%s, %s, %s, 'gap', %s, %s, %s, %s)",
                        (shoe, now, WARNING, detail, casino, pit, tbl))
                    self.counts["alerts"] += 1
