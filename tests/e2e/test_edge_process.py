"""The pit's edge monitor in its own process (host_tools/pit/edgeproc.py):
what a table thread hands its listener reaches the monitor in the child,
the alert it raises is stored and comes back to the pit's publish, and
closing it ends the child."""

import time

from host_tools.pit.edgeproc import EdgeProcess
from host_tools.settle.core import cards
from host_tools.store import db


class Pit:
    def __init__(self):
        self.messages = []

    def publish(self, message):
        self.messages.append(message)


def _nines_left():
    """A one-deck shoe dealt down to four nines, four aces and four twos:
    side bets turn player-favourable (tests/unit/test_edges.py)."""
    stay = {cards.make(rank, suit) for rank in (1, 2, 8) for suit in range(4)}
    dealt = [c for c in range(52) if c not in stay]
    return ([{"type": "shoe", "decks": 1, "designation": "standard"}]
            + [{"type": "card", "round": 1, "pos": "DISCARD", "card": cards.name(c)} for c in dealt]
            + [{"type": "result", "round": 1}])


def test_an_edge_raised_in_the_child_is_stored_and_published(tmp_path):
    path = str(tmp_path / "pit.db")
    store = db.Store(path)
    pit = Pit()
    watch = EdgeProcess(pit, path)
    watch.start()
    try:
        # only handed over, not stored: the monitor primes a new table from
        # the store, and would find the whole shoe there already
        for seq, event in enumerate(_nines_left(), 1):
            watch.listener({"type": "event", "table": "T1", "shoe": "EP1", "seq": seq, "event": event,
                            "live": {"not": "sent to the monitor"}})
        end = time.monotonic() + 60
        while not pit.messages and time.monotonic() < end:
            time.sleep(0.05)
        stored = store.alerts("EP1")
        assert stored and {a["kind"] for a in stored} == {"edge"}, stored
        assert all("edge_alert round 1" in a["detail"] and "12 cards left" in a["detail"] for a in stored)
        assert {(m["type"], m["table"], m["kind"]) for m in pit.messages} == {("alert", "T1", "edge")}
    finally:
        child = watch.proc
        watch.close()
        store.close()
    assert child.poll() is not None
