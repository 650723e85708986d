"""The bridge keeps the chain head its own last append left instead of
reading the shoe's row before every event (host_tools/protocol/hostlink.py,
``HostLink.head``). The store stays the authority: an insider who rolls the
record back under a running bridge must not get a later event stored over
the hole, and the bridge must say it is not recording. The shoe's real link
session and a real HostLink on one virtual clock (support/linkrig.py)."""

import sqlite3

from support.linkrig import SHOE, Rig, VirtualClock


def test_a_store_rolled_back_under_the_bridge_gets_nothing_stored_over_the_hole(tmp_path, monkeypatch):
    rig = Rig(tmp_path, VirtualClock().install(monkeypatch))
    rig.power_on()
    for _ in range(5):
        rig.event()
    assert rig.run(10.0, rig.recording_current) is not None
    top = rig.stored()
    assert rig.link.head is not None and rig.link.head.last_seq == top   # known without a read
    # The insider drops the newest event and winds the shoe's head back to
    # the one before, as if it had never been stored (it was acked).
    con = sqlite3.connect(rig.store.path)
    prev_hash = con.execute("SELECT hash FROM events WHERE shoe_id = ? AND seq = ?",
                            (SHOE, top - 1)).fetchone()[0]
    con.execute("DELETE FROM events WHERE shoe_id = ? AND seq = ?", (SHOE, top))
    con.execute("UPDATE shoes SET last_seq = ?, head_hash = ? WHERE shoe_id = ?", (top - 1, prev_hash, SHOE))
    con.commit()
    con.close()
    for _ in range(3):
        rig.event()
    rig.run(8.0)
    seqs = [row["seq"] for row in rig.store.rows(SHOE)]
    assert seqs == list(range(seqs[0], top))   # no later event past the hole
    ok, why = rig.link.recording()
    # said at the first event after the edit, naming the seq the store lacks
    assert not ok and "the store refused a write" in why and "expected seq %d" % top in why, why
