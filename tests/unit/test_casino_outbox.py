"""A pit store as its own outbox (host_tools/casino/publish.py): what is
pending is exactly the events past each shoe's mark, in seq order per
shoe, and finding them costs the shoes behind, not the whole store."""

import os

from host_tools.casino import publish
from host_tools.sim import simtable
from host_tools.store import db


def _store(tmp_path, shoes=("S1", "S2", "S3"), events=12):
    path = str(tmp_path / "pit.db")
    with db.Store(path) as st:
        for shoe in shoes:
            sim = simtable.SimShoe(shoe, os.urandom(32), seed=simtable.seed_of(shoe),
                                   workdir=str(tmp_path))
            try:
                sim.deal(st, events)
            finally:
                sim.close()
    return path


def test_pending_is_every_event_past_its_shoe_mark_in_order(tmp_path):
    path = _store(tmp_path)
    box = publish.Outbox(path)
    try:
        box.mark({"S1": 12, "S2": 5}, {})
        rows = box.pending()
        assert [(r[0], r[1]) for r in rows] == (
            [("S2", q) for q in range(6, 13)] + [("S3", q) for q in range(1, 13)])
        assert box.pending(limit=3) == rows[:3]
        box.mark({"S2": 12, "S3": 12}, {})
        assert box.pending() == []
    finally:
        box.close()


def test_pending_searches_each_shoe_and_never_scans_the_events(tmp_path):
    path = _store(tmp_path)
    box = publish.Outbox(path)
    queries = []
    try:
        box.db.set_trace_callback(queries.append)
        box.pending()
        box.db.set_trace_callback(None)
        sql = [q for q in queries if "FROM shoes" in q][0]
        plan = [row[3] for row in box.db.execute("EXPLAIN QUERY PLAN " + sql)]
    finally:
        box.close()
    on_events = [step for step in plan if step.split()[1:2] == ["e"]]
    assert on_events and all(step.startswith("SEARCH e USING PRIMARY KEY") for step in on_events), plan


def test_pending_of_named_shoes_is_theirs_alone_and_searches_only_them(tmp_path):
    path = _store(tmp_path)
    box = publish.Outbox(path)
    queries = []
    try:
        box.mark({"S1": 12, "S2": 5}, {})
        everything = box.pending()
        assert box.pending(shoes={"S2", "S1"}) == [r for r in everything if r[0] == "S2"]
        assert box.pending(shoes={"S3", "nobody"}, limit=4) == [r for r in everything if r[0] == "S3"][:4]
        assert box.pending(shoes=set()) == []
        box.db.set_trace_callback(queries.append)
        box.pending(shoes={"S3"})
        box.db.set_trace_callback(None)
        sql = [q for q in queries if "FROM shoes" in q][0]
        plan = [row[3] for row in box.db.execute("EXPLAIN QUERY PLAN " + sql)]
    finally:
        box.close()
    # the shoes by their key, not a scan of every shoe
    assert any(step.startswith("SEARCH s USING") for step in plan) and not any(
        step.startswith("SCAN s") for step in plan), plan
