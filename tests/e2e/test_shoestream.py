"""The one shoe stream (host_tools/sim/shoestream.py) and what stands on it,
on ptys and under a bridge: the casino's simulated tables and the pit's
stand-ins. Every event any of them makes must pass the link schema, and
every tag must be the shoe's (the stream itself, in this process:
tests/unit/test_shoestream_events.py)."""

import json
import time

from host_tools.sim.rigs.bridge import ThreadedBridge
from host_tools.sim import standin
from host_tools.store import db

from firmware.link import events_schema

KEY = bytes(range(32))


def test_stand_ins_events_pass_the_schema_and_a_real_bridge_stores_them(tmp_path):
    """Two stand-ins on ptys, each with a real bridge (which stores and acks
    only what passes the schema): every event either shoe made is stored
    and acknowledged, each passes the schema, and each card's ack is seen."""
    tables = [standin.StandIn("SI%d" % i, seed=i, irregularities=0.3, workdir=str(tmp_path))
              for i in (1, 2)]
    floor = standin.Floor(tables, pace=0.01)
    bridges = [ThreadedBridge(str(tmp_path / "pit.db"), t.path, t.key) for t in tables]
    try:
        floor.start()
        deadline = time.monotonic() + 20
        while not floor.all_up() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert floor.all_up()
        floor.start_dealing(until=time.time() + 3)
        time.sleep(4)
        deadline = time.monotonic() + 10
        while any(t.session.acked < t.session.seq for t in tables) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        for b in bridges:
            b.close()
        floor.close()
    with db.open_existing(str(tmp_path / "pit.db")) as st:
        for t in tables:
            rows = list(st.db.execute("SELECT seq, event FROM events WHERE shoe_id = ? ORDER BY seq",
                                      (t.shoe_id,)))
            assert [q for q, _e in rows] == list(range(1, t.session.seq + 1))
            assert t.session.acked == t.session.seq > 100
            types = set()
            for _q, e in rows:
                event = json.loads(e)
                assert events_schema.check_stored(event) is None, e
                types.add(event["type"])
            assert {"boot", "link_up", "shoe", "card", "result"} <= types
            assert t.stats["bad_acks"] == 0 and t.stats["hellos"] >= 1 and t.stats["shoes"] >= 1
            assert len(t.card_seqs) == len(t.acked_at) > 50
