"""The shuffler's journal is sealed as the shoe's is (link/journal.py
"seal", link/chipcount.py; docs/security.md "The journal's seal"): the
shuffler boots through the same link/core.py, so at boot it must check its
chip's signature counter against the sealed records of its journal, and
tilt when whoever holds the flash (but not the chip) has edited it.

Driven from outside, as that attacker: the emulated shuffler in the
MicroPython VM with its simulated ATECC608B seals batch A (the chip signs
the seal's checkpoint: counter 0 at 1), is powered off, its journal and
marker are copied; powered on again it seals batch B (counter 2) and is
powered off. Then the copy is put back and made to end as a power cut in
the middle of the chip's signature would leave it, so that the chip's 2
would pass for "one ahead of an open intent": (a) an intent record for 1
appended with the codec's own CRC, (b) the shuffler's own intent record
for 1 cut out of the later journal and appended; and (c) journal and
marker deleted, a shuffler with no past after its chip has signed. Each
boot must tilt with the seal's reason (the one the pit raises its critical
counter_mismatch alert on), write nothing to the journal, refuse to sign
and leave the chip's counters where they were.

The shoe's version is tests/e2e/test_secure_counter.py."""

import json
import shutil
import time

from support.emuhost import Host
from support.journalfile import append_u32, raw_records
from host_tools.sim.shuffler_emulate import ShufflerEmulator

from firmware.link import chipcount, journal

JOURNAL_FILES = ("journal.bin", "journal.bin.mark")
TILT_FILE = "journal.bin.tilt"


def _power_on(emu, stored=0, acks=True):
    host = Host(emu)
    host.stored = stored   # as a bridge whose store holds the earlier connections' events
    host.auto_ack = acks
    emu.start()
    emu.wait_booted()
    host.connect()
    return host


def _off(emu, host):
    host.pump(0.3)
    emu.power_cut()
    host.close()


def _seal(emu, host, batch, above=0):
    """Batch ``batch`` in new-deck order loaded, checked, shuffled and
    sealed: the seal asks for a checkpoint, which the chip signs. Its
    counter, the first above ``above`` (after a power cut the shuffler
    resends the events it had not journaled as acked, an earlier signed
    checkpoint among them)."""
    emu.feed(emu.cards.new_deck_order(1 if batch == "A" else 2))
    emu.press("load %s" % batch)

    def signed():
        return next((e for e in (json.loads(host.events[s]) for s in sorted(host.events))
                     if e["type"] == "checkpoint" and "sig" in e and e["counter"] > above), None)
    return host.wait(signed, timeout=120, what="batch %s's signed checkpoint" % batch)["counter"]


def _journal_bytes(flash):
    path = flash / "journal.bin"
    return path.read_bytes() if path.exists() else None


def _tilted_boot(emu, stored):
    """Power on and ask the shuffler to sign (a bench `sign`): (its hello,
    the events it made since this power-on). The host acks ``stored``
    first, as the pit's bridge would: its store holds batch B's events,
    which the restored journal has never seen."""
    host = _power_on(emu, stored)
    hello = host.hellos()[-1]
    since = min(h["seq"] for h in host.hellos())

    def made():
        return [json.loads(p) for k, s, p in host.frames if k == "E" and s >= since]
    if hello["tilt"] is not None:
        host.wait(lambda: [e for e in made() if e["type"] == "tilt"], what="the tilt event")
    host.command("sign", {"digest": "ab" * 32})
    host.wait(lambda: [e for e in made() if e["type"] in ("error", "signature")], what="the answer to sign")
    host.pump(0.5)
    events = made()
    _off(emu, host)
    return hello, events


def test_a_restored_journal_edited_to_look_like_a_power_cut_tilts_the_shuffler(tmp_path):
    flash = tmp_path / "flash"
    copy = tmp_path / "copy"
    copy.mkdir()
    emu = ShufflerEmulator(str(flash), decks=1, seed=4)
    emu.shoe_id = emu.device_id   # the id Host checks the tags under
    try:
        host = _power_on(emu)
        assert host.hellos()[-1]["tilt"] is None
        first = _seal(emu, host, "A")
        _off(emu, host)
        for name in JOURNAL_FILES:
            shutil.copy(flash / name, copy / name)
        # A power cycle of the untouched journal is normal, and B is sealed.
        host = _power_on(emu)
        assert host.hellos()[-1]["tilt"] is None
        second = _seal(emu, host, "B", first)
        _off(emu, host)
        stored = max(host.events)
        assert second == first + 1 == emu.secure.counters[0]
        chip = list(emu.secure.counters)
        intent = [raw for kind, value, raw in raw_records(flash / "journal.bin")
                  if kind.upper() == "I" and value == first]
        assert intent, [k for k, _, _ in raw_records(flash / "journal.bin")]
        # Genuinely sealed: the shuffler wrote it with the key its chip derives.
        assert intent[-1][2] == ord("i"), intent[-1][:4]

        attacked = {}

        def attack(what, edit):
            for name in JOURNAL_FILES:
                shutil.copy(copy / name, flash / name)
            (flash / TILT_FILE).unlink(missing_ok=True)   # the last attack's tilt, gone too
            edit()
            before = _journal_bytes(flash)
            attacked[what] = _tilted_boot(emu, stored) + (before, _journal_bytes(flash))

        attack("forged intent", lambda: append_u32(flash / "journal.bin", journal.INTENT, second - 1))

        def splice():
            with open(flash / "journal.bin", "ab") as f:
                f.write(intent[-1])
        attack("spliced intent", splice)

        def delete():
            for name in JOURNAL_FILES:
                (flash / name).unlink()
        attack("deleted", delete)
    finally:
        emu.close()

    for what, (hello, events, before, after) in attacked.items():
        reason = hello["tilt"]
        kinds = [e["type"] for e in events]
        assert reason is not None, "%s: the shuffler booted on it as if nothing happened (%s)" % (what, kinds)
        assert reason.startswith(chipcount.REASON) or journal.SEAL in reason, (what, reason)
        tilts = [e for e in events if e["type"] == "tilt"]
        assert tilts and tilts[0]["reason"] == reason, (what, tilts)
        # Asked to sign, it refuses: tilted, it takes only status, time, clear_tilt.
        refused = [e for e in events if e["type"] == "error"]
        assert refused and refused[0]["reason"] == "wrong_state" \
            and refused[0]["message"].startswith("sign: the shuffler is tilted"), \
            (what, refused)
        assert not {"signature", "checkpoint", "custody", "shuffler_boot"} & set(kinds), (what, kinds)
        # Nothing recorded as normal: the journal is the attacker's file, byte
        # for byte (none at all after (c)).
        assert after == before, what
    assert journal.SEAL in attacked["forged intent"][0]["tilt"], attacked["forged intent"][0]["tilt"]
    assert journal.SEAL in attacked["spliced intent"][0]["tilt"], attacked["spliced intent"][0]["tilt"]
    assert "holds no record" in attacked["deleted"][0]["tilt"], attacked["deleted"][0]["tilt"]
    assert (flash / TILT_FILE).read_text() == attacked["deleted"][0]["tilt"]
    assert list(emu.secure.counters) == chip   # nothing signed, no seal spent


def test_a_tilted_boot_with_more_unacked_events_than_its_outbox_still_sends_its_tilt(tmp_path):
    """The pit heard a whole batch but stored and acked none of it, then
    the journal was edited. At the tilted boot the restored unacked events
    (every one since the first power-on) overflow the shuffler's outbox (12
    slots, 1.5 KiB), and the events of that boot exist only in memory (a
    tilted device writes no journal). The records before the edited one
    are the chip's (sealed), so the pit gets every event they hold first,
    the outbox refilled from the journal as it acks, and the tilt follows
    the last of them on the same chain (link/tilt.py ``push``). At first the
    boot's events were dropped for want of room, the tilt first (the pit
    heard the hello's tilt and then nothing, for ever); then the old events
    gave way and the tilt came at seq 1, the sealed batch missing from the
    record."""
    from firmware.link import host_frames

    flash = tmp_path / "flash"
    emu = ShufflerEmulator(str(flash), decks=1, seed=5)
    emu.shoe_id = emu.device_id
    try:
        host = _power_on(emu, acks=False)   # the pit stores nothing and acks nothing, from the first hello
        emu.feed(emu.cards.new_deck_order(1))
        emu.press("load A")
        end = time.monotonic() + 120
        while emu.secure.counters[0] < 1:   # the seal's checkpoint is signed: the batch is all made
            assert time.monotonic() < end, "batch A never sealed"
            host.pump(0.05)
        made = {s: p for k, s, p in host.frames if k == "E"}   # those it sent (a window's worth)
        _off(emu, host)
        append_u32(flash / "journal.bin", journal.INTENT, 7)   # whoever holds the flash edits it
        host = _power_on(emu)
        hello = host.hellos()[-1]
        assert hello["tilt"] is not None and journal.SEAL in hello["tilt"], hello
        at, tilt = host.wait_event(timeout=60, type="tilt")
        assert hello["acked"] == 0, hello      # nothing was ever acked, so nothing journaled as acked
        assert tilt == {"type": "tilt", "source": "link", "reason": hello["tilt"]}, tilt
        assert at == hello["seq"] + 1 > 12 and sorted(host.events) == list(range(1, at + 1))
        assert made and all(host.events[k] == made[k] for k in made if k < at)   # the same events, resent
        assert [json.loads(host.events[k])["type"] for k in range(1, at)].count("checkpoint") >= 1
        assert host.bad_tags == [] and host_frames.frame_mac(
            host.fkey, emu.shoe_id, ord("E"), at, host.tags[at - 1], host.events[at].encode()) == host.tags[at]
        _off(emu, host)
    finally:
        emu.close()
