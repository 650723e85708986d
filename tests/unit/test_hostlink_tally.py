"""A flood of forged or bad frames is counted, not written per frame: the host
link's Tally (host_tools/protocol/hostlink.py) writes one row at once and then at
most one a second, and the store merges a kind's rows within its window. On a
running bridge: tests/e2e/test_bridge_link.py."""

import time

import pytest

from host_tools.store import db

SHOE = "TALLY1"


def test_a_flood_is_one_row_written_at_most_once_a_second(tmp_path):
    writes = []
    from host_tools.protocol.hostlink import Tally
    t = Tally(lambda *a: writes.append(a))
    start = time.monotonic()
    while time.monotonic() - start < 1.5:
        t.note("forged_event", "E1 %d" % len(writes))
    t.flush(force=True)
    assert 2 <= len(writes) <= 3          # at once, about a second later, and at close
    assert sum(w[1] for w in writes) == t.total["forged_event"] > 1000
    with db.Store(tmp_path / "s.db") as s:
        for kind, count, first, last, detail in writes:
            s.alert(SHOE, "warning", kind, detail, count, first, last, merge_within=60)
        assert len(s.alerts()) == 1 and s.alerts()[0]["count"] == t.total["forged_event"]


def test_alerts_merge_only_within_the_window(tmp_path):
    with db.Store(tmp_path / "s.db") as s:
        s.alert(SHOE, "warning", "forged_event", "a", 3, 100.0, 101.0, merge_within=60)
        s.alert(SHOE, "warning", "forged_event", "b", 2, 150.0, 152.0, merge_within=60)
        s.alert(SHOE, "warning", "forged_event", "c", 1, 300.0, 300.0, merge_within=60)
        s.alert(SHOE, "critical", "rollback", "d")
        got = [(a["kind"], a["count"], a["first_time"], a["last_time"], a["detail"]) for a in s.alerts()]
        assert got[:3] == [("forged_event", 5, 100.0, 152.0, "b"), ("forged_event", 1, 300.0, 300.0, "c"),
                           ("rollback", 1, got[2][2], got[2][2], "d")]
        with pytest.raises(ValueError, match="severity"):
            s.alert(SHOE, "panic", "x", "y")
