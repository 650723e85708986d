"""The shoe checks its own signature counter at boot: a journal
restored from an earlier copy is caught by the shoe itself, not only later
by `shoe verify`, as an attacker with the shoe's flash tries it, in the
MicroPython VM with the simulated ATECC608B on the emulated board's bus.

The journal and its marker copied after the first signed checkpoint, one
more shoe dealt and signed, then the copy put back: the journal and its
marker agree with each other, so only the chip's monotonic counter, which
no copy of the flash can take back, shows the restore. The shoe must tilt
with that reason, record nothing as normal, and sign nothing."""

import contextlib
import json
import shutil

import pytest

from support.emuhost import Host
from support.journalfile import append_u32, raw_records
from host_tools.sim.emulate import Emulator

from firmware.link import chipcount, journal

JOURNAL_FILES = ("journal.bin", "journal.bin.mark")
# The boards' journal: a ring on NOR flash (link/ring.py), with its marker.
RING_FILES = ("journal.bin.nor", "journal.bin.mark")
ROUND = ["2C", "4S", "5S", "bets", "9H", "2C", "KS", "3D", "empty"]


def _power_on(emu):
    host = Host(emu)
    emu.start()
    emu.wait_booted()
    host.connect()
    return host


def _signed_shoe(emu, host):
    """One short shoe to its end: the chip signs the shoe-end checkpoint
    (the events the shoe resends after a power cut are passed over)."""
    host.pump(0.5)
    before = max(host.events, default=0)
    emu.deal("shoe decks=8")
    for line in ROUND:
        emu.deal(line)

    def after(kind):
        return lambda: next(((s, e) for s, e in ((s, json.loads(host.events[s])) for s in sorted(host.events))
                             if s > before and e["type"] == kind), None)
    host.wait(after("shoe_end"), timeout=20, what="the shoe's end")
    _, cp = host.wait(after("checkpoint"), timeout=20, what="its signed checkpoint")
    assert "sig" in cp, cp
    return cp["counter"]


def _off(emu, host):
    # The shoe journals acks once a heartbeat (proto.HEARTBEAT_MS), so the
    # last ones may not be on flash: it resends those events after the
    # power-on, and the next Host acks from its hello's "acked" on.
    host.pump(0.3)
    emu.power_cut()
    host.close()


def _two_signed_shoes(emu, flash, copy, files=JOURNAL_FILES):
    """A shoe signed (counter 1), the journal and its marker copied to
    ``copy``, a normal power cycle, a second shoe signed (counter 2)."""
    host = _power_on(emu)
    first = _signed_shoe(emu, host)
    _off(emu, host)
    for name in files:
        shutil.copy(flash / name, copy / name)
    # A power cycle of the untouched journal is normal.
    host = _power_on(emu)
    host.wait_event(type="boot")
    assert host.hellos()[-1]["tilt"] is None
    second = _signed_shoe(emu, host)
    _off(emu, host)
    assert second == first + 1 == emu.secure.counters[0]
    return first, second


@contextlib.contextmanager
def _signed_twice(tmp_path, ring=None):
    """An emulated shoe with its chip after two signed shoes, and the copy of
    its journal files taken after the first: (emu, flash, copy, the journal's
    files, first counter, second counter); the emulator closed afterwards.
    ``ring`` 0: the file journal; None: the ring, as on the boards."""
    flash = tmp_path / "flash"
    emu = Emulator(str(flash), "EMU1", secure=True, journal_ring=ring)
    files = JOURNAL_FILES if ring == 0 else RING_FILES
    copy = tmp_path / "copy"
    copy.mkdir()
    try:
        yield (emu, flash, copy, files) + _two_signed_shoes(emu, flash, copy, files)
    finally:
        emu.close()


@pytest.mark.parametrize("ring", [0, None], ids=["file", "ring"])
def test_a_journal_restored_from_an_earlier_copy_tilts_the_shoe(tmp_path, ring):
    with _signed_twice(tmp_path, ring) as (emu, flash, copy, files, first, second):
        # The attack: the earlier copy put back, journal and marker together.
        assert (flash / "journal.bin").exists() == (ring == 0)
        for name in files:
            shutil.copy(copy / name, flash / name)
        hello, played, frames = _tilted_boot(emu)
    tilts = [json.loads(p) for k, _, p in frames if k == "E" and json.loads(p)["type"] == "tilt"]
    kinds = {json.loads(p)["type"] for k, _, p in frames if k == "E"}
    assert hello["tilt"] is not None, "the shoe booted on a restored journal as if nothing happened"
    assert hello["tilt"].startswith("secure element counter is %d, the journal's last is %d" % (second, first)), \
        hello["tilt"]
    assert "restored" in hello["tilt"]
    assert tilts and tilts[0]["reason"] == hello["tilt"], kinds
    # Nothing recorded as normal: the journal is the copy, byte for byte;
    # no card, no shoe, no signature.
    for name in files[:1]:
        assert (flash / name).read_bytes() == (copy / name).read_bytes()
    assert "tilt" in played and "error" in played, played   # the window holds this boot's events
    assert not {"shoe", "card", "result", "checkpoint"} & set(played), played
    assert emu.secure.counters[0] == second
    assert (flash / "journal.bin.tilt").read_text() == hello["tilt"]


def _tilted_boot(emu):
    """Power on, let the shoe say hello and try to deal: (its hello, the
    types of the events it made since this power-on, every frame)."""
    host = _power_on(emu)
    hello = host.hellos()[-1]
    since = min(h["seq"] for h in host.hellos())

    def made():
        # What the shoe made since this power-on: from its tilt event on (the
        # boot hello's seq; an ack may only move them higher). Events of the
        # restored journal that it had not journaled as acked come again
        # below that, as after any power cut.
        return [json.loads(p)["type"] for k, s, p in host.frames if k == "E" and s >= since]
    if hello["tilt"] is not None:
        host.wait(lambda: "tilt" in made(), timeout=20, what="the tilt event")
    emu.deal("shoe decks=8")     # play is refused while tilted
    for line in ROUND:
        emu.deal(line)
    if hello["tilt"] is not None:
        host.wait(lambda: "error" in made(), timeout=20, what="play refused")
    host.pump(0.5)
    played = made()
    _off(emu, host)
    return hello, played, host.frames


def test_a_restored_journal_edited_to_look_like_a_power_cut_tilts_the_shoe(tmp_path):
    """Whoever writes the flash puts back the copy made at counter 1 after
    the chip reached 2, and makes the journal end as a power cut in the
    middle of the chip's signature would leave it: an intent record at the
    chip's value minus one, (a) written with the codec's CRC, or (b) the
    shoe's own intent record for that value, cut out of the later journal.
    Before the journal was sealed (a) booted untilted, wrote an unsigned
    "power cut while signing" checkpoint for counter 2 and signed counter 3
    over the re-dealt events. And (c): journal and marker deleted after the
    chip has signed, a shoe with no past. Each must tilt, sign nothing, and
    give the reason the pit raises its critical counter_mismatch alert on.
    On the file journal (``ring`` 0): the edits append records to a file;
    the same restore on the ring is the first test's ``ring`` case."""
    with _signed_twice(tmp_path, 0) as (emu, flash, copy, _files, first, second):
        later = raw_records(flash / "journal.bin")
        intent = [raw for kind, value, raw in later if kind.upper() == "I" and value == first]
        assert intent, [k for k, _, _ in later]

        def attack(edit):
            for name in JOURNAL_FILES:
                shutil.copy(copy / name, flash / name)
            (flash / "journal.bin.tilt").unlink(missing_ok=True)   # the last attack's tilt, gone too
            edit()
            return _tilted_boot(emu)

        forged = attack(lambda: append_u32(flash / "journal.bin", journal.INTENT, second - 1))

        def splice():
            with open(flash / "journal.bin", "ab") as f:
                f.write(intent[-1])
        spliced = attack(splice)

        def delete():
            for name in JOURNAL_FILES:
                (flash / name).unlink()
        deleted = attack(delete)
    for what, (hello, played, _) in (("forged intent", forged), ("spliced intent", spliced), ("deleted", deleted)):
        reason = hello["tilt"]
        assert reason is not None, "%s: the shoe booted on it as if nothing happened (played %s)" % (what, played)
        assert reason.startswith(chipcount.REASON) or journal.SEAL in reason, (what, reason)
        assert "tilt" in played and not {"shoe", "card", "result", "checkpoint"} & set(played), (what, played)
    assert journal.SEAL in forged[0]["tilt"] and journal.SEAL in spliced[0]["tilt"]
    assert "holds no record" in deleted[0]["tilt"], deleted[0]["tilt"]
    assert emu.secure.counters[0] == second   # nothing signed
