"""A short sample of `shoe soak casino` in the suite: every kind of fault on
real servers (hub-capture layout, whose recovery is quick), then the
central record must equal the pit stores and pass `shoe verify --central`.
The long run, and the leaf-buffer layout, are `shoe soak casino`."""

import argparse
import time

import pytest

from host_tools.qa.soak import casino as soak


def test_casino_chaos_sample():
    lines = []
    args = argparse.Namespace(seconds=8.0, tables=2, rate=5.0, seed=5, gap=0.6, cut=1.0,
                              layout="hub-capture", catch_up=40.0)
    rc = soak.run(args, out=lambda s: lines.append(str(s)))
    text = "\n".join(lines)
    assert rc == 0, text
    assert "lost 0, duplicated 0, extra 0, different 0" in text, text
    assert "verify --central ok" in text, text


@pytest.mark.slow
def test_a_pit_cut_off_for_a_minute_catches_up_soon_after_its_link_returns(tmp_path):
    """Leaf-buffer layout, one pit cut off the hub for 60 s while it deals.
    nats-server backs off its retries of the sourcing meanwhile (without
    `shoe central watch` nothing arrived for 47 s after the link was back);
    with the watcher the record holds every event stored before the link
    returned within 20 s of its return."""
    from host_tools.sim.rigs.casino import Rig
    rig = Rig(str(tmp_path / "casino"), pits=1, tables=2, rate=5.0, consumers=1)
    try:
        rig.start()
        time.sleep(5)
        leaf = rig.leaves["P1"]
        remote, leaf.hub_leaf_url = leaf.hub_leaf_url, None
        leaf.stop()
        leaf.start()
        time.sleep(60)
        leaf.hub_leaf_url = remote
        leaf.stop()
        leaf.start()
        want = len(rig.pit_events())
        t0 = time.monotonic()
        while rig.central_count() < want and time.monotonic() - t0 < 60:
            time.sleep(0.5)
        took = time.monotonic() - t0
        assert rig.central_count() >= want
        assert took <= 20, "caught up %.0f s after the link returned" % took
    finally:
        rig.close()
