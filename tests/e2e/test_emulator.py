"""The firmware in the real MicroPython VM, on a real pty, driven by pyserial.

Each test powers up an emulated shoe (`host_tools.sim.emulate.Emulator`: the
flash staged by `shoe deploy`'s staging, the VM at the board's heap) and
plays the pit PC by hand with the protocol's own host helpers, so every
check is about bytes that crossed a serial line.
"""

import json
import os
import shutil
import time

import pytest

from support import journalring
from support.emuhost import Host, core_events, emulate_cli, reference, restart
from host_tools.sim.emulate import Emulator

from firmware.link import auth, frame, host_frames, proto, schema
from firmware.link import hmac as link_hmac

BURN_AND_ROUND = ["shoe decks=8", "2C", "4S", "5S", "bets", "9H", "2C", "KS"]


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """One staged flash per module; each test copies it (staging compiles
    every firmware file, copying is instant)."""
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "EMU1", key=bytes(range(32))).close()
    return base


@pytest.fixture
def emu(staged, tmp_path):
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    e = Emulator(str(flash), "EMU1")
    yield e
    e.close()


@pytest.fixture
def host(emu):
    """The host's port is open before power-on, as a bridge waiting for its shoe."""
    h = Host(emu)
    restart(emu)
    emu.wait_booted()
    yield h
    h.close()


def reconnect(emu, host):
    """Power the shoe on again and wait for its hello, as a bridge would."""
    restart(emu)
    host.frames = []
    host.hello()
    host.wait(lambda: host.hellos(), what="hello")


def deal(emu, lines):
    for line in lines:
        emu.deal(line)


def status(host, timeout=8.0):
    """Ask for a status event and return it (the first one after the command's
    own "accepted" event)."""
    counter, _ = host.command("status")
    accepted, _ = host.wait_event(timeout, type="accepted", command="status", counter=counter)
    return host.wait(lambda: next((json.loads(p) for s, p in sorted(host.events.items())
                                   if s > accepted and '"type":"status"' in p), None),
                     timeout, "status event")


def test_handshake_then_numbered_events_equal_to_replay(emu, host):
    host.wait(lambda: host.hellos(), what="the boot hello")  # sent before any event
    first = host.frames[0]
    assert first[0] == "H"
    hello = host.hellos()[0]
    with open(os.path.join(emu.dir, "manifest.json")) as f:
        values = json.load(f)
    assert hello["proto"] == proto.PROTO and hello["board"] == "emulator" and hello["shoe"] == "EMU1"
    assert hello["fw"] == values["firmware_version"]
    assert hello["acked"] == 0 and hello["counter"] == 0 and hello["tilt"] is None
    assert hello["settings"] == ""
    host.hello()
    deal(emu, BURN_AND_ROUND + ["3D", "4C"])
    host.wait_event(type="result")
    host.pump(0.3)
    seqs = sorted(host.events)
    assert seqs == list(range(1, len(seqs) + 1))  # no gaps, from 1
    assert host.bad == [] and host.bad_tags == []
    assert core_events(host) == reference(BURN_AND_ROUND + ["3D", "4C"])
    # The hello after a new shoe carries the settings digest.
    host.hello()
    host.wait(lambda: len(host.hellos()) >= 3 and host.hellos()[-1]["settings"], what="hello")
    assert host.hellos()[-1]["settings"] == schema.settings_digest(
        "decks=8 designation=standard exposed=simulated batch=A")


def test_events_are_resent_until_acked_and_heartbeats_run(emu, host):
    host.auto_ack = False
    host.hello()
    deal(emu, ["shoe decks=8"])
    seq, _ = host.wait_event(type="shoe")
    # Not acked: the same seq comes again, byte for byte (Host checks the bytes).
    host.wait(lambda: sum(1 for k, s, p in host.frames if k == "E" and s == seq) >= 3,
              what="retransmissions")
    last = host.ack_all()
    host.pump(0.3)
    n = len(host.frames)
    host.pump(2.2)
    later = host.frames[n:]
    assert not [f for f in later if f[0] == "E" and f[1] <= last], "acked events were resent"
    beats = [json.loads(p) for k, s, p in later if k == "B"]
    assert 1 <= len(beats) <= 3  # one a second when idle
    assert {k: beats[-1][k] for k in ("acked", "queued")} == {"acked": last, "queued": 0}
    assert isinstance(beats[-1]["t"], int)  # the shoe's clock, for command deadlines
    assert [s for k, s, p in later if k == "B"][-1] == last


def test_link_loss_and_recovery_are_events(emu, host):
    host.hello()
    host.wait_event(type="link_up", down_ms=-1)
    t0 = time.monotonic()
    host.beats = False
    host.pump(3.6)  # silence from the host: the shoe declares the link down
    host.hello()
    _, down = host.wait_event(type="link_down")
    _, up = host.wait(lambda: [(s, e) for s, e in [(s, json.loads(p)) for s, p in host.events.items()]
                               if e.get("type") == "link_up" and e["down_ms"] >= 0][:1] or None,
                      what="link_up")[0]
    assert down["silent_ms"] >= 3000
    assert 0 < up["down_ms"] < (time.monotonic() - t0) * 1000
    s_down = host.find(type="link_down")[0]
    s_up = [s for s, p in host.events.items() if '"link_up"' in p and '"down_ms":-1' not in p][0]
    assert s_down < s_up
    # Recovery re-sends the hello and everything unacked from acked+1.
    assert host.hellos()[-1]["seq"] >= s_up - 1


def test_forged_corrupted_and_replayed_commands_change_nothing(emu, host):
    host.hello()
    deal(emu, BURN_AND_ROUND)
    host.wait(lambda: host.find(type="card", card="KS"), what="P2")
    before = status(host)
    assert before["next"] == "B2" and before["player"] == ["9H", "KS"] and before["banker"] == ["2C"]
    # 1. Forged: signed with another key (reported as one aggregated event).
    host.send(host_frames.encode_command(bytes(32), "EMU1", host.nonce, 50, "exposed", 0))
    _, e = host.wait_event(type="error", reason="bad_mac")
    assert e["count"] == 1 and e["message"].startswith("C 50 exposed: MAC does not verify")
    # 2. Corrupted: a valid frame with one payload byte changed on the line.
    good = bytearray(host_frames.encode_command(host.key, "EMU1", host.nonce, 51, "exposed", 0))
    good[good.index(b"exposed")] ^= 0x20
    host.send(bytes(good))
    _, e = host.wait_event(type="error", reason="bad_frame")
    assert e["message"].startswith("bad crc: frame says ")
    # 3. Replayed: the status command already accepted, sent again later.
    _, old = host.command("status")
    host.wait(lambda: len([1 for p in host.events.values() if '"type":"status"' in p]) >= 2,
              what="second status")
    host.command("time", {"t": "1763776000"})
    host.wait_event(type="time", t=1763776000)
    host.send(old)
    _, e = host.wait_event(type="error", reason="replayed")
    assert "not above the last accepted counter" in e["message"]
    # 4. Authentic but unknown (the host helper refuses to build it, so sign by hand),
    #    and authentic but malformed.
    host.counter += 1
    body = b"deal_faster @%d" % host_frames.deadline_after(host.shoe_clock(), 0)
    mac = link_hmac.mac_hex(host.key, auth.host_message("EMU1", host.nonce, "C", host.counter, body))
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord("C"), host.counter, body + b" " + mac, 0, len(body) + 33)
    host.send(bytes(out[:n]))
    host.wait_event(type="error", reason="unknown_command")
    host.command("shoe", {"decks": "99"})
    _, e = host.wait_event(type="error", reason="malformed")
    assert "decks" in e["message"]
    # 5. Nothing above reached the game.
    after = status(host)
    for key in ("round", "phase", "next", "player", "banker", "held", "left", "settings"):
        assert after[key] == before[key], key
    assert not host.find(type="irregularity")
    # ...and a genuine command still works.
    counter, _ = host.command("exposed")
    host.wait_event(type="accepted", command="exposed", counter=counter)
    host.wait_event(type="irregularity", rule="13D")


def test_power_cut_mid_round_resumes_the_exact_round(emu, host):
    host.auto_ack = False
    host.hello()
    deal(emu, BURN_AND_ROUND)
    host.wait(lambda: host.find(type="card", card="KS"), what="P2")
    counter, old_command = host.command("time", {"t": "1763776000"})
    host.wait_event(type="time")
    host.pump(0.2)
    # The bridge stored only part of the stream when the power went.
    acked = 5
    host.ack(acked)
    host.pump(1.3)  # long enough for the shoe to journal the ack
    assert max(host.events) - acked >= 3  # several events are still unacked
    seen = dict(host.events)
    last = max(seen)
    emu.power_cut()
    restart(emu)
    host.events = {s: p for s, p in seen.items() if s <= acked}  # what the store holds
    host.frames = []
    host.hello()
    host.wait(lambda: last in host.events, what="the unacked events again")
    host.auto_ack = True
    for s in range(acked + 1, last + 1):
        assert host.events[s] == seen[s], s  # the very same bytes and seq
    # The boot event follows the resent ones, in a later frame: wait for it
    # (on a loaded machine it was not there yet when `last` was).
    boot = host.wait_event(timeout=30, type="boot", resumed=True)
    assert boot[0] == last + 1
    hello = host.hellos()[0]
    # An ack is journaled lazily and reaches the ring's flash with the next
    # synced record (docs/protocol.md 8): the hello's may be an earlier one.
    assert hello["acked"] <= acked and hello["tilt"] is None
    # The command counter survived, and the old command, signed for the last
    # connection's nonce, is refused outright.
    assert hello["counter"] == counter
    host.send(old_command)
    _, e = host.wait_event(type="error", reason="bad_mac")
    assert e["message"].startswith("C %d time: MAC does not verify" % counter)
    st = status(host)
    assert st["next"] == "B2" and st["player"] == ["9H", "KS"] and st["banker"] == ["2C"]
    deal(emu, ["3D", "4C"])
    host.wait_event(type="result")
    host.pump(0.2)
    assert sorted(host.events) == list(range(1, max(host.events) + 1))
    assert core_events(host) == reference(BURN_AND_ROUND + ["3D", "4C"])


def test_torn_last_record_is_dropped_without_tilt(emu, host):
    host.hello()
    deal(emu, BURN_AND_ROUND[:5])
    host.wait_event(type="bets")
    host.pump(0.2)
    emu.power_cut()
    # a card record cut off by the power cut
    journalring.rewrite(emu.dir, journalring.read(emu.dir) + b"\x00\x02C")
    restart(emu)
    host.hello()
    _, boot = host.wait_event(type="boot", resumed=True)
    assert boot["torn"] is True
    assert host.hellos()[-1]["tilt"] is None
    deal(emu, ["9H"])
    host.wait_event(type="card", card="9H", pos="P1")


def _flip_first_card_record(flash):
    """Flip the card byte of the journal's first card record on the ring;
    return its index and offset. Records are walked by their LEN fields
    (docs/protocol.md 8)."""
    data = bytearray(journalring.read(flash))
    at, index = 8, 0
    while data[at + 2] != ord("C"):
        at += 6 + ((data[at] << 8) | data[at + 1])
        index += 1
    data[at + 4] ^= 0x01
    journalring.rewrite(flash, bytes(data))
    return index, at


def test_corrupt_journal_tilts_persists_and_needs_clear_tilt(emu, host):
    host.hello()
    deal(emu, BURN_AND_ROUND[:6])
    host.wait(lambda: host.find(type="card", card="9H"), what="P1")
    host.pump(0.2)
    emu.power_cut()
    _, at = _flip_first_card_record(emu.dir)
    # On raw flash a record that does not check within one sync's reach of
    # the stream's end (this one: a short journal) reads as a torn page
    # (link/ring.py), and the marker, which counts the records after it,
    # says the journal lost them.
    reason = "journal truncated: %d sound bytes," % at
    first_card = host.find(type="card", card="2C")[0]
    # A tilted shoe cannot trust its seq; the store's ack moves its events up
    # after what the store holds, and the store drops the stale copies by seq.
    host.strict = False
    for boot in range(2):  # tilted, and still tilted after another power cycle
        before = set(host.events)
        reconnect(emu, host)
        hello = host.hellos()[0]
        assert hello["tilt"] and hello["tilt"].startswith(reason), hello["tilt"]
        host.wait(lambda: [s for s, p in host.events.items() if s not in before and '"type":"tilt"' in p],
                  what="tilt event")
        stored = host.ack_all()
        # Play is blocked and says so; the state is not touched.
        deal(emu, ["2C"])
        host.wait(lambda: [s for s, p in host.events.items() if s > stored and '"reason":"tilted"' in p],
                  what="tilted")
        counter, _ = host.command("bets")
        host.wait_event(type="error", reason="wrong_state", counter=counter)
        assert not [p for s, p in host.events.items() if s > stored and '"type":"card"' in p]
        host.pump(0.3)
        emu.power_cut()
    reconnect(emu, host)
    host.ack_all()
    counter, _ = host.command("clear_tilt", {"seq": "100"})
    _, cleared = host.wait_event(type="tilt_cleared", counter=counter)
    # Everything before the first card's record was sound: the store's events
    # from that card's on are the ones the shoe could not rebuild.
    assert cleared["lost_from"] == first_card
    host.hello()
    host.wait(lambda: host.hellos()[-1]["tilt"] is None, what="untilted hello")
    assert os.path.exists(os.path.join(emu.dir, "journal.bin.bad"))
    host.ack_all()
    deal(emu, ["shoe decks=6"])
    host.wait_event(type="shoe", decks=6)
    # And it stays clear across a power cycle.
    host.pump(0.2)
    emu.power_cut()
    reconnect(emu, host)
    assert host.hellos()[0]["tilt"] is None


def test_damaged_firmware_file_is_never_run_and_nothing_is_sent(emu, host):
    host.wait(lambda: host.hellos(), what="the boot hello")
    emu.power_cut()
    with open(os.path.join(emu.dir, "link", "session.mpy"), "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes((b[0] ^ 1,)))
    host.frames = []
    emu.start()
    host.hello()
    host.pump(2.0)
    assert host.frames == [] and not emu.booted.is_set()
    assert emu.proc.poll() is None  # halted, not crashed into a reboot loop
    with open(emu.stderr_path) as f:
        log = f.read()
    assert "self-test: link/session.mpy does not match the manifest" in log


def test_shoe_emulate_prints_the_pty_first_and_deals_a_shoe(tmp_path):
    with emulate_cli(tmp_path / "flash", "--seed", "3", "--interval", "0.001") as h:
        h.wait_event(timeout=30, type="shoe_end")
        assert h.hellos()[0]["board"] == "emulator"
        kinds = {e["type"] for e in h.event_list()}
        assert {"shoe", "bets", "card", "result", "cover", "last_hand"} <= kinds
        assert sorted(h.events) == list(range(1, max(h.events) + 1))


def test_new_shoe_command_sets_the_digest_and_bad_dealer_input_is_named(emu, host):
    host.hello()
    counter, _ = host.command("shoe", [("decks", "6"), ("designation", "ez"), ("exposed", "burn"),
                                       ("set", "BLUE-07"), ("setdigest", "9f00aa11")])
    host.wait_event(type="accepted", command="shoe", counter=counter)
    _, shoe = host.wait_event(type="shoe")
    assert (shoe["decks"], shoe["designation"], shoe["exposed"]) == (6, "ez", "burn")
    host.hello()
    host.wait(lambda: host.hellos()[-1]["settings"], what="hello with settings")
    assert host.hellos()[-1]["settings"] == schema.settings_digest(
        "decks=6 designation=ez exposed=burn batch=A set=BLUE-07 setdigest=9f00aa11")
    assert host.hellos()[-1]["counter"] == counter
    before = status(host)
    deal(emu, ["ZZ", "9H sideways"])
    _, e = host.wait_event(type="error", message="unknown input 'ZZ' (expected shoe, bets, cover, "
                                                 "exposed, empty or a card such as 9H, TD, 10D, KS)")
    host.wait(lambda: [1 for p in host.events.values() if "9H sideways" in p], what="second error")
    after = status(host)
    for key in ("round", "phase", "next", "left", "settings"):
        assert after[key] == before[key], key
    deal(emu, ["9H"])  # the first burn card: play carries on
    host.wait_event(type="card", card="9H", pos="BURN")


def test_line_noise_is_reported_at_most_once_a_second(emu, host):
    host.hello()
    host.wait_event(type="link_up")
    good = host_frames.encode_beat()
    garbled = good.replace(b"B0", b"B1")  # CRC no longer matches
    for _ in range(30):
        host.send(garbled)
    host.wait_event(type="error", reason="bad_frame", count=1)
    host.pump(1.2)
    _, e = host.wait_event(type="error", reason="bad_frame", count=29)
    assert e["message"].startswith("bad crc: frame says ")
    assert 0 <= e["last_ms"] - e["first_ms"] < 1000
    assert len([p for p in host.events.values() if '"bad_frame"' in p]) == 2
    assert host.bad_tags == []
