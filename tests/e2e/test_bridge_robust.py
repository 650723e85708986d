"""The bridge never exits on input and never records silently.

Every kind of bad input that reaches the bridge is played here by the
shared fake shoe (tests/support/fakeshoe.py), signed with the right key so it
passes the tag check and has to be caught by the link schema
(firmware/link/events_schema.py): the bridge logs it with its bytes, skips
it, stays up and records the next good frame. A sample of the frame-path fuzz
(`shoe soak fuzz` runs the long one) runs in-process at the end.
"""

import concurrent.futures
import json
import random
import sqlite3
import time

import pytest

from host_tools.sim.rigs.bridge import ThreadedBridge
from host_tools.bridge.line import Bridge
from host_tools import exits
from host_tools.store import db
from support.waits import until
from support.fakeshoe import KEY, OTHER_KEY, SHOE, FakeShoe  # noqa: F401

from firmware.link import auth, frame, host_frames, proto


@pytest.fixture
def rig(shoe, tmp_path):
    r = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    yield r
    r.close()


def _seqs(path):
    with db.Store(path) as s:
        return [seq for _sh, seq, _t, _p, _h in s.events(SHOE)]


def _alive(rig):
    assert rig.thread.is_alive(), "the bridge thread died"
    assert rig.bridge.stats["internal_errors"] == 0


CARD_NO_CARD = '{"type":"card","round":1,"pos":"P1","up":true,"next":"B1","simulated":false,"left":300}'


@pytest.mark.parametrize("bad", [
    '{"type":{},"round":1}',
    '{"type":%d,"round":1}' % 2 ** 63,
    CARD_NO_CARD,
    '{"type":"bets","round":%d}' % 2 ** 63,
    '{"type":"bets","round":1e30}',
    '[1,2]',
    '{"type":"bets","round":1,"round":"x"}',
    '[' * 450 + ']' * 450,
    '{"type":"bets","round":1,"note":"\\u0000"}',
    '{"type":"bets","round":1} trailing',
])
def test_a_signed_event_the_schema_rejects_is_skipped_and_the_bridge_stays_up(shoe, rig, tmp_path, bad):
    shoe.connect(seq=3)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    shoe.event(2, bad)  # signed with the right key: only the schema can catch it
    until(lambda: rig.bridge.stats["invalid"] >= 1)
    _alive(rig)
    assert _seqs(tmp_path / "b.db") == [1] and shoe.acked() == 1
    ok, why = rig.bridge.recording()
    assert not ok and why.startswith("the shoe's event 2 fails the link schema (")
    shoe.tags.pop(2, None)
    shoe.event(2)  # the same seq, well formed: recording resumes at once
    shoe.event(3)
    shoe.pump(lambda f: shoe.acked() == 3)
    _alive(rig)
    assert _seqs(tmp_path / "b.db") == [1, 2, 3] and rig.bridge.recording()[0]
    with db.Store(tmp_path / "b.db") as s:
        alert = [a for a in s.alerts(SHOE) if a["kind"] == "invalid_event"][0]
    assert alert["severity"] == "warning" and "E2 " in alert["detail"] and len(alert["detail"]) < 400


@pytest.mark.parametrize("extra,words", [
    ({"acked": "x"}, "field 'acked' must be int"),
    ({"counter": None}, "field 'counter' must be int"),
    ({"nonce": "short"}, "field 'nonce' must be hex16"),
    ({"tilt": {}}, "field 'tilt' must be str or null"),
    ({"unexpected": 1}, "unexpected field 'unexpected'"),
    ({"counter": 2 ** 64}, "field 'counter' is out of range"),
])
def test_a_signed_hello_the_schema_rejects_is_not_believed(shoe, rig, extra, words):
    shoe.wait_challenge()
    n = len(shoe.challenges)
    shoe.hello(seq=1, **extra)
    until(lambda: rig.bridge.refuse)
    _alive(rig)
    assert rig.bridge.hello is None and shoe.acks() == []
    assert "fails the link schema" in rig.bridge.refuse and words in rig.bridge.refuse
    ok, why = rig.bridge.recording()
    assert not ok and words in why
    shoe.wait_challenge(after=n)  # asked again at once
    shoe.hello(seq=1)  # a good hello recovers at once
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    assert rig.bridge.recording()[0]


@pytest.mark.parametrize("value", [[], 1e30, None, {}, 7])
def test_a_hello_whose_shoe_is_not_a_string_is_ignored(shoe, rig, value):
    shoe.wait_challenge()
    shoe.hello(seq=1, shoe=value)
    until(lambda: rig.bridge.stats["bad_frames"] + sum(rig.bridge.tally.total.values()) > 0)
    _alive(rig)
    assert rig.bridge.hello is None and rig.bridge.shoe_id is None
    shoe.connect(seq=1)
    assert rig.bridge.shoe_id == SHOE


@pytest.mark.parametrize("body", [{"acked": "x"}, {"acked": "x", "queued": 0}, {"acked": 1},
                                  {"acked": 1, "queued": 1e30}, [], "x"])
def test_a_signed_heartbeat_the_schema_rejects_is_ignored(shoe, rig, tmp_path, body):
    shoe.connect(seq=2)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    data = json.dumps(body).encode()
    shoe.pump(lambda f: shoe.beat_challenges)  # signed over the bridge's heartbeat challenge
    shoe.send("B", 3, shoe.signed("B", 3, shoe.beat_challenges[-1], data))
    until(lambda: rig.bridge.stats["invalid"] >= 1)
    _alive(rig)
    shoe.event(2)
    shoe.pump(lambda f: shoe.acked() == 2)
    assert _seqs(tmp_path / "b.db") == [1, 2]


def test_a_store_holding_a_row_the_schema_rejects_still_starts_and_names_the_row(shoe, tmp_path):
    """Rows written by an older bridge, or by hand: the restarted bridge's
    console and `shoe recall` skip them, say which, and carry on."""
    import subprocess
    import sys

    from host_tools.bridge.command import Runner
    from host_tools.bridge.console import TableView

    path = tmp_path / "s.db"
    with db.Store(path) as store:
        store.append(SHOE, 1, '{"type":"bets","round":1}')
        store.append(SHOE, 2, CARD_NO_CARD)
        store.append(SHOE, 3, '{"type":"bets","round":2}')
    con = sqlite3.connect(str(path))  # what no current code path can store
    con.execute("INSERT INTO events VALUES (?, 4, NULL, NULL, ?, NULL, 0, '', '')",
                (SHOE, '{"type":{},"round":%d}' % 2 ** 64))
    con.execute("INSERT INTO events VALUES (?, 5, NULL, NULL, ?, NULL, 0, '', '')", (SHOE, "[" * 5000))
    con.execute("UPDATE shoes SET last_seq = 5 WHERE shoe_id = ?", (SHOE,))
    con.commit()
    con.close()
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "recall", "--db", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "seq 2" in r.stderr and "seq 4" in r.stderr and "seq 5" in r.stderr
    with db.Store(path) as store:
        runner = Runner(Bridge(store, shoe.path, KEY), TableView())
        try:
            runner.bridge.poll(0.2)
            shoe.hello(seq=5, acked=5)
            end = time.monotonic() + 5
            while runner.bridge.hello is None and time.monotonic() < end:
                runner.bridge.poll(0.05)
            runner.drain()
        finally:
            runner.bridge.close()
    alerts = " ".join(e["text"] for e in runner.view.alerts.values())
    assert "stored event seq 2" in alerts and "stored event seq 4" in alerts


# ------------------------------------------------------------------- fuzz

class _Sink:
    """The bridge's serial port, for the in-process fuzz: it keeps nothing."""

    def write(self, data):
        return len(data)

    def close(self):
        pass


NASTY = [None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63, -2 ** 63, 10 ** 30, 1e30, -0.0, 1.5,
         float("nan"), float("inf"), "", "x", "9H", "P1", "BURN", "\x1b[2J", "é" * 3, "0" * 32,
         [], [1], ["9H", "XX"], {}, {"A": 1}, {"9H": "1"}, [[[[]]]], "a" * 300]


def _mutate(rng, obj):
    obj = dict(obj)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        keys = list(obj)
        if roll < 0.55 and keys:
            obj[rng.choice(keys)] = rng.choice(NASTY)
        elif roll < 0.75 and keys:
            del obj[rng.choice(keys)]
        elif roll < 0.85:
            obj[rng.choice(["extra", "type", "source", "round", "card", "pos"])] = rng.choice(NASTY)
        else:
            obj["type"] = rng.choice(["card", "result", "shoe", "status", "error", "hello", "bets"])
    return obj


def _garble(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data) + 1)
        roll = rng.random()
        if roll < 0.4 and i < len(data):
            data[i] = rng.randrange(256)
        elif roll < 0.7:
            data[i:i] = bytes([rng.randrange(256)])
        else:
            del data[i:i + rng.randint(1, 8)]
    return bytes(data)


@pytest.mark.parametrize("frames", [4000, pytest.param(20000, marks=pytest.mark.slow)])
def test_fuzz_the_frame_path_in_process(tmp_path, frames):
    """4k frames (20k under ``pytest -m slow``): valid, schema-mutated and
    signed (so they reach the schema), byte-garbled, random and truncated; 0
    exceptions reach the bridge's last-resort guard and none escape it, at
    no more than 3 ms of this process's CPU a frame (CPU time, not the
    clock: a loaded machine stretches the clock, not the work)."""
    from host_tools.sim import dealer
    from host_tools import deal
    rng = random.Random(11)
    events = [json.loads(e) for e in deal.deal_bytes(
        ("\n".join(dealer.script(3, irregularity_rate=0.1)[:300]) + "\n").encode()).splitlines()]
    events += [{"type": "status", "source": "link", "round": 1, "phase": "dealing", "next": "P1",
                "player": [], "banker": [], "held": [], "left": 300, "settings": "", "seq": 9,
                "acked": 8, "counter": 0, "tilt": None},
               {"type": "error", "source": "link", "reason": "replayed", "message": "m"},
               {"type": "accepted", "source": "link", "command": "bets", "counter": 3}]
    fkey = auth.frames_key(KEY)
    path = tmp_path / "f.db"
    sent = 0
    started = time.process_time()
    with db.Store(path) as store:
        b = Bridge(store, "/dev/fuzz", KEY)
        b.ser = _Sink()
        b.ask_hello(force=True)

        def feed(kind, seq, payload, garble=False):
            out = bytearray(frame.MAX_FRAME + 64)
            payload = payload[:frame.MAX_PAYLOAD - 8]
            n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
            data = bytes(out[:n])
            if garble:
                data = _garble(rng, data)
            b.decoder.feed(data, len(data), b)

        def hello(body=None):
            stored = b._stored() or 0
            base = {"proto": proto.PROTO, "fw": "fuzz", "board": "emulator", "shoe": SHOE, "settings": "",
                    "seq": stored + 5, "acked": stored, "counter": b.counter or 0, "tilt": None,
                    "nonce": auth.new_nonce().decode(),
                    "chain": (store.shoe(SHOE) or {}).get("last_mac") or "0" * 32}
            body = body or base
            data = json.dumps(body).encode()
            shoe_id = body.get("shoe") if isinstance(body, dict) and isinstance(body.get("shoe"), str) else SHOE
            tag = host_frames.frame_mac(fkey, shoe_id, ord("H"), base["seq"], b.challenge or b"-", data)
            feed("H", base["seq"], data + b" " + tag)
            return base

        hello()
        assert b.hello is not None
        for i in range(frames):
            head = store.shoe(SHOE)
            seq = (head["last_seq"] or 0) + 1 if head and head["last_seq"] else 1
            prev = ((head or {}).get("last_mac") or "0" * 32).encode()
            roll = rng.random()
            if roll < 0.08:
                body = json.dumps(rng.choice(events), separators=(",", ":")).encode()
            elif roll < 0.55:
                body = json.dumps(_mutate(rng, rng.choice(events))).encode()
            elif roll < 0.62:
                body = rng.choice([b"[" * 900, b'{"type":"bets","round":1}\xff', b"1e999999",
                                   b"9" * 5000, b'"\\ud800"', b"", b"null"])
            else:
                body = None
            if body is not None:
                tag = host_frames.frame_mac(fkey, SHOE, ord("E"), seq, prev, body)
                feed("E", seq, body + b" " + tag, garble=rng.random() < 0.15)
            elif roll < 0.72:
                hello(_mutate(rng, {
                    "proto": proto.PROTO, "fw": "f", "board": "b", "shoe": SHOE, "settings": "", "seq": seq,
                    "acked": seq - 1, "counter": 0, "tilt": None, "nonce": "0" * 16,
                    "chain": prev.decode()}))
                if rng.random() < 0.5:
                    hello()
            elif roll < 0.82:
                beat = _mutate(rng, {"acked": seq - 1, "queued": rng.randint(0, 5), "t": 0})
                data = json.dumps(beat).encode()
                link = b.beat_challenge if b.beat_challenge and rng.random() < 0.8 else b"-"
                tag = host_frames.frame_mac(fkey, SHOE, ord("B"), seq, link, data)
                feed("B", seq, data + b" " + tag, garble=rng.random() < 0.2)
            elif roll < 0.92:
                junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
                b.decoder.feed(junk, len(junk), b)
            else:
                kind = rng.choice("HEBACXZ$")
                data = bytes(rng.randrange(32, 127) for _ in range(rng.randint(0, 120)))
                feed(kind, rng.randrange(10 ** 10), data, garble=rng.random() < 0.5)
            if b.hello is None or b.refuse:
                hello()
            sent += 1
        b.close()
        stats = dict(b.stats)
    cpu = time.process_time() - started
    assert sent == frames and stats["internal_errors"] == 0, stats
    assert stats["stored"] > frames // 40 and stats["invalid"] > frames // 4, stats
    assert cpu < frames * 0.003, cpu


# ------------------------------------------------- recording state that cannot lie

import os  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from host_tools.bridge import control, line  # noqa: E402
from host_tools.protocol import hostlink  # noqa: E402


def _cli(*argv, timeout=30):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "bridge"] + list(argv),
                          capture_output=True, text=True, timeout=timeout)


def _start(port, path, key_file=None, *extra):
    argv = [sys.executable, "-m", "host_tools.cli", "bridge", "--port", port, "--db", str(path),
            "--no-console"] + (["--key-file", str(key_file)] if key_file else []) + list(extra)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _key_file(tmp_path, key=KEY, name="k.bin"):
    f = tmp_path / name
    f.write_bytes(key)
    f.chmod(0o600)
    return f


def _check(path):
    r = _cli("--db", str(path), "--check")
    assert r.stdout.count("\n") == 1 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    return r.returncode, r.stdout.strip()


def _recording(path, timeout=60.0):
    """`--check` until it says RECORDING (bounded): the bridge records while
    a heartbeat bound to its current or previous challenge (1-2 s) has come
    within 3 s, and on a loaded machine the fake shoe's answer can come later
    than that for a while. That window is the bridge's defence against a
    played-back heartbeat (test_link_v2_host.py), so the test waits, and the
    bridge keeps it."""
    end = time.monotonic() + timeout
    while True:
        code, line = _check(path)
        if code == 0 or time.monotonic() > end:
            return code, line


def _stop(proc):
    proc.terminate()
    try:
        return proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def test_check_says_recording_only_while_it_records(shoe, tmp_path):
    path = tmp_path / "s.db"
    assert _check(path) == (exits.EXIT_NO_BRIDGE, "NOT RECORDING: no bridge is running on %s (nothing answers at %s: "
                               "No such file or directory)" % (path, control.socket_path(path)))
    proc = _start(shoe.path, path, _key_file(tmp_path), "--table", "Baccarat 7")
    alive = None
    try:
        shoe.pump(lambda f: shoe.challenges, timeout=120, proc=proc)
        code, line = _check(path)
        # No hello yet: waiting for it, or, when the check itself took more
        # than the bridge's 3 s of silence to start (a loaded machine), the
        # silent line already given up on. Either is the bridge's true answer.
        assert code == 1 and re.match(r"NOT RECORDING: no link to the shoe \((waiting for the shoe's hello"
                                      r"|lost: no frame from the shoe for [0-9.]+ s)", line), line
        # As the firmware does, every hello request gets a hello: the check
        # above can outlast the bridge's silence, and its next request can
        # cross this hello on the line (the bridge then waits for an answer
        # over the new challenge).
        end = time.monotonic() + 120
        while True:
            shoe.hello(seq=2)
            asked = len(shoe.challenges)
            shoe.event(1)
            shoe.event(2)
            shoe.pump(lambda f: shoe.acked() == 2 or len(shoe.challenges) > asked, timeout=120)
            if shoe.acked() == 2:
                break
            assert time.monotonic() < end, "no ack of seq 2 after answering %d hello requests" % asked
        alive = shoe.keep_alive()   # a live shoe beats while the commands below run
        code, line = _recording(path)
        assert code == 0 and line == "RECORDING: shoe T9 on %s, stored through seq 2" % shoe.path, line
        _recording(path)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            run = pool.submit(_cli, "--db", str(path), "--send", "status")
            shoe.answer_next_command()
            r = run.result()
        assert r.returncode == 0 and r.stdout.startswith(
            "ok sent status as command 1; accepted by the shoe; RECORDING: shoe T9"), r.stdout
        _recording(path)
        r = _cli("--db", str(path), "--send", "state")
        state = json.loads(r.stdout[3:])
        assert state["recording"] is True and state["line"].startswith("RECORDING"), state
        r = _cli("--db", str(path), "--send", "dance")
        assert r.returncode == 2 and r.stdout.startswith("error unknown request")
        # a second bridge on the same store: one line, exit 7 (busy), and the first
        # one's socket is still there and still answers
        second = _cli("--port", shoe.path, "--db", str(path), "--no-console")
        assert second.returncode == exits.EXIT_BUSY and second.stderr.count("\n") == 1, second.stderr
        assert second.stderr.startswith("bridge: another bridge (pid %d on %s) owns %s" % (
            proc.pid, shoe.path, control.socket_path(path)))
        assert _check(path)[0] == 0
        # a second bridge on the same port, with another store: the port is exclusive
        other = _cli("--port", shoe.path, "--db", str(tmp_path / "other.db"), "--no-console",
                     "--key-file", str(_key_file(tmp_path)))
        assert other.returncode == exits.EXIT_BUSY and other.stderr == (
            "bridge: another program holds %s (another bridge?): not starting\n" % shoe.path)
    finally:
        if alive is not None:
            alive()
        out, err = _stop(proc)
    assert "Traceback" not in err
    assert not os.path.exists(control.socket_path(path))
    log = (tmp_path / "s.db.log").read_text()
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO shoe.bridge: bridge started: pid %d" % proc.pid, log)
    assert "RECORDING: shoe T9" in log and "link up" in log


def test_without_a_key_it_says_plainly_that_nothing_is_acknowledged(shoe, tmp_path):
    path = tmp_path / "s.db"
    proc = _start(shoe.path, path)
    try:
        shoe.pump(lambda f: shoe.challenges, timeout=120, proc=proc)
        shoe.hello(seq=1)
        shoe.event(1)
        time.sleep(0.3)
        code, line = _check(path)
        assert code == 1 and line == "NOT RECORDING: " + hostlink.NO_KEY
        assert "nothing is acknowledged, so the shoe holds its events" in line
        r = _cli("--db", str(path), "--send", "status")
        assert r.returncode == 1 and r.stdout.startswith("error no key") and "NOT RECORDING: no key" in r.stdout
    finally:
        _out, err = _stop(proc)
    assert "NOT RECORDING: no key" in err and "Traceback" not in err


def test_wrong_key_then_the_right_key_recovers_at_once(tmp_path):
    path = str(tmp_path / "b.db")
    shoe = FakeShoe()
    try:
        wrong = ThreadedBridge(path, shoe.path, OTHER_KEY)
        shoe.wait_challenge()
        shoe.hello(seq=1)
        until(lambda: wrong.bridge.refuse)
        ok, why = wrong.bridge.recording()
        assert not ok and "wrong --key-file" in why
        wrong.close()
        n = len(shoe.challenges)
        right = ThreadedBridge(path, shoe.path, KEY)
        try:
            shoe.wait_challenge(after=n)
            from host_tools.qa.soak.fuzz import InputClock
            clock = InputClock()   # time this process had, not what other programs took
            clock.start()
            shoe.hello(seq=1)
            shoe.event(1)
            shoe.pump(lambda f: shoe.acked() == 1)
            assert clock.had() < 1.0
            assert right.bridge.recording() == (True, "shoe T9 on %s, stored through seq 1" % shoe.path)
        finally:
            right.close()
    finally:
        shoe.close()


def test_a_store_behind_the_shoe_is_not_recording(shoe, rig, monkeypatch):
    monkeypatch.setattr(hostlink, "BEHIND_S", 0.5)
    shoe.connect(seq=5)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    assert rig.bridge.recording()[0]
    shoe.event(3)  # 2 never arrives: the shoe holds 4 unacked events
    end = time.monotonic() + 1.2
    while time.monotonic() < end:
        shoe.read()  # the shoe answers each heartbeat challenge; its seq is 5
        shoe.send("B", 5, shoe.beat_payload(5, 1, queued=4))
        time.sleep(0.2)
    ok, why = rig.bridge.recording()
    assert not ok and why.startswith("the store is behind the shoe: the shoe holds 4 unacknowledged "
                                     "events and the store has not moved for")
    shoe.event(2)
    shoe.event(3)
    shoe.pump(lambda f: shoe.acked() == 3)
    assert rig.bridge.recording()[0]


def test_a_rolled_back_shoe_is_not_recording(shoe, rig):
    shoe.connect(seq=3)
    for seq in (1, 2, 3):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 3)
    rig.bridge.ask_hello(force=True)
    shoe.wait_challenge(after=len(shoe.challenges))
    shoe.hello(seq=1, acked=0)
    until(lambda: rig.bridge.refuse)
    ok, why = rig.bridge.recording()
    assert not ok and why.startswith("shoe T9 rolled back: its last seq is 1 but the store holds seq 3")


def test_one_bridge_per_shoe_in_a_store(tmp_path):
    first, second = FakeShoe(), FakeShoe()
    path = str(tmp_path / "b.db")
    a = ThreadedBridge(path, first.path, KEY)
    b = ThreadedBridge(path, second.path, KEY)
    try:
        first.connect(seq=1)
        second.wait_challenge()
        second.hello(seq=1)
        until(lambda: b.bridge.refuse)
        ok, why = b.bridge.recording()
        assert not ok and why == ("another bridge (pid %d on %s) records shoe T9 into this store: this "
                                  "one records nothing" % (os.getpid(), first.path))
        assert a.bridge.recording()[0]
    finally:
        a.close()
        b.close()
        first.close()
        second.close()


# ----------------------------------------------------------- control socket

def test_a_dribbling_client_cannot_hold_the_bridge(shoe, tmp_path):
    path = tmp_path / "s.db"
    proc = _start(shoe.path, path, _key_file(tmp_path))
    try:
        shoe.pump(lambda f: shoe.challenges, timeout=120, proc=proc)
        shoe.hello(seq=0)
        shoe.pump(lambda f: shoe.acks())
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(control.socket_path(path))
        reply = b""
        for ch in b"state":
            try:
                s.send(bytes([ch]))
            except OSError:
                break
            # Others are served meanwhile: a request on a second connection
            # (in process: a `shoe bridge --send` would time its own start-up,
            # many seconds on a loaded machine) is answered.
            r = control.request(path, "state", timeout=60)
            assert r.startswith("ok "), r
            time.sleep(0.8)
        s.settimeout(3)
        try:
            reply = s.recv(200)
        except OSError:
            pass
        s.close()
        # The bridge cut the dribbler at its own deadline (its reply says so),
        # and the link to the shoe went on: still heartbeating.
        assert reply.startswith(b"error request not complete within 1.0 s"), reply
        n = len(shoe.frames)
        shoe.pump(lambda f: len([x for x in f[n:] if x[0] in "AB"]) >= 2)
    finally:
        _stop(proc)


def test_a_peer_with_another_uid_is_refused(tmp_path, monkeypatch):
    calls = []
    server = control.ControlServer(str(tmp_path / "x.ctl"), lambda line: calls.append(line) or "ok")
    try:
        monkeypatch.setattr(control.os, "getuid", lambda: os.geteuid() + 1)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(str(tmp_path / "x.ctl"))
        c.send(b"state\n")
        server.serve_ready()
        c.settimeout(2)
        assert c.recv(200).startswith(b"error refused: uid %d is not the bridge's uid" % os.geteuid())
        assert calls == []
    finally:
        server.close()


def test_a_key_file_others_can_read_is_refused_in_one_line(tmp_path):
    key_file = tmp_path / "k.bin"
    key_file.write_bytes(KEY)
    key_file.chmod(0o644)
    r = _cli("--port", "/dev/null", "--db", str(tmp_path / "s.db"), "--key-file", str(key_file))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "chmod 600" in r.stderr, r.stderr
    r = _cli("--port", "/dev/null", "--db", str(tmp_path / "nodir" / "s.db"))
    assert r.returncode == 5 and r.stderr == "bridge: cannot use --db %s: the directory %s does not exist\n" % (
        tmp_path / "nodir" / "s.db", tmp_path / "nodir")
