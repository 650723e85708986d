"""Faults on the way from the shoe to the store. In every case the store ends
equal to the reference (`shoe deal` of the same cards): nothing lost,
nothing stored twice, the chain intact.

- the bridge is SIGKILLed mid-shoe while the dealer keeps dealing, then restarted;
- the firmware's VM is SIGKILLed mid-round (a power cut) and restarted;
- a relay between two ptys drops, corrupts and duplicates bytes both ways.
"""

import signal
import subprocess
import sys

from host_tools.sim import dealer
from host_tools import deal
from host_tools.sim.relay import Relay
from host_tools.sim.rigs.bridge import Feeder, StoreProgress, ThreadedBridge
from host_tools.sim.emulate import Emulator
from host_tools.store import db
from host_tools.verify import check_shoe


def _reference(lines):
    return deal.deal_bytes(("\n".join(lines) + "\n").encode()).splitlines()


def _assert_store_is_reference(path, shoe_id, lines):
    import json
    with db.Store(path) as store:
        rows = list(store.events(shoe_id))
        assert check_shoe(store, shoe_id) is None
    seqs = [seq for _s, seq, _t, _p, _h in rows]
    assert seqs == list(range(1, len(seqs) + 1))  # no gap, no duplicate
    game = [text.encode() for _s, _q, text, _p, _h in rows
            if json.loads(text).get("source") != "link"]
    assert game == _reference(lines)


def _bridge_process(port, path, key_file):
    return subprocess.Popen([sys.executable, "-m", "host_tools.cli", "bridge", "--port", port,
                             "--db", str(path), "--key-file", str(key_file), "--no-console"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_bridge_killed_and_restarted_mid_shoe(tmp_path):
    lines = dealer.script(31, irregularity_rate=0.05)
    emu = Emulator(str(tmp_path / "flash"), "K1")
    emu.start()
    path = tmp_path / "s.db"
    proc = _bridge_process(emu.host_path, path, emu.key_path)
    watcher = StoreProgress(path, "K1")
    try:
        feeder = Feeder(emu, lines, watcher)
        feeder.deal(150)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # The table does not stop for the pit PC: these events wait in the shoe.
        feeder.blind(25, interval=0.01)
        proc = _bridge_process(emu.host_path, path, emu.key_path)
        feeder.deal(100)
        proc.send_signal(signal.SIGKILL)  # once more, without dealing in between
        proc.wait()
        proc = _bridge_process(emu.host_path, path, emu.key_path)
        feeder.finish()
    finally:
        proc.terminate()
        proc.wait(10)
        watcher.close()
        emu.close()
    _assert_store_is_reference(path, "K1", lines)
    with db.Store(path) as store:
        kinds = [k for _s, _t, k, _d in store.link_log("K1")]
    assert kinds.count("connect") >= 3


def test_firmware_power_cut_mid_round(tmp_path):
    lines = dealer.script(32, irregularity_rate=0.05)
    emu = Emulator(str(tmp_path / "flash"), "P1")
    emu.start()
    path = tmp_path / "s.db"
    bridge = ThreadedBridge(str(path), emu.host_path, emu.key)
    try:
        feeder = Feeder(emu, lines, bridge)
        for round_index in (6, 30, 55):
            # stop two cards into a round: P1 and B1 are out, P2 is due
            bets = [i for i, line in enumerate(lines) if line == "bets"][round_index]
            feeder.deal_until(lambda i: i == bets + 3)
            boots = bridge.boots()
            emu.deal(lines[feeder.written])  # the power goes as this card is drawn
            emu.power_cut()
            emu.start()
            feeder.resync(boots)
        feeder.finish()
    finally:
        bridge.close()
        emu.close()
    _assert_store_is_reference(path, "P1", lines)
    with db.Store(path) as store:
        boots = [e for _s, _q, e, _p, _h in store.events("P1") if '"type":"boot"' in e]
    assert len(boots) == 4 and all('"resumed":true' in b for b in boots[1:])


def test_link_drops_corrupts_and_duplicates_bytes(tmp_path):
    lines = dealer.script(33, decks=2, irregularity_rate=0.1)
    emu = Emulator(str(tmp_path / "flash"), "L1")
    emu.start()
    # About one frame in eight is damaged one way or the other.
    relay = Relay(emu.host_path, seed=4, drop=0.0003, corrupt=0.0003, duplicate=0.0003).start()
    path = tmp_path / "s.db"
    bridge = ThreadedBridge(str(path), relay.path, emu.key)
    try:
        feeder = Feeder(emu, lines, bridge, stall=60)
        feeder.blind(interval=0.01)  # many events in flight, as at a busy table
        feeder.finish()
        stats = dict(bridge.bridge.stats)
    finally:
        bridge.close()
        relay.stop()
        emu.close()
    assert all(n > 0 for n in relay.faults.values()), relay.faults
    assert stats["bad_frames"] > 0
    _assert_store_is_reference(path, "L1", lines)
