"""The host link comes back to recording after reboots and half-finished
handshakes, within a bound: the shoe's real link session and the pit's real
HostLink on one virtual clock (tests/support/linkrig.py)."""

import pytest

from support.linkrig import Rig, VirtualClock

BOUND_S = 5.0


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


def test_two_quick_reboots_do_not_stall_the_bridge(rig):
    """Boot 2's hello reaches the bridge, which asks for a fresh one; the
    power fails again before boot 2 reads the request; boot 3 says hello half
    a second later. The bridge must ask boot 3 and record under its nonce."""
    boot1 = rig.link.hello["nonce"]
    # A burst the bridge stores and acks, cut before the shoe journals those
    # acks (it does so once a second): boot 2 and 3 hold more unacked events
    # than the window, so no event they send after them reaches the bridge.
    for _ in range(20):
        rig.event()
    assert rig.run(0.5, lambda: rig.shoe.acked == rig.stored() == rig.shoe.seq) is not None
    assert rig.shoe.journaled_ack < rig.shoe.acked - 16
    rig.power_off()
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
