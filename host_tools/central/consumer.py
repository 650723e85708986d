"""`shoe central`'s loop: fetch from the durable pull consumer, hand each
batch to central.Central, ack after the commit.

Reconnects for as long as it runs: nats-py reconnects the NATS side by
itself (the durable consumer is kept by the server, so the messages not yet
acked wait there); a PostgreSQL failure closes the connection, the batch is
left unacked (JetStream redelivers it after ``ACK_WAIT_S``, or at once when
we nak it), and a new connection is opened.
"""

import asyncio
import json
import logging
import os
import time

import nats.errors
from nats.js import api

from host_tools.central import ingest as central_mod
from host_tools.protocol.keys import Keys
from host_tools.casino import access, streams, wire

log = logging.getLogger("shoe.casino.consumer")

RETRY_S = 0.5
LOG_ROWS_MAX = 1000   # pit-log rows in one message
# A bench's timing hook: with this set to a file name, each batch appends
# one line per event message: the publisher's stamp, the hub's (the
# stream's store time), when this process fetched it, when PostgreSQL's
# commit returned and when the acks went, its events' pit commit stamps and
# its Nats-Msg-Id (the bench matches it to what its taps on the leaf and the
# hub saw). `shoe bench casino` reads them into its stage breakdown; nothing
# of the record depends on it.
STAGE_LOG_ENV = "SHOE_CENTRAL_STAGE_LOG"


def consumer_config(casino=None, pit=None):
    """The durable consumer's settings: the casino's, or a pit's partition
    (``pit``: only that pit's subjects)."""
    return api.ConsumerConfig(durable_name=access.durable(pit), ack_policy=api.AckPolicy.EXPLICIT,
                              ack_wait=central_mod.ACK_WAIT_S, max_deliver=-1,
                              max_ack_pending=central_mod.MAX_ACK_PENDING,
                              filter_subject=wire.pit_subjects(casino, pit) if pit else None)


def decode_log(msg):
    """(casino, pit, kind, rows) of a pit-log message, or raise wire.Malformed."""
    parts = msg.subject.split(".")
    kind = wire.log_kind(msg.subject)
    if len(parts) != 4 or kind is None:
        raise wire.Malformed("subject %r is not a pit log" % msg.subject[:80])
    try:
        rows = json.loads(bytes(msg.data).decode("utf-8"))
    except ValueError:
        raise wire.Malformed("pit %s %s rows are not JSON" % (parts[2], kind))
    if (not isinstance(rows, list) or len(rows) > LOG_ROWS_MAX or not all(
            isinstance(r, dict) and isinstance(r.get("id"), int) and not isinstance(r["id"], bool)
            and isinstance(r.get("time", 0), (int, float)) for r in rows)):
        raise wire.Malformed("pit %s %s rows are not a list of rows with ids" % (parts[2], kind))
    return parts[1], parts[2], kind, rows


def decode(msg):
    """The central.Msg of each event a message carries, or raise wire.Malformed."""
    out = []
    for casino, pit, tbl, shoe, seq, first_prev, events in wire.decode(msg.subject, msg.headers,
                                                                        msg.data):
        if not wire.SHOE_ID.fullmatch(shoe):
            raise wire.Malformed("shoe id %r is not one a shoe sends" % shoe[:40])
        for i, (mac, committed, body) in enumerate(events):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                raise wire.Malformed("event of shoe %s seq %d is not UTF-8" % (shoe, seq + i))
            if "\x00" in text:
                raise wire.Malformed("event of shoe %s seq %d holds a NUL byte" % (shoe, seq + i))
            out.append(central_mod.Msg(casino, pit, tbl, shoe, seq + i, mac,
                                       first_prev if i == 0 else None, committed, body, text=text))
    return out


class Consumer:
    """One `shoe central` process (several may run: they share DURABLE, or
    with ``partition`` one pit's durable, access.durable)."""

    def __init__(self, url, dsn, keys_dir, casino, sources=(), batch=central_mod.BATCH, auth=None,
                 partition=None):
        self.url = url
        self.partition = partition
        self.durable = access.durable(partition)
        # auth: the consumer's NATS credential (secrets.NatsAuth). With one,
        # the stream and the durable consumer are admin's to make (`shoe
        # central setup`) and this process only pulls and acks; without
        # (an open trial broker), it makes them itself.
        self.auth = auth
        if auth is not None and auth.inbox is None:
            auth.inbox = access.consumer_inbox(casino)
        self.dsn = dsn
        self.keys = Keys(keys_dir)
        self.casino = casino
        self.sources = list(sources)
        self.batch = batch
        self.stop = None
        self.central = None
        self.counts = {}
        self.errors = 0
        self.last_error = None
        self.lag = None              # pit commit -> central commit of the last batch's newest event
        self.batch_seconds = None    # a metrics Histogram once /metrics is served (metrics.py)
        self.stage_log = os.environ.get(STAGE_LOG_ENV) or None

    async def run(self, stop=None):
        self.stop = stop or asyncio.Event()
        while not self.stop.is_set():
            try:
                await self._session()
            except Exception as e:  # a server went away: keep what is acked, start again
                self.errors += 1
                self.last_error = "%s: %s" % (type(e).__name__, e)
                log.warning("central: %s; reconnecting", self.last_error)
                try:
                    await asyncio.wait_for(self.stop.wait(), RETRY_S)
                except asyncio.TimeoutError:
                    pass

    async def _session(self):
        import psycopg
        conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        nc = None
        try:
            if (await (await conn.execute("SELECT to_regclass('public.devices')")).fetchone())[0] is None:
                # no schema yet: only its owner can make it (a writer role
                # cannot; then `shoe central setup` has not been run)
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (central_mod.SCHEMA_LOCK,))
                    await conn.execute(central_mod.SCHEMA)
            self.central = central_mod.Central(conn, self.keys)
            nc = await streams.connect(self.url, reconnect=True, auth=self.auth)
            js = nc.jetstream()
            if self.auth is None:
                await streams.ensure_casino_stream(js, self.casino, self.sources)
                psub = await js.pull_subscribe(
                    wire.pit_subjects(self.casino, self.partition) if self.partition
                    else wire.casino_subjects(self.casino), durable=self.durable,
                    stream=wire.casino_stream(self.casino),
                    config=consumer_config(self.casino, self.partition))
            else:
                psub = await js.pull_subscribe_bind(
                    durable=self.durable, stream=wire.casino_stream(self.casino),
                    inbox_prefix=(self.auth.inbox + ".").encode())
            swept = time.monotonic()
            while not self.stop.is_set():
                if time.monotonic() - swept > central_mod.SWEEP_S:
                    await self.central.sweep()
                    swept = time.monotonic()
                try:
                    msgs = await psub.fetch(self.batch, central_mod.FETCH_TIMEOUT_S)
                except (asyncio.TimeoutError, nats.errors.TimeoutError):
                    continue
                # No pulling ahead while a batch commits: measured at 6,000
                # tables (`shoe bench casino`), a fetch running beside the
                # commit took smaller batches, more pull requests and more
                # CPU per event, and the delay grew.
                await self.handle(msgs, [time.time()] * len(msgs))
        finally:
            if self.central is not None:
                for k, v in self.central.counts.items():
                    self.counts[k] = self.counts.get(k, 0) + v
                self.central = None
            try:
                if nc is not None:
                    await nc.close()
            finally:
                await conn.close()

    async def handle(self, msgs, fetched_at=None):
        """Verify, commit and ack one batch (``fetched_at``: when each
        message was pulled, for the stage log)."""
        good, bad, logs = [], [], []
        for m in msgs:
            try:
                if wire.log_kind(m.subject):
                    logs.append(decode_log(m))
                else:
                    good.extend(decode(m))
            except wire.Malformed as e:
                bad.append((str(e), m.subject))
        started = time.perf_counter()
        try:
            await self.central.process(good, logs=logs, bad=bad)
        except Exception:
            for m in msgs:  # redeliver soon, to whichever consumer is healthy
                try:
                    await m.nak(delay=RETRY_S)
                except Exception:
                    pass
            raise
        committed = time.time()
        for m in msgs:
            await m.ack()
        if self.stage_log is not None:
            self._log_stages(msgs, fetched_at or [0.0] * len(msgs), committed)
        if self.batch_seconds is not None:
            self.batch_seconds.observe(time.perf_counter() - started)
        newest = max((g.committed for g in good if g.committed), default=None)
        if newest is not None:
            self.lag = time.time() - newest

    def _log_stages(self, msgs, fetched_at, committed):
        """The stage stamps of each event message of a batch (STAGE_LOG_ENV)."""
        acked = time.time()
        lines = []
        for m, fetched in zip(msgs, fetched_at):
            h = m.headers or {}
            if wire.H_PUBLISHED not in h or wire.H_COMMITTED not in h:
                continue
            try:
                stored = m.metadata.timestamp.timestamp()
            except Exception:
                stored = 0.0
            lines.append("%s %.6f %.6f %.6f %.6f %s %s\n" % (
                h[wire.H_PUBLISHED], stored, fetched, committed, acked,
                h[wire.H_COMMITTED], h.get(wire.H_ID) or "-"))
        if lines:
            with open(self.stage_log, "a") as f:
                f.write("".join(lines))

    def totals(self):
        out = dict(self.counts)
        if self.central is not None:
            for k, v in self.central.counts.items():
                out[k] = out.get(k, 0) + v
        return out
