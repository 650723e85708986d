"""The central record in PostgreSQL, read the way `shoe verify` reads a pit
store (host_tools/verify.py feeds both to one checker).

It offers the same reading methods as ``db.Store`` (``shoe_ids``,
``shoe``, ``rows``, ``count``, ``alerts``) so the chain walk is one piece
of code. Two differences, stated here: the central record has no SHA-256
row chain (``HASHED = False``; that chain proves nothing the shoe's tags do
not, and anyone with write access could recompute it), so its proof is the
tag chain and needs the shoe keys; and its anchors are the ``anchors`` table
the consumer fills with every stored checkpoint.

The session is read-only (``default_transaction_read_only``): checking the
evidence must not change it.
"""

from host_tools.protocol.record import Record
from host_tools.store.db import alerts_query


class CentralRecord(Record):
    HASHED = False
    STARTS_AT_ONE = True   # a shoe's central record starts at seq 1 (ingest.start_prev)

    def __init__(self, dsn):
        import psycopg
        from host_tools.casino import secrets
        secrets.check_dsn(dsn, "--central")
        label = secrets.dsn_label(dsn)
        try:
            self.conn = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as e:
            raise ValueError("cannot connect to %s: %s" % (label, str(e).strip().splitlines()[0]))
        self.conn.execute("SET default_transaction_read_only = on")
        have = {r[0] for r in self.conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        missing = {"shoes", "events", "alerts", "anchors", "held"} - have
        if missing:
            self.conn.close()
            raise ValueError("%s holds no central record (no table %s)" % (
                label, ", ".join(sorted(missing))))
        self.path = label   # what a report prints: host and database, never the DSN

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.conn.close()

    def shoe_ids(self):
        return [r[0] for r in self.conn.execute("SELECT shoe_id FROM shoes ORDER BY shoe_id")]

    def shoe(self, shoe_id):
        row = self.conn.execute(
            "SELECT shoe_id, first_seq, first_prev, last_seq, last_mac, casino, pit, tbl"
            " FROM shoes WHERE shoe_id = %s", (shoe_id,)).fetchone()
        if row is None:
            return None
        return {"shoe_id": row[0], "key_id": None, "settings": None, "first_seq": row[1],
                "first_prev": row[2], "last_seq": row[3], "head_hash": None, "last_mac": row[4],
                "where": "%s/%s/%s" % (row[5], row[6], row[7])}

    def rows(self, shoe_id):
        keys = ("seq", "type", "round", "event", "mac")
        cur = self.conn.cursor(name="rows")  # server-side: a shoe's rows are not all in memory
        with self.conn.transaction():
            cur.execute("SELECT seq, type, round, event, mac FROM events WHERE shoe_id = %s"
                        " ORDER BY seq", (shoe_id,))
            for row in cur:
                yield dict(zip(keys, row))
            cur.close()

    def count(self, shoe_id):
        return self.conn.execute("SELECT count(*) FROM events WHERE shoe_id = %s",
                                 (shoe_id,)).fetchone()[0]

    def held(self, shoe_id):
        return self.conn.execute("SELECT count(*) FROM held WHERE shoe_id = %s",
                                 (shoe_id,)).fetchone()[0]

    def anchors(self, shoe_id):
        return [tuple(r) for r in self.conn.execute(
            "SELECT seq, mac FROM anchors WHERE shoe_id = %s ORDER BY seq", (shoe_id,))]

    def public_key(self, shoe_id):
        """The PEM the device registry holds for the shoe, or None."""
        row = self.conn.execute("SELECT public_key FROM devices WHERE device_id = %s", (shoe_id,)).fetchone()
        return row[0].encode("ascii") if row and row[0] else None

    def latest_checkpoint(self, shoe_id):
        got = self.anchors(shoe_id)
        return got[-1] if got else None

    def alerts(self, shoe_id=None, severity=None):
        keys = ("id", "shoe_id", "time", "severity", "kind", "detail", "count", "last_time")
        sql, args = alerts_query(keys, shoe_id, severity, "%s")
        return [dict(zip(keys, r)) for r in self.conn.execute(sql, args)]

    def pit_chains(self):
        """{(casino, pit, kind): [(pit row id, linked, row dict)]} in id
        order: each pit's alert history and audit log as central holds them
        (central/pitlog.py)."""
        import json
        out = {}
        if self.conn.execute("SELECT to_regclass('public.pit_log_heads')").fetchone()[0] is None:
            return out
        for casino, pit, kind, rid, linked, body in self.conn.execute(
                "SELECT casino, pit, kind, pit_id, linked, body FROM pit_log"
                " ORDER BY casino, pit, kind, pit_id"):
            out.setdefault((casino, pit, kind), []).append((rid, linked, json.loads(body)))
        return out

    def stray_alerts(self):
        """Alerts tied to no shoe (malformed messages)."""
        return [a for a in self.alerts() if a["shoe_id"] is None]
