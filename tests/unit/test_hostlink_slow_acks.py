"""A slow pit PC is not a shoe refusing acks: when the bridge's frames take
a while to reach the shoe (a loaded pit of hundreds of tables), the shoe's
heartbeats show it behind the store the whole time, yet taking every ack.
The bridge must keep that link, not tear it down for a fresh hello; a shoe
whose acked stops moving is still caught (test_hostlink_recovery.py). The
shoe's real link session and the pit's real HostLink on one virtual clock."""

from support.linkrig import Rig, VirtualClock


class SlowRig(Rig):
    """Every frame from the bridge reaches the shoe ``delay`` seconds late."""

    delay = 0.6

    def __init__(self, *args):
        self.late = []
        super().__init__(*args)

    def step(self, ms=None):
        now = self.clock.t
        if self.to_shoe:
            self.late.append((now + self.delay, bytes(self.to_shoe)))
            self.to_shoe = bytearray()
        due = [data for at, data in self.late if at <= now]
        self.late = [(at, data) for at, data in self.late if at > now]
        self.to_shoe += b"".join(due)
        super().step() if ms is None else super().step(ms)


def _hellos_asked(rig, seconds, event_every=0.1):
    """Events every ``event_every`` s for ``seconds``; how many times the
    bridge dropped the link for a fresh hello meanwhile."""
    asked = []
    resync = rig.link._resync
    rig.link._resync = lambda why: (asked.append(why), resync(why))
    t_end = rig.clock.t + seconds
    while rig.clock.t < t_end:
        rig.event()
        rig.run(event_every)
    return asked


def test_a_shoe_taking_late_acks_keeps_its_link(tmp_path, monkeypatch):
    rig = SlowRig(tmp_path, VirtualClock().install(monkeypatch))
    rig.power_on()
    assert rig.run(10.0, lambda: rig.link.hello is not None and rig.stored() > 0) is not None
    nonce = rig.link.hello["nonce"]
    start = rig.shoe.acked
    asked = _hellos_asked(rig, 12.0)
    assert asked == [], asked
    assert rig.link.hello is not None and rig.link.hello["nonce"] == nonce
    assert rig.shoe.acked > start + 60   # it went on taking the acks, late
