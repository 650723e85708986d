"""A whole seeded shoe through the VM over the pty, with and without power cuts.

The store (here, the test's host) must end with exactly the events `shoe
deal` prints for the same dealing script, numbered 1..N without gaps,
however often the power fails while the dealer deals.
"""

import json
import threading

import pytest

from support.emuhost import Host, core_events, powered_on, reference, restart
from host_tools.sim import dealer
from host_tools.sim.emulate import Emulator
from firmware.link import host_frames, proto


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "EMU2", key=bytes(range(1, 33))).close()
    return base


def _run(staged, tmp_path, seed, cuts):
    with powered_on(staged, tmp_path / "flash", "EMU2") as (emu, host):
        host.hello()
        lines = dealer.script(seed, irregularity_rate=0.08)
        marks = [len(lines) * (i + 1) // (len(cuts) + 1) for i in range(len(cuts))]
        done = 0
        for mark in marks + [len(lines)]:
            feeder = threading.Thread(target=lambda a=done, b=mark: [emu.deal(x) for x in lines[a:b]])
            feeder.start()
            while feeder.is_alive():
                host.pump(0.05)
            feeder.join()
            done = mark
            if mark < len(lines):
                # Once the shoe has taken every line dealt so far (a card drawn
                # while the power is off is never seen, so none is dealt then),
                # cut the power: usually mid-round.
                want = reference(lines[:mark])
                host.wait(lambda: core_events(host) == want, timeout=30, what="the dealt lines")
                emu.power_cut()
                restart(emu)
                host.hello()
        host.wait_event(timeout=60, type="shoe_end")
        host.pump(0.5)
        assert sorted(host.events) == list(range(1, max(host.events) + 1))
        assert core_events(host) == reference(lines)
        with open(emu.stderr_path) as f:
            assert "watchdog" not in f.read()
        return host


def test_full_shoe_equals_replay(staged, tmp_path):
    host = _run(staged, tmp_path, seed=11, cuts=[])
    assert host.find(type="irregularity")  # the dealer's mistakes reached the record


def test_full_shoe_survives_power_cuts(staged, tmp_path):
    host = _run(staged, tmp_path, seed=12, cuts=[1, 2])
    boots = [e for e in host.event_list() if e.get("type") == "boot"]
    assert [b["resumed"] for b in boots] == [False, True, True]


def test_long_outage_overflows_the_outbox_and_loses_nothing(staged, tmp_path):
    """Far more unacked events than the outbox holds (64): the rest wait in the
    journal and are replayed into the outbox as acks free it, also after a
    power cut in the middle of the outage."""
    with powered_on(staged, tmp_path / "flash", "EMU2") as (emu, host):
        lines = dealer.script(5)[:260]
        for line in lines[:150]:
            emu.deal(line)
        host.auto_ack = False  # the bridge is away: nothing is acked
        host.pump(1.5)
        emu.power_cut()
        restart(emu)
        for line in lines[150:]:
            emu.deal(line)
        host.pump(1.0)
        host.auto_ack = True
        host.hello()
        want = reference(lines)
        host.wait(lambda: core_events(host) == want, timeout=30, what="every event")
        assert sorted(host.events) == list(range(1, max(host.events) + 1))
        assert len(want) > 2 * 64


def test_a_pit_pc_started_afresh_after_a_power_cut_acks_from_the_shoes_hello(staged, tmp_path):
    """The shoe journals acks lazily (once a heartbeat), so after a power cut
    it resends events the store already took. A pit PC that starts afresh
    holds only what is resent: it must ack from the hello's ``acked`` on, or
    no ack reaches the shoe and its window holds every later event back
    (the flaky `shoe`-less reboot of tests/e2e/test_secure_counter.py)."""
    with powered_on(staged, tmp_path / "flash", "EMU2") as (emu, host):
        host.connect()
        host.wait(lambda: host.acked >= 2 and host.find(type="link_up"), what="boot and link_up acked")
        host.pump(1.5)           # a heartbeat later the shoe has journaled that ack
        host.auto_ack = False    # then the acks stop reaching the journal
        host.beats = False       # and the pit falls silent: the shoe resends until it calls the link
        #                          down, then says in a heartbeat what it holds
        lines = dealer.script(7)[:24]
        first, rest = lines[:16], lines[16:]
        for line in first:
            emu.deal(line)
        held = reference(first)
        shoe_seq = 2 + len(held)  # after boot and link_up
        assert shoe_seq - 2 > proto.WINDOW  # more unacked events than the window
        host.wait(lambda: [s for k, s, p in host.frames if k == "B" and s >= shoe_seq],
                  what="a heartbeat from the shoe holding every event")
        emu.power_cut()
        host.close()
        fresh = Host(emu)
        try:
            restart(emu)
            fresh.connect()
            assert fresh.hellos()[-1]["acked"] == 2
            for line in rest:
                emu.deal(line)
            want = reference(lines)[len(held):]
            fresh.wait(lambda: core_events(fresh)[-len(want):] == want, timeout=20,
                       what="the events dealt after the power cut")
        finally:
            fresh.close()


def test_a_flash_that_fails_mid_outage_delivers_what_it_holds_then_the_tilt(staged, tmp_path):
    """The journal's flash stops taking writes (``flash fail``) while most of
    an outage's events wait only in the journal. The shoe tilts on the
    next card, whose record does not reach the flash; once the pit is back,
    every event the journal holds reaches it, complete and in order, and
    the `tilt` follows the last of them on the same tag chain. Before, the
    pit got the outbox's 64 events and never the tilt (unit test:
    tests/unit/test_link_outage.py)."""
    with powered_on(staged, tmp_path / "flash", "EMU2") as (emu, host):
        lines = dealer.script(5)[:160]
        for line in lines[:20]:
            emu.deal(line)
        host.wait(lambda: core_events(host) == reference(lines[:20]), what="the first rounds")
        host.auto_ack = False  # the bridge is away: nothing is acked
        for line in lines[20:150]:
            emu.deal(line)
        emu.deal("flash fail")
        emu.deal(lines[150])
        host.pump(1.0)
        host.auto_ack = True
        host.hello()
        at, tilt = host.wait_event(timeout=60, type="tilt")
        assert tilt["reason"].startswith("journal write failed (")
        seqs = sorted(host.events)
        assert seqs == list(range(1, max(seqs) + 1))
        assert [e for e in (json.loads(host.events[k]) for k in seqs if k < at)
                if e.get("source") != "link"] == reference(lines[:150])
        prev = host.tags[at - 1]
        assert host_frames.frame_mac(host.fkey, "EMU2", ord("E"), at, prev, host.events[at].encode()) \
            == host.tags[at]   # the same chain, not a restart
        assert host.bad_tags == [] and len(reference(lines[:150])) > 2 * 64
        emu.deal(lines[151])   # refused: the shoe plays nothing while tilted
        _seq, refused = host.wait_event(timeout=30, reason="tilted")
        assert refused["type"] == "error"
        # A fresh journal on that flash would fail too: clear_tilt waits for
        # a power cycle, after which it is taken (link/tilt.py in the VM).
        host.command("clear_tilt")
        _seq, refused = host.wait_event(timeout=30, reason="wrong_state")
        assert "power-cycle first" in refused["message"]
        emu.power_cut()
        restart(emu)
        host.hello()
        host.wait(lambda: [k for k in host.events if k > at and json.loads(host.events[k])["type"] == "tilt"],
                  what="the tilted boot's tilt")
        host.command("clear_tilt")
        host.wait_event(timeout=30, type="tilt_cleared")
        assert host.bad_tags == [] and sorted(host.events) == list(range(1, max(host.events) + 1))
