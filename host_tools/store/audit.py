"""The pit's audit log and the alerts' history, each a SHA-256 hash chain.

The shoes' events are chained in the store (db.py) and signed by the shoes.
What people did at the pit (logins, failures, refusals, commands with the
shoe's answer, acknowledgements, setting changes) and what the pit raised
(alerts) are not the shoe's words, so no shoe key covers them; but an
auditor must still see when a row was deleted or edited. Each row here
carries the hash of the row before it, so `shoe verify` (host_tools/verify.py)
recomputes the chain and names the first row that does not link.

Alerts are rows that change (a flood of forged frames is one row whose count
grows), so the chain is kept beside them: every insert or update of an
``alerts`` row appends the row as it now is to ``alert_log``, in the same
transaction. `shoe verify` walks ``alert_log`` and checks that each alert
row is exactly its last logged state and that none is missing or extra.

AUTOINCREMENT keeps the highest id ever issued in ``sqlite_sequence``, so a
deleted last row shows too (the sequence runs ahead of the table). Whoever
holds the file can rewrite both; the chain is evidence of tampering by
anyone less, and a head printed elsewhere (``shoe verify`` prints it) pins
it against that insider as an anchor pins a shoe's events.
"""

import hashlib
import json
import time

GENESIS = "0" * 64

AUDIT_COLUMNS = ("id", "time", "user", "role", "client", "tbl", "action", "target", "outcome")
ALERT_COLUMNS = ("id", "shoe_id", "time", "severity", "kind", "detail", "count", "first_time", "last_time")

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    time      REAL NOT NULL,
    user      TEXT NOT NULL,
    role      TEXT NOT NULL,
    client    TEXT,
    tbl       TEXT NOT NULL,
    action    TEXT NOT NULL,
    target    TEXT,
    outcome   TEXT NOT NULL,
    prev_hash TEXT,
    hash      TEXT
);
CREATE TABLE IF NOT EXISTS alert_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    alert_id  INTEGER NOT NULL,
    state     TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
"""


def row_hash(prev_hash, values):
    text = json.dumps(list(values), separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256((prev_hash + "\n" + text).encode()).hexdigest()


def ensure(db):
    """Create the tables; an older audit_log (no client, no chain) gains
    the columns and its rows are chained as they stand."""
    fresh = not _has(db, "alert_log")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)  # not executescript(): that would commit the caller's transaction
    if fresh and _has(db, "alerts"):  # alerts raised before the history began start it
        for (alert_id,) in db.execute("SELECT id FROM alerts ORDER BY id").fetchall():
            log_alert(db, alert_id)
    cols = [r[1] for r in db.execute("PRAGMA table_info(audit_log)")]
    for name in ("client", "prev_hash", "hash"):
        if name not in cols:
            db.execute("ALTER TABLE audit_log ADD COLUMN %s TEXT" % name)
    unchained = db.execute("SELECT COUNT(*) FROM audit_log WHERE hash IS NULL").fetchone()[0]
    if unchained:
        prev = GENESIS
        for row in db.execute("SELECT %s, hash FROM audit_log ORDER BY id" % ", ".join(AUDIT_COLUMNS)).fetchall():
            if row[-1] is None:
                h = row_hash(prev, row[:-1])
                db.execute("UPDATE audit_log SET prev_hash = ?, hash = ? WHERE id = ?", (prev, h, row[0]))
                prev = h
            else:
                prev = row[-1]


def _head(db, table):
    row = db.execute("SELECT hash FROM %s ORDER BY id DESC LIMIT 1" % table).fetchone()
    return row[0] if row else GENESIS


def record(db, user, role, client, tbl, action, target, outcome, now=None):
    """Append one audit row, chained; call inside a write transaction."""
    now = time.time() if now is None else now
    prev = _head(db, "audit_log")
    rid = db.execute("INSERT INTO audit_log (time, user, role, client, tbl, action, target, outcome, prev_hash,"
                     " hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '')",
                     (now, user, role, client, tbl, action, target, outcome, prev)).lastrowid
    h = row_hash(prev, (rid, now, user, role, client, tbl, action, target, outcome))
    db.execute("UPDATE audit_log SET hash = ? WHERE id = ?", (h, rid))
    return rid


def log_alert(db, alert_id):
    """Append the alert row as it now is to alert_log (same transaction)."""
    if not _has(db, "alert_log"):
        return
    row = db.execute("SELECT %s FROM alerts WHERE id = ?" % ", ".join(ALERT_COLUMNS), (alert_id,)).fetchone()
    state = json.dumps(list(row), separators=(",", ":"))
    prev = _head(db, "alert_log")
    db.execute("INSERT INTO alert_log (alert_id, state, prev_hash, hash) VALUES (?, ?, ?, ?)",
               (alert_id, state, prev, row_hash(prev, (alert_id, state))))


def _has(db, table):
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _sequence(db, table):
    if not _has(db, "sqlite_sequence"):
        return None
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
    return row[0] if row else None


def check_audit(db):
    """(rows, head, None) or (rows, head, "row N: why") for the audit log."""
    if not _has(db, "audit_log"):
        return 0, GENESIS, None
    prev, last_id, n = GENESIS, 0, 0
    for row in db.execute("SELECT %s, prev_hash, hash FROM audit_log ORDER BY id" % ", ".join(AUDIT_COLUMNS)):
        values, row_prev, h = row[:-2], row[-2], row[-1]
        n += 1
        if row_prev != prev:
            why = ("row %d: does not link to the row before it (row %s deleted or moved)" % (row[0], last_id + 1)
                   if row[0] != last_id + 1 else "row %d: prev_hash does not link (edited)" % row[0])
            return n, prev, why
        if row_hash(prev, values) != h:
            return n, prev, "row %d: hash mismatch (the row was edited)" % row[0]
        prev, last_id = h, row[0]
    seq = _sequence(db, "audit_log")
    if seq is not None and seq > last_id:
        return n, prev, "rows %d..%d: missing (deleted at the end of the log)" % (last_id + 1, seq)
    return n, prev, None


def check_alerts(db):
    """(logged states, None) or (n, why) for the alerts and their history."""
    if not _has(db, "alert_log") or not _has(db, "alerts"):
        return 0, None
    prev, last_id, n, states = GENESIS, 0, 0, {}
    for rid, alert_id, state, row_prev, h in db.execute(
            "SELECT id, alert_id, state, prev_hash, hash FROM alert_log ORDER BY id"):
        n += 1
        if row_prev != prev or rid != last_id + 1:
            return n, "alert history row %d: does not link (row %d deleted, moved or edited)" % (rid, last_id + 1)
        if row_hash(prev, (alert_id, state)) != h:
            return n, "alert history row %d: hash mismatch (edited)" % rid
        prev, last_id = h, rid
        states[alert_id] = state
    seq = _sequence(db, "alert_log")
    if seq is not None and seq > last_id:
        return n, "alert history rows %d..%d: missing (deleted)" % (last_id + 1, seq)
    rows = {r[0]: json.dumps(list(r), separators=(",", ":")) for r in db.execute(
        "SELECT %s FROM alerts" % ", ".join(ALERT_COLUMNS))}
    for alert_id, state in sorted(states.items()):
        if alert_id not in rows:
            return n, "alert %d: deleted (its history says it was raised)" % alert_id
        if rows[alert_id] != state:
            return n, "alert %d: edited (differs from its last logged state)" % alert_id
    extra = sorted(set(rows) - set(states))
    if extra:
        return n, "alert %d: not in the alert history (inserted by hand)" % extra[0]
    return n, None


ACK = "ack"
ACK_OK = "ok: "  # an acknowledgement's outcome: "ok: " and the reason given
# An alert closed by what raised it, not by a person (the edge monitor's
# clear, host_tools/pit/edges.py): the same outcome form, its own action.
CLOSE = "close"
CLOSER = "system"  # the role a close is written under


def acks(db, tbl):
    """{alert id (text): {"user", "time", "reason", "closed"}} of a table's
    alerts that are no longer open: acknowledged by a person, or closed by
    what raised them (``closed`` true); the first of either counts."""
    out = {}
    for action, target, user, when, outcome in db.execute(
            "SELECT action, target, user, time, outcome FROM audit_log WHERE action IN (?, ?) AND tbl = ?"
            " AND (outcome = 'ok' OR outcome LIKE 'ok: %') ORDER BY id", (ACK, CLOSE, tbl)):
        out.setdefault(target, {"user": user, "time": when, "reason": outcome[len(ACK_OK):],
                                "closed": action == CLOSE})
    return out


def close(store, tbl, alert_id, closer, why):
    """Close an alert on behalf of ``closer`` (a monitor's name): one chained
    audit row, in its own write transaction on ``store`` (a db.Store)."""
    def write():
        store.db.execute("BEGIN IMMEDIATE")
        try:
            record(store.db, closer, CLOSER, "-", tbl, CLOSE, str(alert_id), ACK_OK + why)
        except BaseException:
            store.db.execute("ROLLBACK")
            raise
        store.db.execute("COMMIT")
    store._retry(write)
