"""A pit's store is its outbox: every stored event goes to JetStream, and
nothing is lost while the broker is away.

Why an outbox and not "publish when the bridge stores": the bridge acks the
shoe after the SQLite commit, and that commit must not wait on a network. So
the store stays the pit's authority and the publisher trails it: a
``published`` table (its own, outside every chain, so `shoe verify` of the
pit store is unchanged) keeps each shoe's high-water mark, the last seq
the broker acknowledged with every seq before it. After a broker outage,
a pit restart or a lost mark, the publisher starts again from the mark; the
worst it does is publish an event twice, which the broker's duplicate window
(``Nats-Msg-Id``) and, past it, the consumer's (shoe, seq) key absorb.

A message carries a run of up to ``wire.MAX_EVENTS`` consecutive events of
one shoe, or runs of several shoes up to that many events in all (``pack``;
wire.py says why: one fsync on the hub per message). Publishing
is asynchronous with acks in flight (``publish_async``, up to ``WINDOW``
messages at once); the mark advances per shoe only over an unbroken run of
acknowledged messages, so a failure in the middle of a batch republishes
from the first failure, never skips it.
"""

import asyncio
import json
import logging
import threading
import time


from host_tools.casino import access, streams, wire
from host_tools.store import db

log = logging.getLogger("shoe.casino.publish")

BATCH = 8000          # events read from the store per round
WINDOW = 1000         # async publishes (messages) in flight
ACK_TIMEOUT_S = 5.0
IDLE_POLL_S = 0.2     # without a wake-up, look at the store this often
FULL_SCAN_S = 1.0     # look at every shoe at least this often (else only those the pit named)
# A round starts at most this often while it keeps pace: what the pit's
# tables store meanwhile goes in the next round's messages (each a hub
# fsync, a delivery and an ack) instead of a round per group commit.
ROUND_MIN_S = 0.02
RETRY_S = 0.5         # after a failed round
CLOSE_DRAIN_S = 5.0   # on close, publish what is pending for at most this long

OUTBOX_SCHEMA = """
CREATE TABLE IF NOT EXISTS published (
    shoe_id TEXT PRIMARY KEY,
    seq     INTEGER NOT NULL,
    tbl     TEXT
);
CREATE TABLE IF NOT EXISTS published_log (
    kind TEXT PRIMARY KEY,
    mark REAL NOT NULL
);
"""
LOG_BATCH = 500       # pit-log rows per message (consumer.LOG_ROWS_MAX is the cap)
# What of a pit's log goes to central: its two hash chains as they stand
# (host_tools/store/audit.py), hashes included, so central takes each row
# only where it extends the pit's chain (central/pitlog.py). The alert
# history (``alert_log``) holds every state an alert row took, so a merged
# alert's new count goes too; the mark of each is the last row id sent.
LOG_QUERIES = {
    "alert": ("alert_log", "SELECT id, alert_id, state, prev_hash, hash FROM alert_log"
              " WHERE id > ? ORDER BY id LIMIT ?", wire.LOG_ROW_KEYS["alert"]),
    "audit": ("audit_log", "SELECT %s FROM audit_log WHERE id > ? ORDER BY id LIMIT ?"
              % ", ".join('"%s"' % c for c in wire.LOG_ROW_KEYS["audit"]), wire.LOG_ROW_KEYS["audit"]),
}


class Outbox:
    """The unpublished events of one SQLite store and its high-water marks."""

    def __init__(self, store_path):
        self.store = db.Store(store_path)   # the format check, and its lock retries
        # Losing a mark only means publishing again, so the marks need not
        # wait for fsync; the events themselves were committed FULL.
        self.store.db.execute("PRAGMA synchronous=NORMAL")
        self.store._retry(lambda: self.store.db.executescript(OUTBOX_SCHEMA))
        self.db = self.store.db

    def close(self):
        self.store.close()

    def tables(self):
        """{shoe: table} as remembered from earlier publishing."""
        return {s: t for s, t in self.db.execute(
            "SELECT shoe_id, tbl FROM published WHERE tbl IS NOT NULL")}

    def pending(self, limit=BATCH, shoes=None):
        """Unpublished events, oldest seq first per shoe, as tuples
        (shoe, seq, event text, tag, commit time, the store's first seq of
        the shoe and the PREV its tag was made over); ``shoes``: only
        these shoes' (the ones the pit said stored something).

        Shoe by shoe (CROSS JOIN keeps SQLite to that order), and only
        shoes whose head is past their mark, each a range of its primary
        key: left to itself SQLite scanned the whole events table for every
        round, so a pit's publisher slowed as its store grew (220 ms a
        round at 40,000 events, 6,000 tables' pits lagging seconds in
        `shoe bench casino`). Even so, a look at every shoe costs about
        6-20 ms of a pit of 3,000 tables' publisher on this machine, at
        every round: so a round asks only for the shoes it was told about,
        and looks at them all now and then (PitPublisher)."""
        named, args = "", (limit,)
        if shoes is not None:
            named, args = "s.shoe_id IN (SELECT value FROM json_each(?)) AND ", (
                json.dumps(sorted(shoes)), limit)
        return self.db.execute(
            "SELECT e.shoe_id, e.seq, e.event, e.mac, e.received, s.first_seq, s.first_prev"
            " FROM shoes s LEFT JOIN published p ON p.shoe_id = s.shoe_id"
            " CROSS JOIN events e ON e.shoe_id = s.shoe_id AND e.seq > COALESCE(p.seq, 0)"
            " WHERE " + named + "s.last_seq > COALESCE(p.seq, 0)"
            " ORDER BY s.shoe_id, e.seq LIMIT ?", args).fetchall()

    def mark(self, marks, tables):
        """Advance high-water marks ({shoe: seq}); never moves one back."""
        def write():
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany(
                    "INSERT INTO published (shoe_id, seq, tbl) VALUES (?, ?, ?)"
                    " ON CONFLICT(shoe_id) DO UPDATE SET seq = MAX(seq, excluded.seq),"
                    " tbl = COALESCE(excluded.tbl, tbl)",
                    [(shoe, seq, tables.get(shoe)) for shoe, seq in marks.items()])
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        self.store._retry(write)

    def marks(self):
        return dict(self.db.execute("SELECT shoe_id, seq FROM published"))

    def log_pending(self, kind, limit=LOG_BATCH):
        """(rows as dicts, the mark after them) of the pit's alerts or audit
        rows not yet published; ([], None) when there are none (or the
        store has no such table: a store no pit server has opened)."""
        table, sql, keys = LOG_QUERIES[kind]
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                           (table,)).fetchone() is None:
            return [], None
        # marks are keyed by the table (an older publisher's "alert" mark was a time)
        got = self.db.execute("SELECT mark FROM published_log WHERE kind = ?", (table,)).fetchone()
        rows = [dict(zip(keys, r)) for r in self.db.execute(sql, (got[0] if got else -1, limit))]
        return rows, (rows[-1]["id"] if rows else None)

    def log_mark(self, kind, mark):
        def write():
            self.db.execute("INSERT INTO published_log (kind, mark) VALUES (?, ?) ON CONFLICT(kind)"
                            " DO UPDATE SET mark = MAX(mark, excluded.mark)", (LOG_QUERIES[kind][0], mark))
            self.db.commit()
        self.store._retry(write)

    def behind(self):
        """How many shoes have stored events not yet acknowledged by the broker."""
        return self.db.execute(
            "SELECT count(*) FROM shoes s LEFT JOIN published p ON p.shoe_id = s.shoe_id"
            " WHERE s.last_seq > COALESCE(p.seq, 0)").fetchone()[0]


def runs(rows, max_events=wire.MAX_EVENTS):
    """Cut pending rows into messages: (shoe, first seq, last seq, headers
    fields, payload), each a run of consecutive seqs of one shoe. A run
    starts afresh at the store's first event of a shoe (its PREV rides with
    it) and at any hole in the seqs."""
    out = []
    cur = None
    for shoe, seq, event, mac, received, first_seq, first_prev in rows:
        if (cur is None or cur[0] != shoe or seq != cur[2] + 1 or len(cur[3]) >= max_events
                or seq == first_seq):
            cur = [shoe, seq, seq, [], [], [], [],
                   (first_prev or db.ZERO_HEX) if seq == first_seq else None]
            out.append(cur)
        body = event.encode("utf-8")
        cur[2] = seq
        cur[3].append(mac or "")
        cur[4].append(received)
        cur[5].append(len(body))
        cur[6].append(body)
    return out


def pack(cut, max_events=wire.MAX_EVENTS):
    """Runs (from ``runs``) packed into messages of at most ``max_events``
    events each, in order: a pit of many tables, each with one new event,
    sends a few messages, not one per event (one hub fsync each)."""
    out, size = [], 0
    for r in cut:
        n = len(r[3])
        if not out or size + n > max_events:
            out.append([])
            size = 0
        out[-1].append(r)
        size += n
    return out


async def publish_log(js, outbox, casino, pit):
    """Publish the pit's new alert and audit rows (each kind on its own
    subject, wire.log_subject); returns how many rows went out."""
    import json
    sent = 0
    for kind in LOG_QUERIES:
        rows, mark = outbox.log_pending(kind)
        if not rows:
            continue
        await js.publish(wire.log_subject(casino, pit, kind),
                         json.dumps(rows, separators=(",", ":")).encode(), timeout=ACK_TIMEOUT_S)
        outbox.log_mark(kind, mark)
        sent += len(rows)
    return sent


async def publish_round(js, outbox, casino, pit, tables, limit=BATCH, shoes=None):
    """Publish one batch of pending events (``shoes``: of those shoes only);
    returns how many were acknowledged (the marks advance over those).
    Raises on a broker error after marking what did get through."""
    rows = outbox.pending(limit, shoes)
    if not rows:
        return 0
    msgs = pack(runs(rows))
    futures = []
    for group in msgs:
        if len(group) == 1:
            shoe, seq, last, tags, committed, lens, bodies, first_prev = group[0]
            subj = wire.subject(casino, pit, tables.get(shoe))
            hdrs = wire.run_headers(shoe, seq, tags, committed, lens, first_prev)
        else:
            subj = wire.runs_subject(casino, pit)
            hdrs = wire.batch_headers([(r[0], r[1], tables.get(r[0]), r[3], r[4], r[5])
                                       for r in group])
        hdrs[wire.H_PUBLISHED] = "%.6f" % time.time()
        futures.append(await js.publish_async(
            subj, b"".join(b for r in group for b in r[6]), headers=hdrs, wait_stall=ACK_TIMEOUT_S))
    done = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True),
                                  ACK_TIMEOUT_S * 2)
    marks, broken, error = {}, set(), None
    for group, ack in zip(msgs, done):
        for m in group:
            shoe = m[0]
            if shoe in broken:
                continue
            if isinstance(ack, BaseException):
                broken.add(shoe)
                error = ack
                continue
            marks[shoe] = m[2]
    if marks:
        outbox.mark(marks, tables)
    if error is not None:
        raise error
    return len(rows)


class PitPublisher:
    """The `shoe pit` side: one thread with its own asyncio loop publishing
    the pit store, woken by the pit's event messages (``on_message`` is a
    Pit listener), reconnecting for as long as the pit runs."""

    def __init__(self, store_path, casino_cfg, tables=None):
        self.store_path = store_path
        self.cfg = casino_cfg
        self.tables = dict(tables or {})
        self.loop = None
        self.wake = None
        self.thread = None
        self.stopping = threading.Event()
        self.dirty = set()               # shoes the pit said stored an event since the last round
        self.dirty_lock = threading.Lock()
        self.published = 0
        self.connected = False
        self.last_error = None

    def on_message(self, message):
        """Pit listener: learn which table a shoe is at, and wake up."""
        if message.get("type") == "event":
            if message.get("shoe") and message.get("table"):
                self.tables[message["shoe"]] = message["table"]
            if message.get("shoe"):
                with self.dirty_lock:
                    self.dirty.add(message["shoe"])
            loop, wake = self.loop, self.wake
            # one wake-up is enough until the publisher runs (a pit of
            # thousands of tables stores thousands of events a second)
            if loop is not None and wake is not None and not wake.is_set():
                try:
                    loop.call_soon_threadsafe(wake.set)
                except RuntimeError:
                    pass  # the loop is closing

    def start(self):
        self.thread = threading.Thread(target=self._main, name="casino-publisher", daemon=True)
        self.thread.start()

    def close(self):
        self.stopping.set()
        if self.loop is not None and self.wake is not None:
            try:
                self.loop.call_soon_threadsafe(self.wake.set)
            except RuntimeError:
                pass
        if self.thread is not None:
            self.thread.join(10)

    def _main(self):
        try:
            asyncio.run(self._run())
        except Exception:
            log.exception("casino publisher stopped")

    async def _run(self):
        self.loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()
        outbox = Outbox(self.store_path)
        for shoe, table in outbox.tables().items():
            self.tables.setdefault(shoe, table)
        try:
            while not self.stopping.is_set():
                try:
                    await self._session(outbox)
                except Exception as e:  # the broker went away or refused: keep the store, retry
                    self.connected = False
                    self.last_error = "%s: %s" % (type(e).__name__, e)
                    log.warning("casino publisher: %s; retrying", self.last_error)
                    await self._sleep(RETRY_S)
            # Stopping: what the pit stored up to now goes out before we
            # leave, connected or not a moment ago (bounded; a pit that
            # cannot reach the broker now publishes it at its next start).
            try:
                await asyncio.wait_for(self._final(outbox), CLOSE_DRAIN_S)
            except Exception as e:
                log.warning("casino publisher: at close: %s: %s; the rest goes at the next start",
                            type(e).__name__, e)
        finally:
            outbox.close()

    async def _final(self, outbox):
        nc = await streams.connect(self.cfg.nats, auth=self._auth())
        try:
            js = nc.jetstream(domain=self.cfg.domain, publish_async_max_pending=WINDOW)
            while True:
                n = await publish_round(js, outbox, self.cfg.casino, self.cfg.pit, self.tables)
                self.published += n
                if n < BATCH:
                    return
        finally:
            await nc.close()

    async def _sleep(self, seconds):
        try:
            await asyncio.wait_for(self.wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        self.wake.clear()

    def _auth(self):
        auth = getattr(self.cfg, "auth", None)
        if auth is not None and auth.inbox is None:
            auth.inbox = access.pit_inbox(self.cfg.casino, self.cfg.pit)
        return auth

    async def _session(self, outbox):
        auth = self._auth()
        nc = await streams.connect(self.cfg.nats, auth=auth)
        try:
            js = nc.jetstream(domain=self.cfg.domain, publish_async_max_pending=WINDOW)
            if auth is None:   # an open trial broker; with credentials, streams are admin's
                await streams.ensure_for_pit(js, self.cfg.casino, self.cfg.pit, self.cfg.domain)
            self.connected = True
            full_at = 0.0   # a session starts with a look at every shoe
            while not self.stopping.is_set():
                started = time.monotonic()
                with self.dirty_lock:
                    shoes, self.dirty = self.dirty, set()
                if time.monotonic() >= full_at:
                    shoes, full_at = None, time.monotonic() + FULL_SCAN_S
                n = 0
                if shoes is None or shoes:
                    # (a failure ends the session; the next one starts with every shoe)
                    n = await publish_round(js, outbox, self.cfg.casino, self.cfg.pit, self.tables,
                                            shoes=shoes)
                if n >= BATCH:   # a full round: some shoes may have more than it took
                    if shoes is None:
                        full_at = 0.0
                    else:
                        with self.dirty_lock:
                            self.dirty |= shoes
                self.published += n
                await publish_log(js, outbox, self.cfg.casino, self.cfg.pit)
                if n < BATCH:
                    await self._sleep(IDLE_POLL_S)
                    linger = started + ROUND_MIN_S - time.monotonic()
                    if linger > 0 and not self.stopping.is_set():
                        await asyncio.sleep(linger)
        finally:
            await nc.close()


def drain(store_path, url, casino, pit, tables=None, domain=None, timeout=30.0, auth=None):
    """Publish everything a store holds now and return the count (tests,
    the soak and the bench use it as a one-shot publisher)."""
    async def go():
        outbox = Outbox(store_path)
        if auth is not None and auth.inbox is None:
            auth.inbox = access.pit_inbox(casino, pit)
        nc = await streams.connect(url, auth=auth)
        try:
            js = nc.jetstream(domain=domain, publish_async_max_pending=WINDOW)
            if auth is None:
                await streams.ensure_for_pit(js, casino, pit, domain)
            total = 0
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                n = await publish_round(js, outbox, casino, pit, tables or {})
                total += n
                if n == 0:
                    return total
            raise TimeoutError("store %s not drained in %.0f s" % (store_path, timeout))
        finally:
            await nc.close()
            outbox.close()
    return asyncio.run(go())

