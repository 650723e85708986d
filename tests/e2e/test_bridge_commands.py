"""Pit commands through `shoe bridge` to the firmware in the MicroPython VM:
signed with the shoe's key, counted past restarts of the bridge, and a bridge
holding the wrong key is refused without disturbing the shoe's state."""

import json
import subprocess
import sys
import time

import pytest

from host_tools.sim.emulate import Emulator
from host_tools import exits
from host_tools.store import db  # noqa: F401
from support.bridgecli import send as _send, start_bridge as _bridge, stored_events as _events  # noqa: F401
from support.bridgecli import WAIT_S as _WAIT_S, wait_event as _wait_event, wait_up as _wait_up
from support import journalring
from support.waits import until


@pytest.fixture
def table(tmp_path):
    emu = Emulator(str(tmp_path / "flash"), "CMD1")
    emu.start()
    path = tmp_path / "s.db"
    procs = []

    def start(key_file=emu.key_path):
        p = _bridge(emu.host_path, path, key_file)
        procs.append(p)
        return p
    yield emu, path, start
    for p in procs:
        p.terminate()
        p.wait(10)
    emu.close()


def test_commands_are_signed_and_counted_across_bridge_restarts(table):
    emu, path, start = table
    bridge = start()
    _wait_up(path)
    assert _send(path, "new_shoe decks=6 designation=ez exposed=burn").startswith("ok sent shoe")
    shoe = _wait_event(path, "CMD1", lambda e: e["type"] == "shoe")[0]
    assert (shoe["decks"], shoe["designation"], shoe["exposed"]) == (6, "ez", "burn")
    for line in ("2C", "4S", "5S"):  # the burn: 2C and two more
        emu.deal(line)
    _wait_event(path, "CMD1", lambda e: e["type"] == "card" and e["card"] == "5S")
    assert _send(path, "bets").startswith("ok")
    _wait_event(path, "CMD1", lambda e: e["type"] == "bets" and e["round"] == 1)
    assert _send(path, "status").startswith("ok")
    status = _wait_event(path, "CMD1", lambda e: e["type"] == "status")[0]
    assert status["next"] == "P1" and status["left"] == 6 * 52 - 3
    accepted = [e["counter"] for e in _events(path, "CMD1") if e["type"] == "accepted"]
    assert accepted == [1, 2, 3]
    bridge.terminate()
    bridge.wait(10)
    start()  # a new bridge learns the counter from the shoe's hello
    _wait_up(path)
    assert _send(path, "time").startswith("ok sent time as command 4")
    t = _wait_event(path, "CMD1", lambda e: e["type"] == "time")[0]
    assert abs(t["t"] - time.time()) < 60


def test_a_bridge_with_the_wrong_key_is_refused_and_changes_nothing(table, tmp_path):
    """Under another key no hello verifies (link v2): the bridge believes
    nothing the line says, stores nothing, acks and commands nothing, and its
    state says why."""
    emu, path, start = table
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(bytes(32))
    wrong.chmod(0o600)
    start(wrong)
    end = time.monotonic() + _WAIT_S
    state = {}
    while time.monotonic() < end and "wrong --key-file" not in (state.get("refused") or ""):
        time.sleep(0.2)
        reply = _send(path, "state")
        state = json.loads(reply[3:]) if reply.startswith("ok ") else {}
    assert "wrong --key-file" in (state.get("refused") or ""), state
    assert state["link"] != "up" and state["shoe"] is None and not state["stored"]
    assert _send(path, "new_shoe decks=4").startswith("error")
    emu.deal("shoe decks=8")
    time.sleep(1.5)
    assert _events(path, "CMD1") == []


def test_a_corrupt_journal_tilts_the_shoe_and_the_bridge_reports_it(table):
    emu, path, start = table
    start()
    _wait_up(path)
    for line in ("shoe decks=8", "2C", "4S", "5S", "bets", "9H", "2C"):
        emu.deal(line)
    _wait_event(path, "CMD1", lambda e: e["type"] == "card" and e.get("pos") == "B1")
    emu.power_cut()
    data = bytearray(journalring.read(emu.dir))
    data[len(data) // 2] ^= 0x40  # one flipped bit inside a complete record
    journalring.rewrite(emu.dir, bytes(data))
    for boot in range(2):  # tilt survives a power cycle and is reported again
        emu.start()
        # this boot's tilt stored: one more than before it (a wait for any
        # tilt found the first boot's at once, before this one was sent)
        tilts = until(lambda: (lambda t: t if len(t) > boot else None)(
            [e for e in _events(path, "CMD1") if e["type"] == "tilt"]), timeout=_WAIT_S,
            what="the tilt of boot %d" % (boot + 1))
        emu.power_cut()
    assert len(tilts) == 2
    emu.start()
    state = _wait_up(path)
    end = time.monotonic() + _WAIT_S
    while not state["tilt"] and time.monotonic() < end:
        state = json.loads(_send(path, "state")[3:])
        time.sleep(0.1)
    assert state["tilt"]
    emu.deal("9S")  # play is refused while tilted
    _wait_event(path, "CMD1", lambda e: e["type"] == "error" and e.get("reason") == "tilted")
    with db.Store(path) as store:
        from host_tools.verify import check_shoe
        assert check_shoe(store, "CMD1") is None


def test_send_refuses_a_bad_argument_without_a_bridge(tmp_path):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bridge", "--db", str(tmp_path / "none.db"),
                        "--send", "new_shoe batch=C"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and r.stdout.strip() == "error shoe: batch must be A or B, got 'C'"
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bridge", "--db", str(tmp_path / "none.db"),
                        "--send", "new_shoe batch=B"], capture_output=True, text=True, timeout=20)
    assert r.returncode == exits.EXIT_NO_BRIDGE and "no bridge is running" in r.stderr  # valid: it got as far as the socket


def test_new_shoe_batch_b_reaches_the_shoe(table):
    # Needs the shoe's dispatcher to parse with link.schema.parse_command.
    emu, path, start = table
    start()
    _wait_up(path)
    assert _send(path, "new_shoe batch=B decks=6").startswith("ok sent shoe")
    _wait_event(path, "CMD1", lambda e: e["type"] == "accepted" and e["command"] == "shoe")
    assert _send(path, "status").startswith("ok")
    status = _wait_event(path, "CMD1", lambda e: e["type"] == "status")[0]
    assert "batch=B" in status["settings"].split()
