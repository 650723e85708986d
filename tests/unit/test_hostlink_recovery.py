"""The host link comes back to recording after reboots and half-finished
handshakes, within a bound: the shoe's real link session and the pit's real
HostLink on one virtual clock (tests/support/linkrig.py)."""

import os
import pathlib
import random
import shutil
import tempfile

import pytest

from host_tools.protocol import alerts, hostlink
from support.linkrig import SHOE, Interleaving, Rig, VirtualClock, native_crc, play

BOUND_S = hostlink.RECOVER_S


@pytest.fixture
def rig(tmp_path, monkeypatch):
    rig = Rig(tmp_path, VirtualClock().install(monkeypatch))
    rig.power_on()
    assert rig.run(5.0, rig.recording_current) is not None
    for _ in range(3):
        rig.event()
        rig.run(0.2)
    assert rig.run(5.0, rig.recording_current) is not None and rig.stored() >= 3
    return rig


def _burst_then_cut(rig):
    """A burst the bridge stores and acks, cut before the shoe journals those
    acks (it does so once a second): the next boot holds more unacked events
    than its window, so no event it sends after them (a refusal of our acks
    included) reaches the bridge until an ack it takes."""
    for _ in range(20):
        rig.event()
    assert rig.run(0.5, lambda: rig.shoe.acked == rig.stored() == rig.shoe.seq) is not None
    assert rig.shoe.journaled_ack < rig.shoe.acked - 16
    rig.power_off()


def test_two_quick_reboots_do_not_stall_the_bridge(rig):
    """Boot 2's hello reaches the bridge, which asks for a fresh one; the
    power fails again before boot 2 reads the request; boot 3 says hello half
    a second later. The bridge must ask boot 3 and record under its nonce."""
    boot1 = rig.link.hello["nonce"]
    _burst_then_cut(rig)
    rig.power_on()            # boot 2: its unprompted hello is on the wire
    rig.step()                # ... the bridge reads it and asks for a fresh one
    assert rig.to_shoe, "the bridge asked boot 2 for nothing"
    rig.power_off()           # the request dies with boot 2
    rig.run(0.5)
    rig.power_on()            # boot 3
    rig.event()               # and it has something to say
    took = rig.run(BOUND_S, rig.recording_current)
    assert took is not None, (
        "not recording under boot 3's connection %.1f s after its hello: the bridge's hello is %s "
        "(boot 1's: %s), it says %r" % (BOUND_S, rig.link.hello and rig.link.hello["nonce"], boot1,
                                        rig.link.recording_line()))
    assert rig.link.hello["nonce"] != boot1


def test_a_reboot_whose_hellos_are_all_lost_is_found_by_the_refused_acks(rig):
    """The bridge never sees the new boot's hello: the only sign left is the
    shoe's heartbeats, which show it not taking the acks (signed under a
    nonce it no longer knows)."""
    boot1 = rig.link.hello["nonce"]
    _burst_then_cut(rig)
    rig.power_on()
    rig.lose_hellos_until = rig.clock.t + 1.0   # the boot hello and the link-up hello
    took = rig.run(BOUND_S, rig.recording_current)
    assert took is not None, rig.link.recording_line()
    assert rig.link.hello["nonce"] != boot1


@pytest.fixture
def fast_dir(tmp_path):
    """A directory in memory where there is one (the stores' fsyncs are most
    of the model's time on a disk), else the test's own."""
    if not os.path.isdir("/dev/shm"):
        yield tmp_path
        return
    where = tempfile.mkdtemp(prefix="linkmodel-", dir="/dev/shm")
    try:
        yield pathlib.Path(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _model(seeds, where, monkeypatch):
    """Model-based: for each seed a random interleaving of power cuts (also
    while booting), lost frames, stalls longer than the link's timeouts,
    lost hellos, played-back hellos and bridge restarts; once the last one is
    over, the bridge must record under the shoe's live connection, level with
    it, within hostlink.RECOVER_S, and the store must hold every event the
    shoe made exactly once (its chain verified on the way in). Returns the
    worst recovery (seconds, seed)."""
    native_crc(monkeypatch)
    worst = (0.0, -1)
    for seed in seeds:
        rng = random.Random(seed)
        clock = VirtualClock().install(monkeypatch)
        rig = Rig(where / str(seed), clock)
        rig.rng = rng
        rig.power_on()
        assert rig.run(hostlink.RECOVER_S, rig.recording_current) is not None, seed
        plan = Interleaving(rng)
        took = play(rig, rng, plan, hostlink.RECOVER_S)
        assert took is not None, "seed %d: %r; faults %r" % (seed, rig.link.recording_line(), plan.faults)
        first, last, count = rig.store.db.execute(
            "SELECT min(seq), max(seq), count(*) FROM events WHERE shoe_id=?", (SHOE,)).fetchone()
        assert (first, last, count) == (1, rig.shoe.seq, rig.shoe.seq), seed
        worst = max(worst, (took, seed))
        rig.store.close()
    print("link model: %d seeds, worst recovery %.2f s (seed %d), bound %.1f s"
          % (len(seeds), worst[0], worst[1], hostlink.RECOVER_S))
    return worst


DEFAULT_SEEDS = 80   # the default suite's sample; -m slow takes the seeds from here on


def test_random_reboots_losses_and_timeouts_always_end_in_recording(fast_dir, monkeypatch):
    _model(range(DEFAULT_SEEDS), fast_dir, monkeypatch)


@pytest.mark.slow
def test_the_link_model_over_thousands_of_seeds(fast_dir, monkeypatch):
    _model(range(DEFAULT_SEEDS, DEFAULT_SEEDS + int(os.environ.get("LINK_MODEL_SEEDS", "3000"))), fast_dir,
           monkeypatch)


def _outages(rig):
    return [(a["severity"], a["detail"]) for a in rig.store.alerts(SHOE) if a["kind"] == "not_recording"]


def test_not_recording_past_the_bound_is_a_critical_alert_that_clears_itself(rig):
    seen = []
    rig.link.on_alert = lambda severity, kind, detail: seen.append((severity, kind))
    rig.power_off()
    rig.run(alerts.NOT_RECORDING_S - 1.0)
    assert not rig.link.recording()[0] and _outages(rig) == [] and seen == []
    assert rig.run(hostlink.STALE_S + 2.0, lambda: _outages(rig)) is not None
    (severity, detail), = _outages(rig)
    assert severity == "critical" and detail.startswith("NOT RECORDING for 10 s (since ") \
        and detail.endswith("): no link to the shoe (waiting for the shoe's hello)"), detail
    assert seen == [("critical", "not_recording")]
    assert [a["kind"] for a in alerts.open_only(rig.store.alerts(SHOE))] == ["not_recording"]
    rig.run(20.0)
    assert len(_outages(rig)) == 1, "one alert for one outage, however long"
    rig.power_on()
    assert rig.run(hostlink.RECOVER_S, rig.recording_current) is not None
    rig.step()
    assert [s for s, _d in _outages(rig)] == ["critical", "info"]
    assert _outages(rig)[1][1].startswith("recording again after 3")
    assert seen == [("critical", "not_recording"), ("info", "not_recording")]
    assert alerts.open_only(rig.store.alerts(SHOE)) == []


def test_an_outage_a_stopped_bridge_left_open_is_cleared_by_the_next(rig):
    rig.power_off()
    assert rig.run(alerts.NOT_RECORDING_S + hostlink.STALE_S + 2.0, lambda: _outages(rig)) is not None
    rig.start_bridge()       # the bridge restarts while the shoe is still off
    rig.run(2.0)
    rig.power_on()
    assert rig.run(hostlink.RECOVER_S, rig.recording_current) is not None
    rig.step()
    assert [s for s, _d in _outages(rig)] == ["critical", "info"]
    assert alerts.open_only(rig.store.alerts(SHOE)) == []
