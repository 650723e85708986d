"""The fault relay itself: clean when asked to be, and damaging bytes at the
seeded rates when asked to, so the fault tests really exercise the link.
Then whole-frame faults against the emulated shoe (link v2): a frame forged
on the line is not stored and is alerted, and a lost first event is waited
for, never skipped."""

import os
import time
import tty

import serial

from host_tools.sim.relay import Relay


def _pair():
    master, slave = os.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    return master, os.ttyname(slave), slave


def _collect(port, n, timeout=5.0):
    data = b""
    end = time.monotonic() + timeout
    while len(data) < n and time.monotonic() < end:
        data += port.read(n - len(data))
    return data


def test_clean_relay_passes_bytes_both_ways():
    master, shoe_path, slave = _pair()
    relay = Relay(shoe_path).start()
    try:
        port = serial.Serial(relay.path, 115200, timeout=0.1)
        payload = bytes(range(256)) * 8
        os.write(master, payload)
        assert _collect(port, len(payload)) == payload
        port.write(b"ack 1\n")
        time.sleep(0.2)
        assert os.read(master, 100) == b"ack 1\n"
        assert relay.faults == {"dropped": 0, "corrupted": 0, "duplicated": 0}
        port.close()
    finally:
        relay.stop()
        os.close(master)
        os.close(slave)


def test_faulty_relay_damages_at_the_seeded_rates():
    master, shoe_path, slave = _pair()
    relay = Relay(shoe_path, seed=5, drop=0.01, corrupt=0.01, duplicate=0.01).start()
    try:
        port = serial.Serial(relay.path, 115200, timeout=0.1)
        payload = b"0123456789" * 2000
        for i in range(0, len(payload), 1000):
            os.write(master, payload[i:i + 1000])
        time.sleep(0.3)
        got = _collect(port, len(payload) + relay.faults["duplicated"], timeout=2.0)
        f = relay.faults
        assert all(80 < f[k] < 330 for k in f), f  # about 1% of 20000 each
        assert len(got) == len(payload) - f["dropped"] + f["duplicated"]
        assert got != payload
        port.close()
    finally:
        relay.stop()
        os.close(master)
        os.close(slave)


# ---------------------------------------------------------------- link v2
# These run the real emulated shoe (its v2 firmware) through a relay that
# edits whole frames: it injects forged ones or drops the shoe's first event.

class FrameRelay:
    """A cable between the emulated shoe and the bridge that hands each
    whole frame from the shoe to ``edit(frame) -> [frames]`` (bytes, with
    its newline); bytes towards the shoe pass unchanged, after
    ``watch(data)`` has seen them."""

    def __init__(self, shoe_path, edit, watch=None):
        import threading
        from host_tools.sim import ptys
        self.master, self._slave, self.path = ptys.open_raw()
        self.shoe = os.open(shoe_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.shoe)
        self.edit = edit
        self.watch = watch or (lambda data: None)
        self.partial = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=ptys.relay, args=(self.master, self.shoe, self._stop.is_set, self._passing),
            daemon=True)
        self._thread.start()

    def _passing(self, src, data):
        if src != self.shoe:
            self.watch(data)
            return data
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        return b"".join(b"".join(self.edit(line + b"\n")) for line in lines)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        for fd in (self.master, self._slave, self.shoe):
            try:
                os.close(fd)
            except OSError:
                pass


def _run_table(tmp_path, shoe_id, edit, lines, early=0, watch=None):
    """Deal ``lines`` into an emulated shoe whose link passes ``edit``, the
    first ``early`` of them before the bridge starts (the shoe queues their
    events); return (store path, key path)."""
    from host_tools.sim.rigs.bridge import Feeder, ThreadedBridge
    from host_tools.sim.emulate import Emulator
    emu = Emulator(str(tmp_path / "flash"), shoe_id)
    emu.start()
    relay = FrameRelay(emu.host_path, edit, watch)
    path = tmp_path / "s.db"
    bridge = None
    try:
        for line in lines[:early]:
            emu.deal(line)
        bridge = ThreadedBridge(str(path), relay.path, emu.key)
        feeder = Feeder(emu, lines, bridge, stall=60)
        feeder.written = early
        feeder.deal()
        time.sleep(0.5)
    finally:
        if bridge is not None:
            bridge.close()
        relay.stop()
        emu.close()
    return path, emu.key_path


def _assert_complete(path, shoe_id, key_path, lines):
    """Every genuine event stored, from seq 1, none twice, and `shoe verify
    --key-file` proves it; the game events equal `shoe deal`'s."""
    import json
    import subprocess
    import sys
    from host_tools import deal
    from host_tools.store import db
    with db.Store(path) as store:
        rows = list(store.rows(shoe_id))
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    game = [r["event"].encode() for r in rows if json.loads(r["event"]).get("source") != "link"]
    assert game == deal.deal_bytes(("\n".join(lines) + "\n").encode()).splitlines()
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(path),
                        "--key-file", str(key_path), "--mac-only"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "tags verified" in r.stdout, r.stdout + r.stderr


def test_a_frame_forged_on_the_line_is_not_stored_and_alerted(tmp_path):
    """Needs the v2 firmware. Once the bridge has acked a few events, the
    relay injects, just before the shoe's next event, a result at that seq
    with a valid CRC and a made-up tag, and a forged hello: neither is
    stored or believed, one alert of each is logged, and every genuine
    event is stored."""
    import json
    import re
    from host_tools.sim import dealer
    from host_tools.store import db
    from firmware.link import frame
    seen = {"acked": 0, "injected": 0}

    def forged(kind, seq, payload):
        out = bytearray(frame.MAX_FRAME)
        n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
        return bytes(out[:n])

    def watch(data):
        for seq in re.findall(rb"\$A(\d+) ", data):
            seen["acked"] = max(seen["acked"], int(seq))

    def edit(line):
        if not line.startswith(b"$E") or seen["injected"] or seen["acked"] < 3:
            return [line]
        seq = int(line[2:line.index(b" ")])
        if seq != seen["acked"] + 1:
            return [line]
        seen["injected"] = seq
        return [forged("E", seq, b'{"type":"result","round":1,"winner":"player"} '
                       + b"0123456789abcdef" * 2),
                forged("H", 0, json.dumps({
                    "proto": 3, "shoe": "EVIL", "seq": 0, "acked": 0, "counter": 0, "tilt": None,
                    "nonce": "0" * 16, "chain": "0" * 32}).encode() + b" " + b"f" * 32),
                line]

    lines = dealer.script(41, decks=1)[:40]
    path, key_path = _run_table(tmp_path, "F1", edit, lines, watch=watch)
    assert seen["injected"]
    _assert_complete(path, "F1", key_path, lines)
    with db.Store(path) as store:
        kinds = sorted(a["kind"] for a in store.alerts())
        assert kinds == ["forged_event", "forged_hello"], store.alerts()
        assert store.shoe_ids() == ["F1"]
        assert not any('"result","round":1,"winner":"player"' in r["event"] for r in store.rows("F1"))


def test_the_relay_drops_the_first_event_and_the_store_waits_for_seq_1(tmp_path):
    """Needs the v2 firmware. Every transmission of seq 1 is lost until the
    store has seen later events without it (a gap in its link log): the
    store stores nothing past the gap, and once the shoe's resend gets
    through the record is complete from seq 1."""
    import sqlite3
    from host_tools.sim import dealer
    from host_tools.store import db
    path = tmp_path / "s.db"
    dropped = []

    def gap_logged():
        try:
            con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
            try:
                return con.execute("SELECT 1 FROM link_log WHERE kind = 'gap'").fetchone() is not None
            finally:
                con.close()
        except sqlite3.Error:
            return False

    def edit(line):
        if line.startswith(b"$E1 ") and not gap_logged():
            dropped.append(line)
            return []
        return [line]

    lines = dealer.script(42, decks=1)[:30]
    stored, key_path = _run_table(tmp_path, "F2", edit, lines, early=4)
    assert stored == path
    assert dropped
    _assert_complete(path, "F2", key_path, lines)
    with db.Store(path) as store:
        assert store.shoe("F2")["first_seq"] == 1
        assert "gap" in [k for _s, _t, k, _d in store.link_log("F2")]
