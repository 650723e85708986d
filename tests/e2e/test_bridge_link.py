"""The pit side of link v2 against a shoe played by the test over a real pty.

The fake shoe signs its frames with the firmware's own auth.py (the same
functions the real shoe's tags are checked with), so what is tested is the
bridge's and the store's behaviour, not a second copy of the MAC code:
forged frames are never stored and end up as one aggregated alert, a hello
must answer the bridge's challenge, the first event is never skipped, a
rolled-back shoe cannot overwrite the record, and `shoe verify --key-file`
tells a genuine store from one edited and re-chained without the key.
"""

import hashlib
import json
import os
import sqlite3
import struct
import subprocess
import sys
import time

import pytest

from host_tools.sim.rigs.bridge import ThreadedBridge
from host_tools.bridge.line import Bridge
from host_tools.store import db

from firmware.link import auth, host_frames, proto
from support.waits import until
from support.fakeshoe import FKEY, KEY, OTHER_KEY, SHOE, FakeShoe  # noqa: F401


@pytest.fixture
def bridge(shoe, tmp_path):
    r = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    yield r
    r.close()


def _rows(path, shoe_id=SHOE):
    with db.Store(path) as s:
        return [(r["seq"], r["event"], r["mac"]) for r in s.rows(shoe_id)]


def _alerts(path, **kw):
    with db.Store(path) as s:
        return s.alerts(**kw)


def _shoe(*argv):
    return subprocess.run([sys.executable, "-m", "host_tools.cli"] + list(argv),
                          capture_output=True, text=True, timeout=60)


# ------------------------------------------------------------ the bridge

def test_handshake_answers_the_challenge_and_stores_tagged_events(shoe, bridge, tmp_path):
    shoe.connect(seq=5)
    for seq in range(1, 6):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 5)
    rows = _rows(tmp_path / "b.db")
    assert [(s, m.encode()) for s, _t, m in rows] == [(s, shoe.tags[s]) for s in range(1, 6)]
    with db.Store(tmp_path / "b.db") as s:
        info = s.shoe(SHOE)
    assert (info["first_seq"], info["first_prev"]) == (1, auth.ZERO_MAC.decode())
    # The acks verify only under the nonce of the shoe's latest hello.
    for _k, seq, payload in [f for f in shoe.frames if f[0] == "A"]:
        with pytest.raises(proto.Rejected):
            auth.verify_host(KEY, SHOE, b"0" * 16, ord("A"), seq, payload)


def test_a_stale_or_unchallenged_hello_is_asked_again_not_believed(shoe, bridge):
    first = shoe.wait_challenge()
    shoe.hello(seq=3, challenge=proto.NO_CHALLENGE)  # a shoe that has not seen the request
    second = shoe.wait_challenge(after=1)
    assert second != first
    shoe.hello(seq=3, challenge=first)  # an answer to a superseded request
    time.sleep(0.3)
    assert bridge.bridge.hello is None and shoe.acks() == []
    shoe.hello(seq=3, challenge=shoe.challenges[-1])
    shoe.pump(lambda f: shoe.acks())
    assert bridge.bridge.shoe_id == SHOE and bridge.bridge.hello["seq"] == 3
    assert bridge.bridge.stats["bad_tags"] == 0  # stale is not forged: no false alert


def test_forged_events_are_not_stored_and_become_one_alert(shoe, tmp_path):
    path = tmp_path / "b.db"
    r = ThreadedBridge(str(path), shoe.path, KEY)
    try:
        shoe.connect(seq=3)
        for seq in (1, 2, 3):
            shoe.event(seq)
        shoe.pump(lambda f: shoe.acked() == 3)
        # A relay injects a result at the next seq: valid CRC, no key.
        evil = '{"type":"result","round":1,"winner":"player","note":"\\"quoted\\" %s"}' % ("x" * 200)
        shoe.event(4, evil, key_of=OTHER_KEY)
        for _ in range(40):                     # and a flood of them
            shoe.event(4, '{"type":"result","winner":"banker"}', key_of=OTHER_KEY)
        shoe.event(2, '{"type":"result"}', key_of=OTHER_KEY)  # one "replacing" a stored seq
        shoe.event(4)                           # the shoe's genuine event 4
        shoe.event(5)
        shoe.pump(lambda f: shoe.acked() == 5)
        assert r.bridge.stats["bad_tags"] == 42
    finally:
        r.close()
    rows = _rows(path)
    assert [s for s, _t, _m in rows] == [1, 2, 3, 4, 5]
    assert all("result" not in t for _s, t, _m in rows)
    alerts = _alerts(path, shoe_id=SHOE)
    assert [(a["kind"], a["severity"], a["count"]) for a in alerts] == [("forged_event", "warning", 42)]
    a = alerts[0]
    assert a["first_time"] <= a["last_time"] and "xxxxx" not in a["detail"]
    assert len(a["detail"]) < 300
    with db.Store(path) as s:
        assert not [k for _s, _t, k, _d in s.link_log(SHOE) if k in ("conflict", "fork")]


def test_forged_hellos_never_change_the_shoe(shoe, bridge, tmp_path):
    shoe.connect(seq=1)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    evil = FakeShoe(key=OTHER_KEY, shoe_id="EVIL")
    try:
        evil.master, evil.slave = shoe.master, shoe.slave  # the same line
        evil.challenges = shoe.challenges
        evil.hello(seq=99)                               # another key: forged
        shoe.send("H", 1, b'{"proto":3,"shoe":"T9","seq":1} ' + b"0" * 32)  # no key at all
        time.sleep(0.5)
        assert bridge.bridge.shoe_id == SHOE
        # A hello for another shoe id signed with this very key: genuine, but
        # this bridge records T9 only.
        twin = FakeShoe(shoe_id="T10")
        twin.master, twin.slave, twin.challenges = shoe.master, shoe.slave, shoe.challenges
        shoe.pump(lambda f: shoe.challenges and bridge.bridge.challenge_open)
        twin.hello(seq=50)
        until(lambda: any(a["kind"] == "shoe_changed" for a in _alerts(tmp_path / "b.db")))
        assert bridge.bridge.shoe_id == SHOE and bridge.bridge.hello["shoe"] == SHOE
    finally:
        bridge.close()  # evil and twin share the shoe's fds, which the fixture closes
    kinds = {a["kind"]: a for a in _alerts(tmp_path / "b.db")}
    assert kinds["forged_hello"]["count"] >= 2 and kinds["forged_hello"]["shoe_id"] == SHOE
    assert kinds["shoe_changed"]["severity"] == "critical"
    with db.Store(tmp_path / "b.db") as s:
        assert s.shoe_ids() == [SHOE]


def test_forged_heartbeats_are_ignored_and_counted(shoe, bridge, tmp_path):
    shoe.connect(seq=0)
    shoe.pump(lambda f: shoe.beat_challenges)
    shoe.beat(0, 0)
    shoe.beat(0, 0, tag=b"f" * 32)
    until(lambda: bridge.bridge.stats["bad_tags"] == 1)
    bridge.close()
    assert [a["kind"] for a in _alerts(tmp_path / "b.db")] == ["forged_beat"]


def test_a_replayed_heartbeat_cannot_hide_withheld_events(shoe, bridge):
    """A device on the line withholds the shoe's next 40 events and plays back
    the shoe's own last heartbeat (nothing queued) to keep the pit content:
    the heartbeat covered a challenge the bridge has since replaced, so the
    bridge says NOT RECORDING, and why."""
    shoe.connect(seq=5)
    for seq in range(1, 6):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 5)
    shoe.pump(lambda f: shoe.beat_challenges)
    genuine = shoe.beat_payload(5, 5)   # the shoe's, fresh now
    shoe.send("B", 5, genuine)
    until(lambda: bridge.bridge.recording()[0])
    shoe.answer_beats = False           # from here the line is the attacker's
    for seq in range(6, 46):
        shoe.event_payload(seq)         # dealt by the shoe, withheld on the line
    # Fresh while it covers the current or the previous challenge (<= 2 s),
    # then STALE_S (3 s) without a fresh one.
    end = time.monotonic() + 6.0
    while time.monotonic() < end:
        shoe.read()
        shoe.send("B", 5, genuine)
        time.sleep(0.25)
    ok, why = bridge.bridge.recording()
    assert not ok, why
    assert why.startswith("no heartbeat bound to this bridge's challenge and no new event for"), why
    assert bridge.bridge.stats["bad_tags"] >= 5  # each replay counted (forged_beat)


def test_first_event_lost_store_waits_for_seq_1(shoe, bridge, tmp_path):
    shoe.connect(seq=3, acked=0)
    shoe.event(2)
    shoe.event(3)  # seq 1 was lost on the line
    time.sleep(0.4)
    assert _rows(tmp_path / "b.db") == [] and shoe.acked() == 0
    for seq in (1, 2, 3):  # the go-back-N resend
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 3)
    assert [s for s, _t, _m in _rows(tmp_path / "b.db")] == [1, 2, 3]
    with db.Store(tmp_path / "b.db") as s:
        assert s.shoe(SHOE)["first_seq"] == 1
        assert "gap" in [k for _s, _t, k, _d in s.link_log(SHOE)]


def test_a_new_store_starts_at_acked_plus_one_with_the_hello_chain(shoe, bridge, tmp_path):
    for seq in (1, 2, 3):
        shoe.tags[seq] = host_frames.frame_mac(FKEY, SHOE, ord("E"), seq,
                                        shoe.tags.get(seq - 1, auth.ZERO_MAC),
                                        b'{"type":"bets","round":%d}' % seq)
    shoe.connect(seq=5, acked=3)  # 1..3 went to the store of an earlier pit PC
    shoe.event(5)
    shoe.event(4, prev=b"1" * 32)  # a seq 4 that does not follow the hello's chain
    time.sleep(0.3)
    assert _rows(tmp_path / "b.db") == []
    shoe.event(4)
    shoe.event(5)
    shoe.pump(lambda f: shoe.acked() == 5)
    assert [s for s, _t, _m in _rows(tmp_path / "b.db")] == [4, 5]
    with db.Store(tmp_path / "b.db") as s:
        assert s.shoe(SHOE)["first_prev"] == shoe.tags[3].decode()
    bridge.close()
    r = _shoe("verify", "--mac-only", "--db", str(tmp_path / "b.db"), "--key-file", _key_file(tmp_path))
    assert r.returncode == 0, r.stdout  # a forged-event alert is a warning, not a failure
    assert "OK   shoe T9: 2 events, seq 4..5" in r.stdout and "starts at seq 4" in r.stdout
    assert "note shoe T9: 1 alert: forged_event 1 (warning) (--alerts lists them)" in r.stdout


def _key_file(tmp_path, key=KEY):
    path = tmp_path / "shoe_key.bin"
    path.write_bytes(key)
    path.chmod(0o600)  # a key others can read is refused (host_tools/protocol/keys.py)
    return str(path)


def test_rollback_hello_raises_a_critical_alert_and_overwrites_nothing(shoe, bridge, tmp_path):
    path = tmp_path / "b.db"
    shoe.connect(seq=6, counter=4)
    for seq in range(1, 6):
        shoe.event(seq)
    shoe.event(6, '{"type":"accepted","source":"link","command":"bets","counter":4}')
    shoe.pump(lambda f: shoe.acked() == 6)
    before = _rows(path)
    # The journal was deleted: the shoe restarts from nothing, untilted.
    shoe.tags = {}
    shoe.wait_challenge()
    bridge.bridge.ask_hello(force=True)
    shoe.wait_challenge(after=len(shoe.challenges))
    shoe.hello(seq=2, acked=0, counter=0)
    until(lambda: any(a["kind"] == "rollback" for a in _alerts(path)))
    # Until it took the rollback, the bridge's idle heartbeat acked its head
    # (6), and on a loaded machine one did after the hello was asked for:
    # read all it sent before, so that what follows the rollback is held
    # to "no ack".
    while True:
        n = len(shoe.frames)
        shoe.read()
        if len(shoe.frames) == n:
            break
    for seq in (1, 2):
        shoe.event(seq, '{"type":"boot","source":"link","round":0}')
    shoe.event(7, prev=b"0" * 32)
    time.sleep(1.2)
    assert _rows(path) == before
    assert [f for f in shoe.frames[n:] if f[0] == "A"] == []  # not acked: the record stops
    assert bridge.bridge.refuse and "rolled back" in bridge.bridge.refuse
    alert = [a for a in _alerts(path) if a["kind"] == "rollback"][0]
    assert alert["severity"] == "critical" and "last seq is 2" in alert["detail"] and "command 4" in alert["detail"]
    bridge.close()
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", _key_file(tmp_path))
    assert r.returncode == 1 and "critical alert rollback" in r.stdout


def test_a_tilted_rollback_is_acked_and_continues_after_the_record(shoe, bridge, tmp_path):
    path = tmp_path / "b.db"
    shoe.connect(seq=4)
    for seq in range(1, 5):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 4)
    shoe.tags = {}
    bridge.bridge.ask_hello(force=True)
    shoe.wait_challenge(after=len(shoe.challenges))
    n = len(shoe.frames)
    shoe.hello(seq=1, acked=0, tilt="journal lost at boot")
    shoe.pump(lambda f: [x for x in f[n:] if x[0] == "A" and x[1] == 4])  # acks the stored seq
    # The tilted shoe renumbers after it; its tilt event restarts the chain,
    # a non-tilt event may not.
    shoe.event(5, '{"type":"boot","source":"link","round":0}', prev=b"0" * 32)
    time.sleep(0.3)
    assert len(_rows(path)) == 4
    shoe.tags.pop(5)
    shoe.event(5, '{"type":"tilt","source":"link","reason":"journal lost"}', prev=b"0" * 32)
    shoe.event(6, '{"type":"error","source":"link","reason":"tilted","message":"card ignored"}')
    shoe.pump(lambda f: shoe.acked() == 6)
    assert [s for s, _t, _m in _rows(path)] == [1, 2, 3, 4, 5, 6]
    bridge.close()
    assert [a["kind"] for a in _alerts(path, severity="critical")] == ["rollback"]
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", _key_file(tmp_path))
    assert "OK   shoe T9: 6 events" in r.stdout and r.returncode == 1  # the rollback stays on record


def test_a_v1_shoe_gets_one_line_naming_both_versions(shoe, bridge, tmp_path):
    for _ in range(3):
        shoe.wait_challenge()
        shoe.send("H", 4, json.dumps({"proto": 1, "fw": "old", "board": "emulator", "shoe": SHOE,
                                      "settings": "", "seq": 4, "acked": 0, "counter": 0,
                                      "tilt": None}).encode())
        shoe.send("E", 1, b'{"type":"bets","round":1}')
        time.sleep(0.2)
    bridge.close()
    assert bridge.bridge.refuse == "shoe speaks link protocol 1, this bridge speaks %d: not recording" % proto.PROTO
    with db.Store(tmp_path / "b.db") as s:
        refused = [d for _s, _t, k, d in s.link_log() if k == "refused"]
        assert refused == [bridge.bridge.refuse] and s.count(SHOE) == 0
    assert [f for f in shoe.frames if f[0] == "A"] == []


def test_without_a_key_nothing_is_recorded_and_it_says_so(shoe, tmp_path):
    r = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, None)
    try:
        shoe.wait_challenge()
        shoe.hello(seq=1)
        shoe.event(1)
        time.sleep(0.4)
    finally:
        r.close()
    with db.Store(tmp_path / "b.db") as s:
        refused = [d for _s, _t, k, d in s.link_log() if k == "refused"]
        assert s.shoe_ids() == [] and len(refused) == 1 and "records nothing" in refused[0]


# ------------------------------------------------------------ the store and verify

def _signed_store(path, n=20, checkpoint_at=(10,), shoe_id=SHOE, start=1, restart_at=()):
    """A store as a bridge would have written it from a genuine shoe; returns the tags."""
    tags = {}
    prev = auth.ZERO_MAC
    with db.Store(path) as store:
        store.register_shoe(shoe_id, key_id="k", settings={})
        for seq in range(start, start + n):
            if seq in checkpoint_at:
                text = '{"type":"checkpoint","source":"link","through":%d}' % (seq - 1)
            elif seq in restart_at:
                text = '{"type":"tilt","source":"link","reason":"journal lost"}'
                prev = auth.ZERO_MAC
            else:
                text = json.dumps({"type": "card", "round": seq // 4, "pos": "P1", "card": "9H"},
                                  separators=(",", ":"))
            tag = host_frames.frame_mac(FKEY, shoe_id, ord("E"), seq, prev, text.encode())
            store.append(shoe_id, seq, text, mac=tag, first_seq=start, first_prev=auth.ZERO_MAC)
            tags[seq] = tag.decode()
            prev = tag
    return tags


def _rechain(path, shoe_id=SHOE):
    """What an insider without the key does after editing rows: recompute
    every SHA-256 hash and the head from docs/design.md's formula."""
    con = sqlite3.connect(str(path))
    prev = bytes(32)
    last = None
    for seq, text in con.execute("SELECT seq, event FROM events WHERE shoe_id = ? ORDER BY seq",
                                 (shoe_id,)).fetchall():
        raw = text.encode()
        h = hashlib.sha256(prev + struct.pack(">I", len(raw)) + raw + struct.pack(">Q", seq)
                           + shoe_id.encode()).digest()
        con.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE shoe_id = ? AND seq = ?",
                    (prev.hex(), h.hex(), shoe_id, seq))
        prev, last = h, seq
    con.execute("UPDATE shoes SET last_seq = ?, head_hash = ? WHERE shoe_id = ?", (last, prev.hex(), shoe_id))
    con.commit()
    con.close()


def test_untouched_store_passes_verify_with_the_key_and_prints_its_anchor(tmp_path):
    path = tmp_path / "s.db"
    tags = _signed_store(path, checkpoint_at=(10, 18))
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", _key_file(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK   shoe T9: 20 events, seq 1..20" in r.stdout and "tags verified" in r.stdout
    assert "anchor T9:18:%s" % tags[18] in r.stdout.splitlines()
    r = _shoe("verify", "--mac-only", "--db", str(path))
    assert r.returncode == 0 and "tags were not checked" in r.stdout


@pytest.mark.parametrize("edit", ["text", "text-and-tag-copied", "deleted-middle"])
def test_an_edited_and_rechained_store_fails_verify_with_the_key(tmp_path, edit):
    path = tmp_path / "s.db"
    _signed_store(path)
    con = sqlite3.connect(str(path))
    if edit == "text":
        con.execute("UPDATE events SET event = replace(event, '9H', '8H') WHERE seq = 7")
    elif edit == "text-and-tag-copied":
        con.execute("UPDATE events SET event = (SELECT event FROM events WHERE seq = 6),"
                    " mac = (SELECT mac FROM events WHERE seq = 6) WHERE seq = 7")
    else:
        con.execute("DELETE FROM events WHERE seq = 7")
        con.execute("UPDATE events SET seq = seq - 1 WHERE seq > 7")
    con.commit()
    con.close()
    _rechain(path)
    assert _shoe("verify", "--mac-only", "--db", str(path)).returncode == 0  # the SHA chain alone is fooled
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", _key_file(tmp_path))
    assert r.returncode == 1 and "FAIL shoe T9: seq 7: tag does not verify" in r.stdout, r.stdout


def test_the_wrong_key_fails_at_the_first_event(tmp_path):
    path = tmp_path / "s.db"
    _signed_store(path)
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", _key_file(tmp_path, OTHER_KEY))
    assert r.returncode == 1 and "FAIL shoe T9: seq 1: tag does not verify" in r.stdout


def test_anchor_catches_a_truncated_tail(tmp_path):
    path = tmp_path / "s.db"
    tags = _signed_store(path, checkpoint_at=(18,))
    anchor = "T9:18:%s" % tags[18]
    key = _key_file(tmp_path)
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", key, "--anchor", anchor)
    assert r.returncode == 0 and "OK   anchor " + anchor in r.stdout, r.stdout
    con = sqlite3.connect(str(path))
    con.execute("DELETE FROM events WHERE seq > 15")
    con.commit()
    con.close()
    _rechain(path)
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", key)
    assert r.returncode == 0  # without the anchor, a clean cut looks whole
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", key, "--anchor", anchor)
    assert r.returncode == 1 and "FAIL shoe T9: seq 18: anchor seq 18 is not in the store" in r.stdout
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", key, "--anchor", "T9:12:" + "ab" * 16)
    assert r.returncode == 1 and "anchor tag" in r.stdout
    r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", key, "--anchor", "T7:1:" + "ab" * 16)
    assert r.returncode == 1 and "FAIL shoe T7: not in the store" in r.stdout


@pytest.mark.parametrize("argv, words", [
    (["--anchor", "T9:1:" + "ab" * 16], "--anchor needs --key-file"),
    (["--key-file", "KEY", "--anchor", "T9:x:ab"], "SEQ must be a whole number"),
    (["--key-file", "KEY", "--anchor", "T9:1:xyz"], "32 hex digits"),
    (["--key-file", "/nonexistent/key"], "No such file"),
])
def test_verify_argument_errors_are_one_line(tmp_path, argv, words):
    path = tmp_path / "s.db"
    _signed_store(path, n=2)
    argv = [_key_file(tmp_path) if a == "KEY" else a for a in argv]
    r = _shoe("verify", "--mac-only", "--db", str(path), *argv)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_chain_restarts_only_where_the_protocol_allows(tmp_path):
    ok = tmp_path / "ok.db"
    _signed_store(ok, restart_at=(9,))
    assert _shoe("verify", "--mac-only", "--db", str(ok), "--key-file", _key_file(tmp_path)).returncode == 0
    bad = tmp_path / "bad.db"
    _signed_store(bad)
    # Restart the chain at an ordinary event: re-sign 9.. from zeros (as only
    # the key holder could) - still refused, a restart is only at a link tilt.
    con = sqlite3.connect(str(bad))
    prev = auth.ZERO_MAC
    for seq, text in con.execute("SELECT seq, event FROM events WHERE seq >= 9 ORDER BY seq").fetchall():
        prev = host_frames.frame_mac(FKEY, SHOE, ord("E"), seq, prev, text.encode())
        con.execute("UPDATE events SET mac = ? WHERE seq = ?", (prev.decode(), seq))
    con.commit()
    con.close()
    r = _shoe("verify", "--mac-only", "--db", str(bad), "--key-file", _key_file(tmp_path))
    assert r.returncode == 1 and "FAIL shoe T9: seq 9: tag does not verify" in r.stdout


def test_verify_opens_the_store_read_only_and_changes_no_byte(tmp_path):
    path = tmp_path / "s.db"
    _signed_store(path)
    before = path.read_bytes()
    os.chmod(path, 0o444)
    try:
        r = _shoe("verify", "--mac-only", "--db", str(path), "--key-file", _key_file(tmp_path))
        assert r.returncode == 0, r.stdout + r.stderr
        assert path.read_bytes() == before
        with pytest.raises(db.StoreError, match="read-only"):
            db.open_existing(path).append(SHOE, 21, '{"type":"cover"}')
    finally:
        os.chmod(path, 0o644)


def test_a_v1_store_is_refused_in_one_line(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(str(path))
    con.executescript("CREATE TABLE shoes (shoe_id TEXT PRIMARY KEY, key_id TEXT);"
                      "CREATE TABLE events (shoe_id TEXT, seq INTEGER, event TEXT, prev_hash TEXT,"
                      " hash TEXT);")
    con.close()
    before = path.read_bytes()
    for cmd in ("verify", "export", "recall"):
        r = _shoe(cmd, "--db", str(path))
        assert r.returncode == 2 and "link-protocol-1 store" in r.stderr, (cmd, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    with pytest.raises(db.StoreError, match="link-protocol-1 store"):
        db.Store(path)
    assert path.read_bytes() == before


def test_bridge_with_a_fixed_shoe_id_refuses_another(shoe, tmp_path):
    with db.Store(tmp_path / "b.db") as store:
        b = Bridge(store, shoe.path, KEY, shoe_id="T1")
        try:
            for _ in range(40):
                b.poll(0.02)
                shoe.read()
                if shoe.challenges:
                    break
            shoe.hello(seq=0)
            for _ in range(20):
                b.poll(0.02)
            assert b.shoe_id == "T1" and b.hello is None
            assert [a["kind"] for a in store.alerts(severity="critical")] == ["shoe_changed"]
        finally:
            b.close()


def test_a_bridge_with_the_wrong_key_records_nothing_and_says_why(tmp_path):
    shoe = FakeShoe(key=OTHER_KEY)
    r = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    try:
        shoe.wait_challenge()
        shoe.hello(seq=1)
        shoe.event(1)
        until(lambda: r.bridge.refuse)
        assert "wrong --key-file" in r.bridge.refuse and r.bridge.shoe_id is None
        assert shoe.acks() == [] and not [f for f in shoe.frames if f[0] == "A"]
    finally:
        r.close()
        shoe.close()
    with db.Store(tmp_path / "b.db") as s:
        assert s.shoe_ids() == [] and [a["kind"] for a in s.alerts()] == ["forged_hello"]


# ------------------------------------------------------------ deployed firmware, service mode

DEPLOYED = "5e" * 32


def _bridge_with_deploy_record(shoe, tmp_path, deployed=DEPLOYED):
    return ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY, deployed=deployed)


def test_a_hello_naming_other_firmware_than_deployed_is_a_critical_alert(shoe, tmp_path):
    """`shoe deploy` recorded the manifest beside the key; a shoe whose hello
    names another (altered code that kept the link key) is alerted at once."""
    bridge = _bridge_with_deploy_record(shoe, tmp_path)
    try:
        shoe.connect(manifest="77" * 32, service=False)
        got = until(lambda: [a for a in _alerts(tmp_path / "b.db") if a["kind"] == "firmware_mismatch"])
    finally:
        bridge.close()
    assert got[0]["severity"] == "critical"
    assert ("77" * 32)[:16] in got[0]["detail"] and DEPLOYED[:16] in got[0]["detail"]


def test_the_deployed_firmware_and_no_service_mode_raise_nothing(shoe, tmp_path):
    bridge = _bridge_with_deploy_record(shoe, tmp_path)
    try:
        shoe.connect(manifest=DEPLOYED, service=False)
        shoe.event(1)
        shoe.pump(lambda f: shoe.acked() == 1)
    finally:
        bridge.close()
    assert [a["kind"] for a in _alerts(tmp_path / "b.db")] == []


def test_a_hello_in_service_mode_is_a_critical_alert(shoe, tmp_path):
    bridge = _bridge_with_deploy_record(shoe, tmp_path)
    try:
        shoe.connect(manifest=DEPLOYED, service=True)
        got = until(lambda: [a for a in _alerts(tmp_path / "b.db") if a["kind"] == "service_mode"])
    finally:
        bridge.close()
    assert got[0]["severity"] == "critical" and "service mode" in got[0]["detail"]


@pytest.mark.parametrize("why", ["counter", "seal"])
def test_a_shoe_tilted_on_its_secure_element_counter_is_a_critical_alert(shoe, tmp_path, why):
    """The shoe's boot check found its chip's counter ahead of its journal
    (link/chipcount.py: a journal restored from a copy, or a swapped chip),
    or a journal record that fails its seal (link/journal.py: edited, or
    put back from another journal); the pit says so with its own alert,
    not only as a tilt."""
    from firmware.link import chipcount, journal
    bridge = _bridge_with_deploy_record(shoe, tmp_path)
    reason = ("%s is 2, the journal's last is 1: journal restored from a copy, or chip swapped" % chipcount.REASON
              if why == "counter" else "corrupt journal: record 17 at byte 765: " + journal.SEAL)
    try:
        shoe.connect(manifest=DEPLOYED, service=False, tilt=reason)
        got = until(lambda: [a for a in _alerts(tmp_path / "b.db") if a["kind"] == "counter_mismatch"])
    finally:
        bridge.close()
    assert got[0]["severity"] == "critical" and reason in got[0]["detail"]


def test_another_tilt_is_not_a_counter_alert(shoe, tmp_path):
    bridge = _bridge_with_deploy_record(shoe, tmp_path)
    try:
        shoe.connect(manifest=DEPLOYED, service=False, tilt="corrupt journal: record 3 at byte 40: crc 1234")
        shoe.pump(lambda f: True)
    finally:
        bridge.close()
    assert "counter_mismatch" not in [a["kind"] for a in _alerts(tmp_path / "b.db")]
