"""An edge alert's lifecycle (host_tools/pit/edges.py): raised when a side
bet turns player-favourable, closed by its own clear (no acknowledgement
needed for the pair, no second alert for the clear), closed by a new card
set, and still closed by its clear after the pit restarts. The EdgeWatch
runs with the real EdgeMonitor on a real store; the shoe is the one-deck
composition of test_pit_browser's edge test (Lucky Nines favourable with
four nines among twelve cards), then three of the nines are dealt."""

import json

from host_tools.pit.edges import EdgeWatch
from host_tools.settle.core import cards
from host_tools.store import audit, db


class FakePit:
    def __init__(self):
        self.messages = []

    def publish(self, message):
        self.messages.append(message)


NINES = [cards.make(8, s) for s in range(4)]
KEEP = NINES + [cards.make(r, s) for r in (1, 2) for s in range(4)]


def _shoe():
    left = [1] * 52
    for c in KEEP:
        left[c] -= 1
    events = [{"type": "shoe", "decks": 1, "designation": "standard"}]
    events += [{"type": "card", "round": 1, "pos": "DISCARD", "card": cards.name(c)}
               for c in range(52) for _ in range(left[c])]
    return events + [{"type": "result", "round": 1}]


def _nines_dealt():
    return [{"type": "card", "round": 2, "pos": "DISCARD", "card": cards.name(c)} for c in NINES[:3]] + \
        [{"type": "result", "round": 2}]


def _feed(watch, store, events, first=1):
    """Each event committed to the store, then handed to the watch (as the pit does)."""
    for seq, event in enumerate(events, first):
        store.append("X9", seq, json.dumps(event))
        watch.handle(store, {"type": "event", "table": "T9", "shoe": "X9", "seq": seq, "event": event})
    return first + len(events)


def _open(store):
    closed = audit.acks(store.db, "T9")
    return [a for a in store.alerts("X9") if str(a["id"]) not in closed]


def _nine_alerts(store):
    return [a for a in store.alerts("X9") if "lucky_nines" in a["detail"]]


def test_an_edge_alert_is_closed_by_its_clear(tmp_path):
    path = str(tmp_path / "e.db")
    store, pit = db.Store(path), FakePit()
    watch = EdgeWatch(pit, path)
    seq = _feed(watch, store, _shoe())
    nines = _nine_alerts(store)
    assert len(nines) == 1 and nines[0] in _open(store)
    _feed(watch, store, _nines_dealt(), seq)
    # the clear closed it: one row for the pair, no row for the clear, nothing for a person to acknowledge
    assert _nine_alerts(store) == nines and nines[0] not in _open(store)
    closing = audit.acks(store.db, "T9")[str(nines[0]["id"])]
    assert closing["closed"] and closing["user"] == "edge-monitor" and "edge_clear round 2" in closing["reason"]
    assert {"type": "alert", "table": "T9", "shoe": "X9", "kind": "edge", "closed": nines[0]["id"]} in pit.messages
    # the chained audit log still links with the close in it
    assert audit.check_audit(store.db)[2] is None
    store.close()


def test_a_new_card_set_closes_every_open_edge_alert(tmp_path):
    path = str(tmp_path / "e.db")
    store, pit = db.Store(path), FakePit()
    watch = EdgeWatch(pit, path)
    seq = _feed(watch, store, _shoe())
    assert _open(store)
    _feed(watch, store, [{"type": "shoe", "decks": 8, "designation": "standard"}], seq)
    assert _open(store) == []
    store.close()


def test_after_a_restart_the_clear_still_closes_the_alert(tmp_path):
    path = str(tmp_path / "e.db")
    store = db.Store(path)
    seq = _feed(EdgeWatch(FakePit(), path), store, _shoe())
    # a new pit process: its EdgeWatch primes from the store; the open alert is not raised twice
    nines = _nine_alerts(store)
    assert len(nines) == 1 and nines[0] in _open(store)
    _feed(EdgeWatch(FakePit(), path), store, _nines_dealt(), seq)
    assert _nine_alerts(store) == nines and nines[0] not in _open(store), store.alerts("X9")
    store.close()


def test_verify_summarises_alerts_by_kind_and_lists_them_on_request(tmp_path, capsys):
    from host_tools import verify
    path = str(tmp_path / "e.db")
    store = db.Store(path)
    for i in range(12):
        store.alert("X9", "warning", "edge", "edge_alert round %d: dragon7 house edge -1.0%% with 40 cards left" % i)
    store.alert("X9", "warning", "forged_event", "3 event frames whose tag does not verify")
    verify._report_alerts(store, "X9")
    out = capsys.readouterr().out
    assert out == "note shoe X9: 13 alerts: edge 12 (warning), forged_event 1 (warning) (--alerts lists them)\n"
    verify._report_alerts(store, "X9", every=True)
    out = capsys.readouterr().out
    assert out.count("\n") == 13 and "dragon7" in out
    store.close()
