"""Cold decks and shuffle quality at the pit (host_tools/pit/shuffle.py):
an emulated shoe (the firmware in the MicroPython VM) dealt a deck in
factory order stops; the pit raises a critical cold_deck alert and shows the
shoe's shuffle score on the table page and the end-of-shoe report; only a
confirmed supervisor clears the stop, and the clearing is in the audit log
and in the shoe's own signed record. The end-of-shoe shuffle alert is
checked on a real store."""

import json
import time

import pytest

from host_tools.analysis import shuffle_score as Q
from host_tools.pit import shuffle
from host_tools.sim import shuffles as S
from host_tools.store import db
from support.waits import until
from support.bridgecli import stored_events
from support.pitrig import running_pit


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with running_pit(tmp_path_factory.mktemp("pit"), {"T1": "COLD1"}) as rig:
        yield rig


def test_a_cold_deck_stops_the_table_and_only_a_confirmed_supervisor_clears_it(pit):
    server, _service, emus, cfg = pit
    emu = emus["T1"]
    # Factory order, uncut: AS burns one, then 2S..7S make a run of 7.
    for line in ["shoe decks=8", "AS up", "2S", "bets", "3S", "4S", "5S", "6S", "7S"]:
        emu.deal(line)
    stop = until(lambda: [e for e in stored_events(cfg.store, "COLD1") if e["type"] == "irregularity" and e["rule"] == "cold_deck"],
                 what="the cold_deck irregularity")[0]
    assert stop["cards"] == ["AS", "2S", "3S", "4S", "5S", "6S", "7S"]
    # The page: a critical alert naming the cards, no card due, the score weak.
    # Read as surveillance: the alerts and the score are staff's, the score surveillance's.
    table = until(lambda: (lambda t: t if any(a["kind"] == "cold_deck" for a in t["alerts"]) else None)(
        server.request("GET", "/api/tables/T1", token=server.staff)[1]), what="the cold_deck alert")
    alert = [a for a in table["alerts"] if a["kind"] == "cold_deck"][0]
    assert alert["severity"] == "critical" and "2S 3S 4S 5S 6S 7S" in alert["detail"]
    assert table["next_card"] is None
    assert table["shuffle"]["weak"] and table["shuffle"]["stats"]["factory_adjacency"]["observed"] == 6
    status, report = server.request("GET", "/api/tables/T1/report", token=server.staff)
    assert status == 200 and report["shuffle"]["weak"]
    # A viewer may not clear it; a supervisor must confirm.
    viewer = server.login("vic")
    status, _ = server.request("POST", "/api/tables/T1/command", {"command": "clear_stop", "confirm": True},
                               token=viewer)
    assert status == 403
    sam = server.login("sam")
    status, body = server.request("POST", "/api/tables/T1/command", {"command": "clear_stop"}, token=sam)
    assert status == 400 and "confirm" in body["error"]
    assert not [e for e in stored_events(cfg.store, "COLD1") if e["type"] == "stop_cleared"]
    status, body = server.request("POST", "/api/tables/T1/command", {"command": "clear_stop", "confirm": True},
                                  token=sam)
    assert status == 200 and body["reply"].startswith("ok sent clear_stop"), body
    cleared = until(lambda: [e for e in stored_events(cfg.store, "COLD1") if e["type"] == "stop_cleared"], what="stop_cleared")
    assert cleared[0]["rule"] == "cold_deck"
    assert any(e.get("type") == "accepted" and e.get("command") == "clear_stop" for e in stored_events(cfg.store, "COLD1"))
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT user, role, tbl, action, target, outcome FROM audit_log"
                                     " WHERE target = 'clear_stop'"))
    assert ("vic", "viewer", "T1", "command", "clear_stop", "refused: not a supervisor") in rows
    assert any(r[:5] == ("sam", "supervisor", "T1", "command", "clear_stop") and r[5].startswith("ok")
               for r in rows), rows
    # Play resumes: the held cards open the round once betting closes.
    emu.deal("bets")
    until(lambda: [e for e in stored_events(cfg.store, "COLD1") if e["type"] == "result"], what="the next result")


def _store_shoe(store, shoe_id, events, seq0=1):
    """Rows as the bridge stores them, for the score's reads (the chain
    columns are not read here)."""
    for i, e in enumerate(events, seq0):
        store.db.execute("INSERT INTO events (shoe_id, seq, type, round, event, mac, received, prev_hash, hash)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (shoe_id, i, e["type"], 0, json.dumps(e), "0" * 32, time.time(), b"\0" * 32, b"\0" * 32))
    store.db.commit()
    return seq0 + len(events)


class _Pit:
    def __init__(self):
        self.published = []

    def publish(self, message):
        self.published.append(message)


@pytest.mark.parametrize("model,weak", [("two-riffles", True), ("uniform", False)])
def test_a_weak_shuffle_raises_a_shuffle_alert_at_the_shoes_end(tmp_path, model, weak):
    path = str(tmp_path / "pit.db")
    store = db.Store(path)
    try:
        stack = S.model(model, 8, S.rng(5))[:400]
        events = S.events(stack) + [{"type": "shoe_end", "reason": "cover"}]
        _store_shoe(store, "X1", events)
        pit = _Pit()
        watch = shuffle.ShuffleWatch(pit, path)
        watch.handle(store, {"type": "event", "table": "T9", "shoe": "X1", "seq": len(events),
                             "event": events[-1]})
        alerts = [a for a in store.alerts("X1") if a["kind"] == "shuffle"]
        assert bool(alerts) == weak
        if weak:
            assert alerts[0]["severity"] == "warning" and "below 0.01" in alerts[0]["detail"]
            assert pit.published[-1]["kind"] == "shuffle"
        result = shuffle.shoe_score(store, "X1")
        assert result["weak"] == weak and result["physical"] and result["p"] == Q.score_events(events)[0]["p"]
    finally:
        store.close()


def test_the_listener_only_queues_what_it_scores():
    watch = shuffle.ShuffleWatch(_Pit(), ":memory:")
    for event in ({"type": "card", "card": "9H"}, {"type": "irregularity", "rule": "13A"},
                  {"type": "shoe_end", "source": "link"}):
        watch.listener({"type": "event", "table": "T", "event": event})
    assert watch.queue.empty()
    watch.listener({"type": "event", "table": "T", "event": {"type": "shoe_end"}})
    watch.listener({"type": "event", "table": "T", "event": {"type": "irregularity", "rule": "cold_deck",
                                                             "cards": ["AS"]}})
    assert watch.queue.qsize() == 2
