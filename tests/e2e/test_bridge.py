"""The bridge against a shoe played by the test over a real pty, speaking
link v2 frames built with the firmware's own codec and MACs (firmware/link):
handshake, ordered exactly-once storage, cumulative MAC'd acks only after
commit, duplicate/gap/corruption handling, signed commands and reconnection.
The forgery, rollback and verification cases are in test_bridge_link.py;
the fake shoe both play is tests/support/fakeshoe.py."""

import concurrent.futures
import json
import os
import select
import subprocess
import sys
import time

import pytest

from host_tools.bridge import control
from host_tools.sim.rigs.bridge import ThreadedBridge
from host_tools.store import db
from support.fakeshoe import FKEY, KEY, SHOE, FakeShoe  # noqa: F401

COVER = '{"type":"cover","round":3,"left":14,"rule":"cut card"}'

from firmware.link import auth, frame, host_frames, proto


@pytest.fixture
def bridge(shoe, tmp_path):
    r = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    yield r.bridge
    r.close()


def _stored(path):
    with db.Store(path) as s:
        return [(seq, text) for _sh, seq, text, _p, _h in s.events(SHOE)]


def test_handshake_store_then_ack(shoe, bridge, tmp_path):
    shoe.connect(seq=5)
    for seq in range(1, 6):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 5)
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1, 2, 3, 4, 5]
    info = db.Store(tmp_path / "b.db").shoe(SHOE)
    assert json.loads(info["settings"])["board"] == "emulator" and info["key_id"]


def test_duplicates_gaps_and_corruption_lose_nothing(shoe, bridge, tmp_path):
    shoe.connect(seq=3)
    for seq in (1, 2, 3, 2, 3, 1):
        shoe.event(seq)
    shoe.pump(lambda f: shoe.acked() == 3)
    four = shoe.event_payload(4, COVER)
    shoe.event(5)  # 4 was "lost": must not be stored past the gap
    # 4 with one flipped byte: the CRC must reject it
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord("E"), 4, four, 0, len(four))
    out[8] ^= 0x01
    os.write(shoe.master, bytes(out[:n]))
    time.sleep(0.3)
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1, 2, 3]
    shoe.send("E", 4, four)  # the go-back-N resend
    shoe.event(5)
    shoe.pump(lambda f: shoe.acked() == 5)
    rows = _stored(tmp_path / "b.db")
    assert [s for s, _t in rows] == [1, 2, 3, 4, 5] and rows[3][1] == COVER
    kinds = [k for _s, _t, k, _d in db.Store(tmp_path / "b.db").link_log(SHOE)]
    assert "gap" in kinds and "bad_crc" in kinds
    assert bridge.stats["duplicates"] == 3


def test_a_restarted_bridge_acks_what_it_already_stored(shoe, tmp_path):
    path = tmp_path / "b.db"
    prev = auth.ZERO_MAC
    with db.Store(path) as store:
        for seq in range(1, 8):
            text = b'{"type":"bets","round":%d}' % seq
            prev = shoe.tags[seq] = host_frames.frame_mac(FKEY, SHOE, ord("E"), seq, prev, text)
            store.append(SHOE, seq, text, mac=prev, first_seq=1, first_prev=auth.ZERO_MAC)
    r = ThreadedBridge(str(path), shoe.path, KEY)
    try:
        shoe.wait_challenge()
        shoe.hello(seq=7, acked=4)  # the old bridge died before acking 5..7
        shoe.pump(lambda f: shoe.acked() == 7)
        shoe.event(8)
        shoe.pump(lambda f: shoe.acked() == 8)
    finally:
        r.close()


def test_refuses_a_store_behind_the_shoe(shoe, bridge, tmp_path):
    shoe.connect(seq=9)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    bridge.ask_hello(force=True)
    shoe.wait_challenge(after=len(shoe.challenges))
    shoe.hello(seq=9, acked=6)  # 2..6 were acked by a bridge on another store
    shoe.event(7)
    time.sleep(0.5)
    assert bridge.refuse and "went to another store" in bridge.refuse
    assert [s for s, _t in _stored(tmp_path / "b.db")] == [1]


def test_signed_commands_from_the_control_socket(shoe, tmp_path):
    path = tmp_path / "b.db"
    key_file = tmp_path / "shoe_key.bin"
    key_file.write_bytes(KEY)
    key_file.chmod(0o600)
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "bridge", "--port", shoe.path,
                             "--db", str(path), "--key-file", str(key_file), "--no-console"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    alive = None
    try:
        shoe.pump(lambda f: shoe.challenges, timeout=120, proc=proc)
        shoe.hello(seq=0, counter=41)
        shoe.pump(lambda f: any(k == "A" for k, _s, _p in f))
        alive = shoe.keep_alive()   # a live shoe beats while the commands below run

        def send(line, answer=False, refusal=None):
            """`--send LINE`, the shoe answering the command it signs."""
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                run = pool.submit(subprocess.run, [sys.executable, "-m", "host_tools.cli", "bridge", "--db",
                                                   str(path), "--send", line],
                                  capture_output=True, text=True, timeout=120)
                if answer:
                    shoe.answer_next_command(refusal, timeout=120)
                r = run.result()
            return r.returncode, r.stdout.strip()

        assert send("bets", True) == (0, "ok sent bets as command 42; accepted by the shoe")
        code, out = send("new_shoe decks=6 designation=ez", True, "stopped until clear_stop")
        # refused: the shoe's reason, and a non-zero exit
        assert (code, out) == (1, "error sent shoe as command 43; refused by the shoe (wrong_state): "
                                  "stopped until clear_stop")
        assert send("time", True)[1].startswith("ok sent time as command 44; accepted by the shoe")
        send = (lambda send: lambda line: send(line)[1])(send)
        assert send("dance").startswith("error unknown request")
        assert send("new_shoe decks").startswith("error shoe: ")
        state = json.loads(send("state")[3:])
        assert state["shoe"] == SHOE and state["link"] == "up"
        cmds = shoe.pump(lambda f: [x for x in f if x[0] == "C"] if len(
            [x for x in f if x[0] == "C"]) == 3 else None)
        signed = [auth.verify_host(KEY, SHOE, shoe.nonce, ord("C"), seq, p).decode()
                  for _k, seq, p in cmds]
        assert all(" @" in b for b in signed)  # each with its deadline on the shoe's clock
        bodies = [b.rsplit(" @", 1)[0] for b in signed]
        assert [c[1] for c in cmds] == [42, 43, 44]
        assert bodies[:2] == ["bets", "shoe decks=6 designation=ez"]
        assert bodies[2].startswith("time t=") and abs(int(bodies[2][7:]) - time.time()) < 30
        # A frame signed for this shoe and connection verifies under no other
        # shoe id, and under no other hello's nonce.
        with pytest.raises(proto.Rejected):
            auth.verify_host(KEY, "T10", shoe.nonce, ord("C"), cmds[0][1], cmds[0][2])
        with pytest.raises(proto.Rejected):
            auth.verify_host(KEY, SHOE, auth.new_nonce(), ord("C"), cmds[0][1], cmds[0][2])
    finally:
        if alive is not None:
            alive()
        proc.terminate()
        proc.wait(10)
    assert not os.path.exists(control.socket_path(path))


def test_silent_link_is_lost_then_resumed(shoe, bridge, tmp_path):
    shoe.connect(seq=1)
    shoe.event(1)
    shoe.pump(lambda f: shoe.acked() == 1)
    n = len(shoe.challenges)
    # silence from the shoe (not even a heartbeat): after 3 s the bridge
    # declares the link lost, reopens the port and asks for a hello again,
    # with a new challenge
    shoe.answer_beats = False
    shoe.pump(lambda f: len(shoe.challenges) > n)
    shoe.answer_beats = True
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
    link.symlink_to(first.path)
    r = ThreadedBridge(str(tmp_path / "b.db"), str(link), KEY)
    try:
        first.wait_challenge()
        first.hello(seq=2)
        first.event(1)
        first.event(2)
        first.pump(lambda f: first.acked() == 2)
        first.close()
        link.unlink()
        time.sleep(1.0)  # unplugged: the bridge keeps trying
        second = FakeShoe()
        second.tags = first.tags  # the same shoe, plugged in again
        link.symlink_to(second.path)
        second.pump(lambda f: second.challenges)
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


def _pty_numbered(path, tries=256):
    """A new pty whose slave is ``path`` (the kernel gives out the lowest free
    number, so opening ptys until that one comes takes it), or None when
    another program took it first. The others opened on the way are closed."""
    from host_tools.sim import ptys
    held = []
    try:
        for _ in range(tries):
            master, slave, got = ptys.open_raw()
            if got == path:
                return master, slave
            held.append((master, slave))
        return None
    finally:
        for fds in held:
            ptys.close(*fds)


def test_a_pty_that_hung_up_is_not_opened_again_when_another_program_gets_its_number(tmp_path):
    """The bridge's pseudo-terminal hangs up (its emulator is gone) and the
    kernel gives its number to the next pty anyone opens: here a bystander
    with a line waiting in its input. The bridge keeps retrying the name
    (a USB shoe comes back under its name), but a pty never comes back:
    before, its next try opened the bystander's terminal, flushed that
    line, and wrote a hello request into it (seen in a suite as link frames
    in another test's tmux pane, and as a dealer line the emulated shoe
    never got)."""
    from host_tools.bridge.line import REOPEN_S
    from host_tools.sim import ptys
    key_file = tmp_path / "shoe_key.bin"
    key_file.write_bytes(KEY)
    key_file.chmod(0o600)
    for _attempt in range(5):   # another program may take the number first: then again
        master, slave, path = ptys.open_raw()
        db_path = tmp_path / ("b%d.db" % _attempt)
        proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "bridge", "--port", path,
                                 "--db", str(db_path), "--key-file", str(key_file), "--no-console"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bystander = None
        try:
            got, end = b"", time.monotonic() + 120
            while b"$H" not in got and time.monotonic() < end and proc.poll() is None:
                if select.select([master], [], [], 0.2)[0]:
                    got += os.read(master, 4096)   # the bridge opened it and asked for a hello
            assert b"$H" in got, got
            ptys.close(master, slave)    # the emulator is gone: a hang-up

            def state():
                reply = subprocess.run([sys.executable, "-m", "host_tools.cli", "bridge", "--db", str(db_path),
                                        "--send", "state"], capture_output=True, text=True, timeout=120).stdout
                return json.loads(reply[3:]) if reply.startswith("ok ") else {}
            now, end = state(), time.monotonic() + 60
            while now.get("link") in (None, "up") and time.monotonic() < end:
                now = state()
            assert now.get("link") not in (None, "up"), now   # it saw the hang-up
            bystander = _pty_numbered(path)
            if bystander is None:
                continue
            b_master, b_slave = bystander
            os.write(b_master, b"a line for the bystander\n")
            time.sleep(4 * REOPEN_S)   # the bridge retries the name every REOPEN_S
            assert not select.select([b_master], [], [], 0)[0], os.read(b_master, 4096)
            assert os.read(b_slave, 4096) == b"a line for the bystander\n"
            assert "hung up, and a pseudo-terminal never comes back" in state().get("reason", "")
            return
        finally:
            if bystander is not None:
                ptys.close(*bystander)
            proc.terminate()
            proc.wait(10)
    pytest.fail("five times another program took the number of the pty that hung up before this test could")
