"""The pit's audit log and the alerts' history as evidence: `shoe verify`
fails a store whose audit row or alert was deleted or edited by hand
(host_tools/store/audit.py), and passes it untouched. A real SQLite store;
the rows are written as the pit writes them."""

import shutil
import sqlite3
import subprocess
import sys

import pytest

from host_tools.store import audit, db


def _verify(path):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(path)],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "pit.db"
    with db.Store(str(path)) as s:
        s.db.execute("BEGIN IMMEDIATE")
        audit.ensure(s.db)
        for i, (action, outcome) in enumerate([("login", "ok"), ("command", "ok sent status; accepted by the shoe"),
                                              ("ack", "ok: seen"), ("logout", "ok")]):
            audit.record(s.db, "sam", "supervisor", "127.0.0.%d" % (i + 1), "T1", action, str(i), outcome)
        s.db.execute("COMMIT")
        s.alert("S1", "warning", "forged_event", "3 frames", merge_within=60)
        s.alert("S1", "warning", "forged_event", "5 frames", merge_within=60)  # merged: the row changes
        s.alert("S1", "info", "edge", "dragon7 -1.2 %")
    return path


def test_an_untouched_store_passes(store):
    code, out = _verify(store)
    assert code == 0 and "OK   audit log: 4 rows chained" in out and "OK   alerts: 3 states chained" in out, out


@pytest.mark.parametrize("sql, says", [
    ("DELETE FROM audit_log WHERE id = 2", "FAIL audit log: row 3"),
    ("DELETE FROM audit_log WHERE id = 4", "FAIL audit log: rows 4..4: missing"),
    ("UPDATE audit_log SET user = 'vic' WHERE id = 1", "FAIL audit log: row 1: hash mismatch"),
    ("UPDATE audit_log SET client = '10.0.0.9' WHERE id = 3", "FAIL audit log: row 3: hash mismatch"),
    ("DELETE FROM alerts WHERE kind = 'edge'", "FAIL alerts: alert 2: deleted"),
    ("UPDATE alerts SET count = 1 WHERE id = 1", "FAIL alerts: alert 1: edited"),
    ("INSERT INTO alerts (shoe_id, time, severity, kind, detail, count, first_time, last_time)"
     " VALUES ('S1', 0, 'info', 'gap', 'x', 1, 0, 0)", "FAIL alerts: alert 3: not in the alert history"),
    ("DELETE FROM alert_log WHERE id = 2", "FAIL alerts: alert history row 3: does not link"),
])
def test_a_deleted_or_edited_row_fails_verify(store, tmp_path, sql, says):
    bad = tmp_path / "bad.db"
    shutil.copy(store, bad)
    con = sqlite3.connect(bad)
    con.execute(sql)
    con.commit()
    con.close()
    code, out = _verify(bad)
    assert code == 1 and says in out, out


def test_an_older_audit_log_is_chained_as_it_stands(tmp_path):
    path = tmp_path / "old.db"
    with db.Store(str(path)) as s:
        s.db.execute("DROP TABLE audit_log")
        s.db.execute("DROP TABLE alert_log")
        s.db.execute("CREATE TABLE audit_log (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,"
                     " user TEXT NOT NULL, role TEXT NOT NULL, tbl TEXT NOT NULL, action TEXT NOT NULL,"
                     " target TEXT, outcome TEXT NOT NULL)")
        s.db.execute("INSERT INTO audit_log (time, user, role, tbl, action, target, outcome)"
                     " VALUES (1, 'sam', 'supervisor', 'T1', 'ack', '1', 'ok')")
        s.alert("S1", "warning", "gap", "before the history")
        s.db.execute("BEGIN IMMEDIATE")
        audit.ensure(s.db)
        s.db.execute("COMMIT")
        assert audit.acks(s.db, "T1") == {"1": {"user": "sam", "time": 1.0, "reason": "", "closed": False}}
    code, out = _verify(path)
    assert code == 0 and "OK   audit log: 1 rows" in out and "OK   alerts: 1 states" in out, out
