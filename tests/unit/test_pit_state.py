"""What a pit table shows between and during rounds, and the store writer
as a process of its own (host_tools/pit/service.py, groupcommit.py).

The events are the firmware's own (replayed under CPython), so "next" is
checked against what the shoe really says, not against made-up events."""

import json

import pytest

from host_tools import deal
from host_tools.pit.groupcommit import GroupCommit, TableStore
from host_tools.view.fold import TableFold
from host_tools.protocol import tablestate
from host_tools.store import db

BURN = "AS up\n2S\n"               # Ch 5F: an exposed ace burns one more card face down
NATURAL = "9H\n2C\nKS\n3D\n"       # Player 9 natural, Banker 5: the round ends after B2


def _table():
    """A table's page fold alone: no thread, port or key."""
    return TableFold("T1")


def _nexts(script):
    """(event type, snapshot's next, next_card) after each event of ``script``."""
    events = [json.loads(line) for line in deal.deal_bytes(script.encode(), "cpython").splitlines()]
    runner = _table()
    out = []
    for seq, event in enumerate(events, 1):
        runner.fold(seq, event)
        snap = runner.view()
        out.append((event["type"], snap["next"], snap["next_card"]))
    return out


def test_next_is_P1_after_bets_and_the_awaited_action_between_rounds():
    seen = _nexts("shoe decks=8\n" + BURN + "bets\n" + NATURAL + "bets\n")
    kinds = [k for k, _n, _c in seen]
    shoe = seen[kinds.index("shoe")]
    assert shoe[1:] == ("BURN", "BURN")  # the exposed burn card is due first (Ch 5F)
    burns = [s for s in seen if s[0] == "card"][:2]
    assert burns[-1][1:] == (tablestate.BETTING, None)  # burn done: betting open, no card due
    first_bets = kinds.index("bets")
    assert seen[first_bets][1:] == ("P1", "P1")  # betting closed: P1 is due (Ch 8C)
    result = kinds.index("result")
    assert seen[result][1:] == (tablestate.BETTING, None)  # between rounds: no more bets awaited
    last_bets = len(kinds) - 1 - kinds[::-1].index("bets")
    assert last_bets > result and seen[last_bets][1:] == ("P1", "P1")


def test_next_is_unknown_before_anything_and_new_shoe_after_shoe_end():
    runner = _table()
    assert runner.view()["next"] is None  # nothing known yet: the page shows "-"
    runner.fold(1, {"type": "shoe_end", "reason": "cover", "rounds": 1, "left": 0, "counts": {},
                     "missing": {}, "excess": {}})
    assert runner.view()["next"] == tablestate.NO_SET


def test_a_dead_store_writer_fails_the_writes_in_flight_then_is_restarted(tmp_path):
    path = str(tmp_path / "pit.db")
    committer = GroupCommit(path)
    store = TableStore(db.Store(path), committer)
    try:
        assert store.append("S", 1, '{"type":"bets","round":1}') == db.STORED
        first = committer.proc
        first.kill()
        first.wait()
        with pytest.raises(db.StoreError, match="store writer has stopped"):
            store.append("S", 2, '{"type":"bets","round":2}')
        # Nothing was acked for seq 2, so the shoe sends it again: a new writer takes it.
        assert store.append("S", 2, '{"type":"bets","round":2}') == db.STORED
        assert committer.proc is not first and committer.proc.poll() is None
        assert store.last_seq("S") == 2
        with pytest.raises(db.SequenceGap):  # refusals cross the process as their own class
            store.append("S", 9, '{"type":"bets","round":9}')
        assert store.append("S", 3, '{"type":"bets","round":3}') == db.STORED
    finally:
        store.close()
        committer.close()
    assert committer.proc.poll() is not None  # closing the pit ends its writer
    with db.Store(path) as check:
        assert [r[1] for r in check.events("S")] == [1, 2, 3]
