"""Link v2 as the shoe keeps it, in the real MicroPython VM on a real pty.

The MAC oracle is CPython's own ``hmac`` and ``hashlib`` (never the
firmware's code); the attacks are those of docs/security.md on the link: a command
captured on one connection and replayed on a later one, a journal deleted,
cut back at a record boundary or emptied, a flood of forged frames, a
version-1 host. Each ends in the documented state with a clear event.
"""

import hashlib
import hmac
import json
import os
import subprocess
import sys
import time

import pytest

from support import journalring
from support.emuhost import powered_on
from host_tools import deploy
from host_tools.qa.bench import footprint
from host_tools.sim.emulate import Emulator

from firmware.link import auth, frame, host_frames, proto

PLAY = ["shoe decks=8", "2C", "4S", "5S", "bets", "9H", "2C", "KS", "3D", "4C", "bets", "5H"]


# ------------------------------------------------------------- the MAC itself


VM_SIGN = r"""
from link import auth
import binascii
s = auth.FrameSigner(bytes(range(32)), "T9")
out = bytearray(32)
link = bytearray(b"0" * 32)
for seq in (1, 9, 10, 4294967295):
    body = b'{"type":"card","seq":%d}' % seq
    s.sign_into(0x45, seq, link, 0, 32, body, 0, len(body), out, 0)
    print(seq, out.decode())
    link[:] = out
"""


def test_the_shoe_signs_in_the_vm_exactly_as_the_host_checks(tmp_path):
    """Chained tags made by the firmware in the MicroPython VM at the board's
    heap equal hashlib's over the documented message."""
    manifest = deploy.stage("emulator", tmp_path, "MAC", bytes(32))
    proc = footprint.run_in_vm(tmp_path, manifest["heap"], VM_SIGN)
    assert proc.returncode == 0, proc.stderr
    fkey = hmac.new(bytes(range(32)), b"shoe frames v3", hashlib.sha256).digest()  # K_f, by the standard library
    link = b"0" * 32
    lines = proc.stdout.split("\n")
    for line, seq in zip(lines, (1, 9, 10, 4294967295)):
        body = b'{"type":"card","seq":%d}' % seq
        want = hmac.new(fkey, b"T9 E%d %s %s" % (seq, link, body), hashlib.sha256).hexdigest()[:32]
        assert line == "%d %s" % (seq, want)
        link = want.encode()


# ------------------------------------------------------------- the emulated shoe

@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "V2", key=bytes(range(32))).close()
    return base


@pytest.fixture
def shoe(staged, tmp_path):
    with powered_on(staged, tmp_path / "flash", "V2") as (emu, host):
        host.connect()
        yield emu, host


def _reboot(emu, host):
    emu.power_cut()
    emu.start()
    emu.wait_booted()
    host.frames = []
    host.connect("hello after power-on")
    return host.hellos()[-1]


def _played(emu, host, lines=PLAY):
    for line in lines:
        emu.deal(line)
    host.wait(lambda: host.find(type="card", card="5H"), what="the last card")
    host.pump(0.3)


def _forged_count(host):
    return sum(json.loads(p).get("count", 0) for p in host.events.values() if '"reason":"bad_mac"' in p)


def test_a_captured_command_is_refused_on_every_later_connection(shoe):
    emu, host = shoe
    counter, captured = host.command("status")
    host.wait_event(type="accepted", command="status", counter=counter)
    statuses = lambda: len([1 for p in host.events.values() if '"type":"status"' in p])  # noqa: E731

    def refused(before):
        host.send(captured)
        host.wait(lambda: _forged_count(host) > before, what="the replay refused")
        assert statuses() == 1  # it never acted

    # 1. the next connection in the same boot: the nonce is the boot's, and
    # the counter is spent (an exact repeat of the last accepted command is
    # dropped in silence: its outcome is already in the record)
    host.connect("hello")
    host.send(captured)
    host.pump(1.0)
    assert statuses() == 1
    # 2. after a power cut (counter and journal intact)
    hello = _reboot(emu, host)
    assert hello["counter"] == counter
    refused(_forged_count(host))
    # 3. after the journal is deleted: the counter is gone, the nonce still bars it
    emu.power_cut()
    journalring.erase(emu.dir)
    hello = _reboot(emu, host)
    assert hello["tilt"].startswith("journal deleted")
    refused(_forged_count(host))
    # 4. while tilted, after another power cycle
    hello = _reboot(emu, host)
    assert hello["tilt"].startswith("journal deleted")
    refused(_forged_count(host))
    assert host.bad_tags == []


def test_a_command_held_back_past_its_deadline_is_refused_and_spends_nothing(shoe):
    """A device on the line holds a signed command back and delivers it after
    its deadline: the shoe refuses it as expired, it never acts, and the next
    command with the same counter is still accepted."""
    emu, host = shoe
    now = host.shoe_clock()
    late = host_frames.deadline_after(now, 0, ttl_ms=-200)  # signed 5.2 s ago, held since
    counter, _data = host.command("status", deadline=late)
    _, e = host.wait_event(type="error", reason="expired")
    assert e["command"] == "status"
    host.pump(0.3)
    assert not host.find(type="status")
    host.command("status", counter=counter)
    host.wait_event(type="accepted", command="status", counter=counter)


def test_a_hello_request_from_the_line_does_not_void_the_pits_commands(shoe):
    """Anyone on the line can send a hello request; it must not change the
    nonce the pit signs with (else a device on the line voids every command)."""
    emu, host = shoe
    nonce = host.nonce
    host.send(host_frames.encode_hello_request(auth.new_nonce()))  # not the pit's
    host.pump(0.3)
    assert all(h["nonce"] == nonce.decode() for h in host.hellos()[-1:])
    counter, _data = host.command("status")
    host.wait_event(type="accepted", command="status", counter=counter)


def _record_ends(data):
    """Where each journal record ends, read from the LEN fields (protocol 8)."""
    at, ends = 8, []
    while at < len(data):
        at += 6 + ((data[at] << 8) | data[at + 1])
        ends.append(at)
    return ends


@pytest.mark.parametrize("damage", ["deleted", "truncated", "emptied"])
def test_a_lost_journal_tilts_and_stays_tilted(shoe, damage):
    emu, host = shoe
    _played(emu, host)
    emu.power_cut()
    data = journalring.read(emu.dir)
    if damage == "deleted":
        journalring.erase(emu.dir)
    elif damage == "truncated":
        ends = _record_ends(data)
        assert ends[-1] == len(data)
        journalring.rewrite(emu.dir, data[:ends[-4]])  # cut back at a record boundary: a sound journal
    else:
        journalring.rewrite(emu.dir, b"")
    for _boot in range(2):  # the tilt survives a power cycle
        hello = _reboot(emu, host)
        assert hello["tilt"] and hello["tilt"].startswith("journal " + damage), hello["tilt"]
        host.wait(lambda: [1 for p in host.events.values() if '"type":"tilt"' in p and damage in p],
                  what="the tilt event")
    # Play is refused while tilted, and says so.
    emu.deal("6D")
    host.wait_event(type="error", reason="tilted")


def test_a_fresh_or_zero_byte_journal_is_no_loss_and_a_garbled_tilt_text_still_boots(shoe):
    emu, host = shoe
    emu.power_cut()
    os.remove(os.path.join(emu.dir, "journal.bin.mark"))
    journalring.erase(emu.dir)  # a power cut before the ring's first epoch was committed
    host.strict = False  # a shoe whose flash was wiped starts its seqs again
    host.events = {}
    host.tags = {}
    hello = _reboot(emu, host)
    assert hello["tilt"] is None
    emu.power_cut()
    with open(os.path.join(emu.dir, "journal.bin.tilt"), "wb") as f:
        f.write(b"bad \xff\xfe flash")
    hello = _reboot(emu, host)
    assert hello["tilt"] == "bad ?? flash"


def test_a_counter_spent_while_tilted_survives_the_next_power_cut(shoe):
    emu, host = shoe
    emu.power_cut()
    with open(os.path.join(emu.dir, "journal.bin.tilt"), "wb") as f:
        f.write(b"test tilt")
    _reboot(emu, host)
    host.counter = 40
    counter, _ = host.command("status")
    host.wait_event(type="accepted", command="status", counter=counter)
    hello = _reboot(emu, host)
    assert hello["tilt"] == "test tilt" and hello["counter"] == counter


def test_a_flood_of_forged_frames_is_one_report_a_second(shoe):
    emu, host = shoe
    for i in range(40):
        host.send(host_frames.encode_command(bytes(32), "V2", host.nonce, 100 + i, "bets", 0))
        host.send(host_frames.encode_ack(bytes(32), "V2", host.nonce, 1))
    host.wait(lambda: _forged_count(host) >= 80, timeout=10, what="all forged frames counted")
    reports = [json.loads(p) for p in host.events.values() if '"reason":"bad_mac"' in p]
    assert _forged_count(host) == 80 and len(reports) <= 4
    assert all(r["first_ms"] <= r["last_ms"] for r in reports)
    assert not host.find(type="bets")


def test_a_version_1_host_is_told_both_versions(shoe):
    emu, host = shoe
    out = bytearray(frame.MAX_FRAME)
    host.send(bytes(out[:frame.encode(out, ord("H"), 0, b"", 0, 0)]))  # a v1 hello request
    _, e = host.wait_event(type="error", reason="proto")
    assert e["message"] == "host speaks link protocol 1; this shoe speaks %d" % proto.PROTO


def test_each_shoe_ends_with_a_checkpoint_whose_tag_chains(shoe):
    emu, host = shoe
    for line in ["shoe decks=8", "2C", "4S", "5S", "bets", "9H", "2C", "empty"]:
        emu.deal(line)
    end, _ = host.wait_event(type="shoe_end")
    seq, cp = host.wait_event(type="checkpoint")
    # The plain emulator has no secure element: the checkpoint says it is unsigned.
    assert seq == end + 1 and cp == {"type": "checkpoint", "source": "link", "through": end,
                                     "unsigned": "no secure element"}
    host.pump(0.3)
    fkey = auth.frames_key(emu.key)
    body = host.events[seq].encode()
    assert host_frames.frame_mac(fkey, "V2", ord("E"), seq, host.tags[seq - 1], body) == host.tags[seq]
    assert host.bad_tags == []
    # After a power cut the same checkpoint comes back at the same seq, byte for byte.
    _reboot(emu, host)
    host.pump(0.5)
    assert host.events[seq] == json.dumps(cp, separators=(",", ":"))


# ------------------------------------------------------------- with the bridge

def test_a_truncated_journal_is_a_rollback_the_bridge_alerts_and_never_overwrites(tmp_path):
    from host_tools.sim.rigs.bridge import ThreadedBridge
    from host_tools.store import db
    emu = Emulator(str(tmp_path / "flash"), "RB1")
    emu.start()
    path = tmp_path / "s.db"
    bridge = ThreadedBridge(str(path), emu.host_path, emu.key)
    try:
        for line in PLAY:
            emu.deal(line)
        end = time.monotonic() + 20
        while time.monotonic() < end and not [e for _s, e in bridge.events if e.get("card") == "5H"]:
            time.sleep(0.1)
        time.sleep(1.5)  # the shoe journals the ack
        with db.Store(path) as store:
            before = [(r["seq"], r["event"], r["mac"]) for r in store.rows("RB1")]
        emu.power_cut()
        data = journalring.read(emu.dir)
        journalring.rewrite(emu.dir, data[:_record_ends(data)[4]])  # back to the first cards
        emu.start()
        end = time.monotonic() + 20
        alerts = []
        while time.monotonic() < end and not alerts:
            time.sleep(0.2)
            with db.Store(path) as store:
                alerts = [a for a in store.alerts("RB1") if a["kind"] == "rollback"]
        assert alerts and alerts[0]["severity"] == "critical"
        time.sleep(1.0)
        with db.Store(path) as store:
            after = [(r["seq"], r["event"], r["mac"]) for r in store.rows("RB1")]
    finally:
        bridge.close()
        emu.close()
    assert after[:len(before)] == before  # nothing overwritten
    # The tilted shoe's new events follow the stored ones, their chain
    # restarting at its tilt event; verify proves them and reports the alert.
    new = [json.loads(e) for _s, e, _m in after[len(before):]]
    assert new and new[0]["type"] == "tilt" and "journal truncated" in new[0]["reason"]
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(path),
                        "--key-file", emu.key_path, "--mac-only"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "rollback" in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_dollar_in_event_text_is_escaped_so_its_tag_still_checks(shoe):
    """'$' starts a frame, so the link sends it as '?'; an event that quoted a
    dealer's '$5' would then carry a tag over other bytes than those sent,
    and the host would refuse it for ever (found by `shoe soak noise`)."""
    emu, host = shoe
    emu.deal("$5")
    seq, e = host.wait_event(type="error")
    assert "$5" in e["message"] and "$" not in host.events[seq]  # \u0024 on the wire
    emu.deal("shoe decks=8")
    host.wait_event(type="shoe")  # the link goes on past it
    assert host.bad_tags == []
