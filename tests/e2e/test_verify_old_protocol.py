"""A store the bridge kept under link protocol 2 (keyed BLAKE2s tags) still
verifies with today's `shoe verify`: each record is checked under the
protocol version it was written under (its hellos' ``proto``, kept with the
shoe's row). The tags here are made the way a protocol-2 shoe made them,
with CPython's BLAKE2s, independently of host_frames."""

import hashlib
import hmac
import json
import sqlite3
import subprocess
import sys

import pytest

from host_tools.store import db

SHOE = "OLD2"
KEY = bytes(range(32))
ZEROS = "0" * 32


def _v2_tag(seq, prev, body):
    fkey = hmac.new(KEY, b"shoe frames v2", hashlib.sha256).digest()
    msg = b"%s E%d %s %s" % (SHOE.encode(), seq, prev.encode(), body)
    return hashlib.blake2s(msg, key=fkey, digest_size=16).hexdigest()


def _events(n):
    return [json.dumps({"type": "card", "round": i // 4, "pos": "P1", "card": "9H", "up": False,
                        "next": "B1", "simulated": False}, separators=(",", ":")).encode()
            for i in range(n)]


@pytest.fixture
def old_store(tmp_path):
    """What a protocol-2 bridge left: the shoe's hello settings (proto 2)
    and twelve events, each with its BLAKE2s tag over the one before."""
    path = tmp_path / "v2.db"
    key = tmp_path / "OLD2.key"
    key.write_bytes(KEY)
    key.chmod(0o600)
    with db.Store(path) as store:
        store.register_shoe(SHOE, key_id="k", settings={"proto": 2, "fw": "0.1.0+old", "board": "pico"})
        prev = ZEROS
        for seq, body in enumerate(_events(12), start=1):
            tag = _v2_tag(seq, prev, body)
            kw = {"first_seq": 1, "first_prev": ZEROS} if seq == 1 else {}
            assert store.append(SHOE, seq, body, mac=tag, **kw) == db.STORED
            prev = tag
    return path, key


def _verify(path, key):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(path),
                           "--key-file", str(key), "--mac-only"],
                          capture_output=True, text=True, timeout=60)


def _rechain(path, edit_seq, new_body):
    """The insider's edit: one event's text changed and every SHA-256 row
    hash after it recomputed, the head included; the tags cannot be."""
    con = sqlite3.connect(str(path))
    con.execute("UPDATE events SET event = ? WHERE shoe_id = ? AND seq = ?",
                (new_body.decode(), SHOE, edit_seq))
    prev = db.GENESIS
    for seq, text in con.execute("SELECT seq, event FROM events WHERE shoe_id = ? ORDER BY seq",
                                 (SHOE,)).fetchall():
        digest = db.chain_hash(prev, text.encode(), seq, SHOE)
        con.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE shoe_id = ? AND seq = ?",
                    (prev.hex(), digest.hex(), SHOE, seq))
        prev = digest
    con.execute("UPDATE shoes SET head_hash = ? WHERE shoe_id = ?", (prev.hex(), SHOE))
    con.commit()
    con.close()


def test_a_protocol_2_store_verifies_under_its_own_tags(old_store):
    r = _verify(*old_store)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK   shoe OLD2: 12 events, seq 1..12" in r.stdout


def test_an_edited_and_rechained_protocol_2_store_fails(old_store):
    path, key = old_store
    _rechain(path, 7, _events(12)[6].replace(b"9H", b"8H"))
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout   # without the key, the re-chained store looks whole
    r = _verify(path, key)
    assert r.returncode == 1, r.stdout
    assert "FAIL shoe OLD2: seq 7: tag does not verify" in r.stdout


def test_relabelling_the_record_as_protocol_3_does_not_make_it_pass(old_store):
    """The version is the record's own word, not a proof: an insider who
    relabels it only moves the check to tags the events do not carry."""
    path, key = old_store
    con = sqlite3.connect(str(path))
    con.execute("UPDATE shoes SET settings = ? WHERE shoe_id = ?",
                (json.dumps({"proto": 3, "fw": "0.1.0+old", "board": "pico"}), SHOE))
    con.commit()
    con.close()
    r = _verify(path, key)
    assert r.returncode == 1 and "FAIL shoe OLD2: seq 1: tag does not verify" in r.stdout


def test_a_record_of_a_version_without_known_tags_fails_in_one_line(old_store):
    path, key = old_store
    con = sqlite3.connect(str(path))
    con.execute("UPDATE shoes SET settings = ? WHERE shoe_id = ?", (json.dumps({"proto": 9}), SHOE))
    con.commit()
    con.close()
    r = _verify(path, key)
    assert r.returncode == 1
    assert "FAIL shoe OLD2: link protocol 9: tags of versions 2, 3 only are known here" in r.stdout
    assert "Traceback" not in r.stderr


def test_the_bridge_does_not_extend_a_record_of_another_version(old_store):
    """A protocol-3 shoe with the id of a protocol-2 record: the bridge
    refuses in one line instead of appending protocol-3 events to it (the
    record would then be half one version, half the other), and the old
    record still verifies."""
    from host_tools.sim.rigs.bridge import ThreadedBridge
    from support.fakeshoe import FakeShoe
    from support.waits import until

    path, key = old_store
    shoe = FakeShoe(key=KEY, shoe_id=SHOE)
    bridge = ThreadedBridge(str(path), shoe.path, KEY)
    try:
        shoe.wait_challenge()
        shoe.hello(seq=13, acked=12)
        shoe.event(13)

        def refused():
            with db.Store(path) as store:
                return [d for k, d in store.db.execute("SELECT kind, detail FROM link_log").fetchall()
                        if k == "refused"]
        lines = until(refused, timeout=30)
        assert "written under link protocol 2, this bridge records 3" in lines[0]
        with db.Store(path) as store:
            assert store.last_seq(SHOE) == 12
            assert db.record_proto(store.shoe(SHOE)) == 2
    finally:
        bridge.close()
        shoe.close()
    assert _verify(path, key).returncode == 0
