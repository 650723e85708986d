"""`shoe export` and `shoe verify` as a user runs them on a store: export
keeps the shoe's bytes and adds the seq; verify passes a clean store, one
sixteen bridges wrote at once, and names the first bad seq of an edited,
deleted, inserted or reordered one. The store itself is
tests/unit/test_store.py."""

import json
import sqlite3
import subprocess
import sys

import pytest

from host_tools.store import db
from support import cardstore
from support.cardstore import SHOE


@pytest.fixture
def filled(tmp_path):
    return cardstore.filled(tmp_path / "s.db")


def _shoe(*argv):
    return subprocess.run([sys.executable, "-m", "host_tools.cli"] + list(argv),
                          capture_output=True, text=True, timeout=60)


def test_export_adds_seq_and_keeps_the_shoe_bytes(filled):
    r = _shoe("export", "--db", str(filled))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 20
    for seq, (line, text) in enumerate(zip(lines, cardstore.card_events(20)), start=1):
        obj = json.loads(line)
        assert obj.pop("seq") == seq
        assert obj == json.loads(text)
        assert line.startswith(text[:-1])


def test_export_names_missing_store_and_ambiguous_shoe(tmp_path, filled):
    r = _shoe("export", "--db", str(tmp_path / "nope.db"))
    assert r.returncode == 2 and "no store at" in r.stderr
    assert not (tmp_path / "nope.db").exists()
    with db.Store(filled) as store:
        store.append("T02", 1, '{"type":"cover"}')
    r = _shoe("export", "--db", str(filled))
    assert r.returncode == 2 and "--shoe" in r.stderr
    r = _shoe("export", "--db", str(filled), "--shoe", "T02")
    assert r.stdout == '{"type":"cover","seq":1}\n'


def test_verify_passes_clean_store(filled):
    r = _shoe("verify", "--db", str(filled))
    assert r.returncode == 0, r.stdout
    assert "OK   shoe T01: 20 events, seq 1..20" in r.stdout


def _tamper(path, *sql):
    con = sqlite3.connect(str(path))
    for statement in sql:
        con.execute(statement)
    con.commit()
    con.close()


@pytest.mark.parametrize("sql, seq, words", [
    (["UPDATE events SET event = replace(event, '9H', '8H') WHERE seq = 7"], 7, "hash mismatch"),
    (["DELETE FROM events WHERE seq = 9"], 9, "missing"),
    (["DELETE FROM events WHERE seq = 20"], 20, "missing"),
    (["DELETE FROM events WHERE seq = 1"], 1, "missing"),
    # swap two rows' positions: each keeps its own hash but now sits elsewhere
    (["UPDATE events SET seq = -1 WHERE seq = 11",
      "UPDATE events SET seq = 11 WHERE seq = 12",
      "UPDATE events SET seq = 12 WHERE seq = -1"], 11, "prev_hash"),
    # swap two rows' contents in place
    (["UPDATE events SET event = (SELECT event FROM events WHERE seq = 4) || ' ' WHERE seq = 3"],
     3, "hash mismatch"),
    (["INSERT INTO events (shoe_id, seq, type, round, event, mac, received, prev_hash, hash)"
      " SELECT shoe_id, 21, type, round, event, mac, received, hash, hash"
      " FROM events WHERE seq = 20"], 21, "inserted"),
    (["UPDATE events SET type = 'cover' WHERE seq = 13"], 13, "columns"),
], ids=["edited", "deleted-middle", "deleted-last", "deleted-first", "reordered",
        "content-swapped", "appended", "column-edited"])
def test_verify_names_first_bad_seq(filled, sql, seq, words):
    _tamper(filled, *sql)
    r = _shoe("verify", "--db", str(filled))
    assert r.returncode == 1, r.stdout
    assert "FAIL shoe T01: seq %d:" % seq in r.stdout
    assert words in r.stdout


def test_verify_catches_a_rechained_insertion_via_the_head(filled):
    # An insider appends a well-chained row but cannot also fake the head
    # kept in the shoes row without it showing as a mismatch there.
    with db.Store(filled) as store:
        last_hash = bytes.fromhex(store.shoe(SHOE)["head_hash"])
    text = '{"type":"cover"}'
    digest = db.chain_hash(last_hash, text.encode(), 21, SHOE).hex()
    _tamper(filled, "INSERT INTO events (shoe_id, seq, type, round, event, received, prev_hash, hash)"
            " VALUES ('T01', 21, 'cover', NULL, '%s', 0, '%s', '%s')"
            % (text, last_hash.hex(), digest))
    r = _shoe("verify", "--db", str(filled))
    assert r.returncode == 1 and "FAIL shoe T01: seq 21:" in r.stdout


def test_many_bridges_share_one_store_file(tmp_path):
    """Sixteen tables' bridges each with their own connection: every event
    lands, each chain verifies, nobody waits out a lock timeout."""
    import threading
    path = tmp_path / "pit.db"
    db.Store(path).close()
    errors = []

    def table(shoe):
        try:
            with db.Store(path) as store:
                for seq in range(1, 61):
                    store.append(shoe, seq, '{"type":"bets","round":%d}' % seq)
                    store.log_link(shoe, "connect", "seq %d" % seq)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=table, args=("S%02d" % i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    r = _shoe("verify", "--db", str(path))
    assert r.returncode == 0 and r.stdout.count("OK   shoe") == 16
    with db.Store(path) as store:
        assert all(store.count("S%02d" % i) == 60 for i in range(16))
