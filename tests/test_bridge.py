"""The bridge against a shoe played by the test over a real pty, speaking
frames built with the firmware's own codec (firmware/link): handshake,
ordered exactly-once storage, cumulative MAC'd acks only after commit,
duplicate/gap/corruption handling, signed commands and reconnection."""

import json
import os
import subprocess
import sys
import time
import tty

import pytest

from host_tools import vm
from host_tools.bridge import control
from host_tools.bridge.rig import ThreadedBridge
from host_tools.store import db

vm.use_firmware()
from link import commands, frame  # noqa: E402

KEY = bytes(range(32))
SHOE = "T9"


class FakeShoe:
    """The shoe's side of the link, played by the test."""

    def __init__(self):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        tty.setraw(self.master)
        self.path = os.ttyname(self.slave)
        self.decoder = frame.Decoder()
        self.frames = []

    def send(self, kind, seq, payload):
        out = bytearray(frame.MAX_FRAME)
        n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
        os.write(self.master, bytes(out[:n]))

    def hello(self, seq=0, acked=0, counter=0, tilt=None):
        self.send("H", seq, json.dumps({"proto": 1, "fw": "test", "board": "emulator", "shoe": SHOE,
                                        "settings": "", "seq": seq, "acked": acked,
                                        "counter": counter, "tilt": tilt}).encode())

    def event(self, seq, text=None):
        self.send("E", seq, (text or '{"type":"bets","round":%d}' % seq).encode())

    # frame.Decoder handler
    def on_frame(self, dec):
        self.frames.append((chr(dec.kind), dec.seq, bytes(dec.buf[dec.pstart:dec.pend])))

    def on_bad(self, dec, code, message):
        raise AssertionError("the bridge sent a bad frame: %s" % message)

    def pump(self, until, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                data = os.read(self.master, 4096)
            except BlockingIOError:
                data = b""
            if data:
                self.decoder.feed(data, len(data), self)
            found = until(self.frames)
            if found:
                return found
            time.sleep(0.01)
        raise AssertionError("timed out; frames from the bridge: %r" % self.frames[-5:])

    def acked(self):
        """The highest ack whose MAC verifies under the shoe's key."""
        best = 0
        for kind, seq, payload in self.frames:
            if kind == "A":
                commands.verify(KEY, SHOE, "A", seq, payload)  # raises on a bad MAC
                best = max(best, seq)
        return best

    def close(self):
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def shoe():
    s = FakeShoe()
    os.set_blocking(s.master, False)
    yield s
    s.close()


@pytest.fixture
def bridge(shoe, tmp_path):
    r = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    yield r.bridge
    r.close()


def _stored(path):
    with db.Store(path) as s:
        return [(seq, text) for _sh, seq, text, _p, _h in s.events(SHOE)]


def test_handshake_store_then_ack(shoe, bridge, tmp_path):
    shoe.pump(lambda f: any(k == "H" for k, _s, _p in f))  # the bridge asks for a hello
    shoe.hello(seq=5)
    for seq in range(1, 6):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 5)
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1, 2, 3, 4, 5]
    info = db.Store(tmp_path / "b.db").shoe(SHOE)
    assert json.loads(info["settings"])["board"] == "emulator" and info["key_id"]


def test_duplicates_gaps_and_corruption_lose_nothing(shoe, bridge, tmp_path):
    shoe.pump(lambda f: f)
    shoe.hello(seq=3)
    for seq in (1, 2, 3, 2, 3, 1):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 3)
    shoe.event(5)  # 4 was "lost": must not be stored past the gap
    # a frame with one flipped byte: CRC must reject it
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord("E"), 4, b'{"type":"cover"}', 0, 16)
    out[8] ^= 0x01
    os.write(shoe.master, bytes(out[:n]))
    time.sleep(0.3)
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1, 2, 3]
    shoe.event(4, '{"type":"cover"}')  # the go-back-N resend
    shoe.event(5)
    shoe.pump(lambda f: shoe.acked() == 5)
    rows = _stored(tmp_path / "b.db")
    assert [s for s, _t in rows] == [1, 2, 3, 4, 5] and rows[3][1] == '{"type":"cover"}'
    kinds = [k for _s, _t, k, _d in db.Store(tmp_path / "b.db").link_log(SHOE)]
    assert "gap" in kinds and "bad_crc" in kinds
    assert bridge.stats["duplicates"] == 3


def test_a_restarted_bridge_acks_what_it_already_stored(shoe, tmp_path):
    path = tmp_path / "b.db"
    with db.Store(path) as store:
        for seq in range(1, 8):
            store.append(SHOE, seq, '{"type":"bets","round":%d}' % seq)
    r = ThreadedBridge(str(path), shoe.path, KEY)
    try:
        shoe.pump(lambda f: f)
        shoe.hello(seq=7, acked=4)  # the old bridge died before acking 5..7
        shoe.pump(lambda f: shoe.acked() == 7)
    finally:
        r.close()


def test_refuses_an_unknown_protocol_and_a_store_behind_the_shoe(shoe, bridge, tmp_path):
    shoe.pump(lambda f: f)
    shoe.send("H", 9, json.dumps({"proto": 1, "shoe": SHOE, "seq": 9, "acked": 0,
                                  "counter": 0}).encode())
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    shoe.send("H", 9, json.dumps({"proto": 1, "shoe": SHOE, "seq": 9, "acked": 6,
                                  "counter": 0}).encode())
    shoe.event(7)
    time.sleep(1.2)
    assert bridge.refuse and "went to another store" in bridge.refuse
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1]
    shoe.send("H", 9, json.dumps({"proto": 2, "shoe": SHOE, "seq": 9, "acked": 1}).encode())
    time.sleep(0.3)
    assert "protocol 2" in bridge.refuse


def test_signed_commands_from_the_control_socket(shoe, tmp_path):
    path = tmp_path / "b.db"
    key_file = tmp_path / "shoe_key.bin"
    key_file.write_bytes(KEY)
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "bridge", "--port", shoe.path,
                             "--db", str(path), "--key-file", str(key_file), "--no-console"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        shoe.pump(lambda f: f, timeout=10)
        shoe.hello(seq=0, counter=41)
        shoe.pump(lambda f: any(k in ("A", "B") for k, _s, _p in f))

        def send(line):
            r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bridge", "--db", str(path),
                                "--send", line], capture_output=True, text=True, timeout=20)
            return r.stdout.strip()

        assert send("bets").startswith("ok sent bets as command 42")
        assert send("new_shoe decks=6 designation=ez").startswith("ok sent shoe as command 43")
        assert send("time").startswith("ok sent time as command 44")
        assert send("dance").startswith("error unknown request")
        assert send("new_shoe decks").startswith("error shoe: expected key=value")
        state = json.loads(send("state")[3:])
        assert state["shoe"] == SHOE and state["link"] == "up"
        cmds = shoe.pump(lambda f: [x for x in f if x[0] == "C"] if len(
            [x for x in f if x[0] == "C"]) == 3 else None)
        bodies = [commands.verify(KEY, SHOE, "C", seq, p).decode() for _k, seq, p in cmds]
        assert [c[1] for c in cmds] == [42, 43, 44]
        assert bodies[:2] == ["bets", "shoe decks=6 designation=ez"]
        assert bodies[2].startswith("time t=") and abs(int(bodies[2][7:]) - time.time()) < 30
        # A frame signed for this shoe verifies under no other shoe id.
        with pytest.raises(commands.Rejected):
            commands.verify(KEY, "T10", "C", cmds[0][1], cmds[0][2])
    finally:
        proc.terminate()
        proc.wait(10)
    assert not os.path.exists(control.socket_path(path))


def test_silent_link_is_lost_then_resumed(shoe, bridge, tmp_path):
    shoe.pump(lambda f: f)
    shoe.hello(seq=1)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    n = len(shoe.frames)
    # silence from the shoe: after 3 s the bridge declares the link lost,
    # reopens the port and asks for a hello again
    shoe.pump(lambda f: any(k == "H" for k, _s, _p in f[n:]), timeout=8)
    shoe.hello(seq=2, acked=1)
    shoe.event(2)
    shoe.pump(lambda f: shoe.acked() == 2)
    kinds = [k for _s, _t, k, _d in db.Store(tmp_path / "b.db").link_log()]
    assert "disconnect" in kinds and kinds.count("connect") >= 2


def test_port_vanishes_and_comes_back_under_the_same_name(tmp_path):
    """A USB shoe unplugged and plugged in again: the device node disappears
    and returns (here a symlink re-pointed to a new pty, as udev does)."""
    link = tmp_path / "ttyShoe"
    first = FakeShoe()
    os.set_blocking(first.master, False)
    link.symlink_to(first.path)
    r = ThreadedBridge(str(tmp_path / "b.db"), str(link), KEY)
    try:
        first.pump(lambda f: f)
        first.hello(seq=2)
        first.event(1)
        first.event(2)
        first.pump(lambda f: first.acked() == 2)
        first.close()
        link.unlink()
        time.sleep(1.0)  # unplugged: the bridge keeps trying
        second = FakeShoe()
        os.set_blocking(second.master, False)
        link.symlink_to(second.path)
        second.pump(lambda f: any(k == "H" for k, _s, _p in f), timeout=8)
        second.hello(seq=3, acked=2)
        second.event(2)  # resent from before: a duplicate
        second.event(3)
        second.pump(lambda f: second.acked() == 3)
        second.close()
    finally:
        r.close()
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1, 2, 3]
    kinds = [k for _s, _t, k, _d in db.Store(tmp_path / "b.db").link_log()]
    assert "disconnect" in kinds and "reconnecting" in kinds
