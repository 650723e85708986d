"""Every message and every endpoint of a running pit, walked as each role
(BRIEF, "Who may see what"): the public (no login, and a staff login asking
``?view=public`` as the table's display does), a viewer, a supervisor and
surveillance, each logged in over real HTTPS with its own event stream open
while a shoe is dealt with irregularities: a card held face down for the
next round (Ch 13B(2)), a card disclosed in a round (13D: void, then a
simulated round), face-down burns, the shoe's status (naming the held card)
asked by a supervisor, an edge alert only surveillance may know of, its
acknowledgement, and the shoe running empty (13E) so ``shoe_end`` with its
tallies goes by.

The oracle is the rules, not the pit's filter: a card may reach a role
below surveillance only once it is face up in a hand at the table. Third
cards are placed face up (Ch 8E, 8F); P1, B1, P2 and B2 are placed face
down (Ch 8C) and turned when the point counts are announced (Ch 8D(3), the
``counts`` event); a card disclosed as it is dealt is face up at once; a
result shows both hands. A burned card, a held card before its round's
counts and a face-down card of a voided round never are. The public gets the
results of completed rounds and nothing else.
"""

import json
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from host_tools.pit import tls
from host_tools.store import db
from support.faceup import cards_in, face_up_by_seq, shown_at
from support.pitclient import Stream, call, same_origin
from support.pitrig import running_pit

# The shoe, as the dealer plays it. The burn: an exposed ace, one card face down.
BURN = ("shoe decks=8", "AS", "2C")
# Round 1: Player 4-3 = 7 and Banker 3-4 = 7 both stand (tie); then an extra
# card drawn face down: held for round 2 (Ch 13B(2)).
ROUND1 = ("bets", "4H", "3D", "3C", "4S")
HELD = "5D"
# Round 2: the held 5D is P1; Banker 6-K = 6, Player 5-K = 5 draws 2H (7);
# the Banker stands on 6 against a third card of 2: Player wins.
ROUND2 = ("bets", "6C", "KD", "KH", "2H")
# Round 3: P1 8H face down, then B1 QS disclosed (Ch 13D): round 3 is void,
# QS opens simulated round 4 (Q-3 = 3 draws 5S: 8; Banker 2-4 = 6 stands).
ROUND3 = ("bets", "8H", "QS up", "2D", "3H", "4C", "5S")
NEVER = ("2C", "8H")      # a face-down burn, a face-down card of a voided round
EDGE = "dragon7 house edge -3.1 % with 40 cards left"


def _https_pit(d):
    cert, key = str(d / "pit.crt"), str(d / "pit.key")
    tls.selfsigned(cert, key, ["127.0.0.1", "localhost"])
    return running_pit(d, {"T1": "WLK1", "T2": "WLK2"}, ssl_context=tls.context(cert, key))


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with _https_pit(tmp_path_factory.mktemp("leaks")) as rig:
        yield rig


TABLE = "T2"   # the walk's table: T1 is the other tests'


def _this_table(path, body):
    """/api/tables as the walk's table's entry (the other's record is older than the walk)."""
    if path == "/api/tables" and isinstance(body, dict) and "tables" in body:
        return dict(body, tables=[t for t in body["tables"] if t["name"] == TABLE])
    return body


def _dicts(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _dicts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _dicts(v)


class Walker:
    """One role's logins, stream and reads over HTTPS."""

    def __init__(self, server, role, user=None, view_public=False):
        self.port, self.role = server.port, role
        self.token = server.login(user) if user else None
        self.query = "?view=public" if view_public else ""
        self.stream = Stream(self.port, self.token, tls=True, path="/api/events" + self.query)

    def headers(self):
        return {"Authorization": "Bearer " + self.token} if self.token else {}

    def get(self, path):
        sep = "&" if "?" in path else "?"
        return call(self.port, "GET", path + (sep + self.query[1:] if self.query else ""),
                    headers=self.headers(), tls=True)

    def reads(self):
        """Every GET the page and the API serve, as this role: {path: (status, body)}."""
        out = {}
        for path in ("/", "/table/T2", "/display/T2", "/table/T2/report", "/audit", "/api/tables",
                     "/api/tables/T2", "/api/tables/T2/report", "/api/audit", "/api/me", "/api/vocabulary",
                     "/metrics"):
            status, _h, body = self.get(path)
            out[path] = (status, _this_table(path, body))
        return out


def _metric(text, name, table):
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels.get("table") == table:
                return s.value
    return None


def _sync(walkers, sue, pred, timeout=15):
    """Until surveillance has the event ``pred`` names, and every other
    staff stream has come as far (the public hears of results only)."""
    seq = sue.stream.wait(lambda m: m["type"] == "event" and m["table"] == TABLE and pred(m["event"]),
                          timeout=timeout)["seq"]
    for w in walkers:
        if w.role != "public":
            w.stream.wait(lambda m: m.get("table") == TABLE and (m.get("seq") or 0) >= seq, timeout=timeout)
    return seq


def _staff_below(w):
    return w.role in ("viewer", "supervisor")


def _check_api_now(walkers, seq, timeline, point):
    """The API and recall as each role reads them at this point of the shoe."""
    allowed = shown_at(timeline(), seq)
    for w in walkers:
        if w.role == "surveillance":
            continue
        for path in ("/api/tables", "/api/tables/" + TABLE):
            status, _h, body = w.get(path)
            body = _this_table(path, body)
            assert status == 200, (w.role, path, status)
            leaked = cards_in(body) - allowed
            if w.role == "public":
                leaked = cards_in(body) - _result_cards(timeline)
            assert not leaked, "%s read %s at %s: %s" % (w.role, path, point, sorted(leaked))


def _result_cards(timeline):
    return shown_at(timeline(), 1 << 30)


def _deal_and_wait(server, service, emu, lines, streams):
    for line in lines:
        emu.deal(line)
    seq = service.runners["T1"].fold.state.seq
    for s in streams:
        s.wait(lambda m: (m.get("seq") or 0) >= seq, timeout=15)


def test_a_viewer_is_not_sent_a_face_down_hand_card_in_the_live_round(pit):
    """The P1 event loses its card for a viewer; the live round in the same
    message must not carry it either."""
    server, service, emus, _cfg = pit
    vic = Stream(server.port, server.login("vic"), tls=True)
    try:
        _deal_and_wait(server, service, emus["T1"], BURN + ("bets", "9H"), [vic])
        p1 = vic.wait(lambda m: m["type"] == "event" and m["event"].get("pos") == "P1")
    finally:
        vic.close()
    assert "9H" not in cards_in(p1), json.dumps(p1)


def test_a_held_card_is_in_no_irregularity_and_no_recall_before_its_round(pit):
    """Ch 13B(2): the extra card drawn face down after both hands stood is the
    next round's P1, still face down: not in the irregularity event a viewer
    is sent, nor in the recall the API gives before that round."""
    server, service, emus, _cfg = pit
    token = server.login("vic")
    vic = Stream(server.port, token, tls=True)
    try:
        _deal_and_wait(server, service, emus["T1"], BURN + ROUND1 + (HELD,), [vic])
        held = vic.wait(lambda m: m["type"] == "event" and m["event"].get("rule") == "13B2")
    finally:
        vic.close()
    assert HELD not in cards_in(held), json.dumps(held)
    status, _h, t1 = call(server.port, "GET", "/api/tables/T1", headers={"Authorization": "Bearer " + token},
                          tls=True)
    assert status == 200 and t1["recall"], t1
    assert HELD not in cards_in(t1["recall"]), t1["recall"]


def test_metrics_do_not_tell_a_viewer_that_an_edge_alert_is_open(pit):
    server, service, emus, cfg = pit
    emus["T1"].deal("shoe decks=8")
    end = time.monotonic() + 10
    while service.runners["T1"].shoe_id is None:
        assert time.monotonic() < end
        time.sleep(0.02)
    with db.Store(cfg.store) as store:
        rid = store.alert(service.runners["T1"].shoe_id, "info", "edge", EDGE)
    token = server.login("vic")
    status, _h, t1 = call(server.port, "GET", "/api/tables/T1", headers={"Authorization": "Bearer " + token},
                          tls=True)
    assert status == 200 and rid not in [a["id"] for a in t1["alerts"]]
    status, _h, text = call(server.port, "GET", "/metrics", headers={"Authorization": "Bearer " + token}, tls=True)
    assert status == 200
    assert _metric(text, "shoe_table_open_alerts", "T1") == len(t1["alerts"]), text
    status, _h, text = call(server.port, "GET", "/metrics", headers={"Authorization": "Bearer " + server.staff},
                            tls=True)
    assert _metric(text, "shoe_table_open_alerts", "T1") == len(t1["alerts"]) + 1, text


def test_every_message_and_endpoint_as_each_role(pit):
    """On table T2, whose record nothing else in this file touches."""
    server, service, emus, cfg = pit
    emu = emus["T2"]
    sue = Walker(server, "surveillance", "sue")
    walkers = [Walker(server, "public"), Walker(server, "public", "sam", view_public=True),
               Walker(server, "viewer", "vic"), Walker(server, "supervisor", "sam"), sue]

    def timeline():
        return face_up_by_seq([(m["seq"], m["event"]) for m in list(sue.stream.messages)
                               if m["type"] == "event" and "seq" in m and m["table"] == TABLE])
    try:
        for line in BURN + ROUND1 + (HELD,):
            emu.deal(line)
        seq = _sync(walkers, sue, lambda e: e.get("rule") == "13B2")
        # the held card's round has not begun: its card is nobody's below surveillance
        _check_api_now(walkers, seq, timeline, "the 13B(2) card held")
        # a supervisor asks the shoe's status: its answer names the held card and the hands
        sam = walkers[3]
        status, _h, r = call(server.port, "POST", "/api/tables/%s/command" % TABLE, {"command": "status"},
                             same_origin(server.port, True, sam.token), tls=True)
        assert status == 200, r
        _sync(walkers, sue, lambda e: e.get("source") == "link" and e.get("type") == "status")
        with db.Store(cfg.store) as store:
            seen = store.alert("WLK2", "warning", "gap", "events wait for a predecessor")
            secret = store.alert("WLK2", "info", "edge", EDGE)
        service.publish({"type": "alert", "table": TABLE, "shoe": "WLK2", "severity": "info",
                         "kind": "edge", "detail": EDGE, "id": secret})
        sue.stream.wait(lambda m: m["type"] == "alert" and m.get("id") == secret)
        for w in walkers:
            if w.role == "public":
                continue
            status, _h, text = w.get("/metrics")
            visible = [a for a in w.get("/api/tables/" + TABLE)[2]["alerts"]]
            assert status == 200 and _metric(text, "shoe_table_open_alerts", TABLE) == len(visible), (w.role, text)
            assert (secret in [a["id"] for a in visible]) == (w.role == "surveillance"), w.role
        assert seen in [a["id"] for a in walkers[2].get("/api/tables/" + TABLE)[2]["alerts"]]
        for line in ROUND2[:3]:  # bets (the held card is P1), B1, P2: all face down so far
            emu.deal(line)
        seq = _sync(walkers, sue, lambda e: e.get("card") == "KD")
        _check_api_now(walkers, seq, timeline, "round 2 before its counts")
        for line in ROUND2[3:] + ROUND3:
            emu.deal(line)
        # surveillance acknowledges the edge alert: the acknowledgement is as secret as the alert
        status, _h, r = call(server.port, "POST", "/api/tables/%s/ack-alert" % TABLE,
                             {"alert": secret, "reason": "priced, not played"},
                             same_origin(server.port, True, sue.token), tls=True)
        assert status == 200, r
        sue.stream.wait(lambda m: m["type"] == "ack" and m.get("alert") == secret)
        with db.Store(cfg.store) as store:
            still = store.alert("WLK2", "info", "edge", EDGE + " (again)")
        service.publish({"type": "alert", "table": TABLE, "shoe": "WLK2", "severity": "info",
                         "kind": "edge", "detail": EDGE + " (again)", "id": still})
        emu.deal("empty")  # 13E between rounds: the shoe ends, with its tallies
        _sync(walkers, sue, lambda e: e.get("type") == "shoe_end")
        reads = {w: w.reads() for w in walkers}
    finally:
        for w in walkers:
            w.stream.close()

    events = [m["event"] for m in sue.stream.messages if m["type"] == "event" and m["table"] == TABLE]
    # surveillance saw every secret go by: the checks below are not vacuous
    assert {"type", "rule", "card"} <= set(next(e for e in events if e.get("rule") == "13B2"))
    assert any(e.get("card") == "2C" and e.get("up") is False for e in events)
    assert any(e.get("type") == "shoe_end" and e.get("missing") for e in events)
    assert any(e.get("type") == "status" and HELD in e.get("held", ()) for e in events)
    t1 = reads[sue]["/api/tables/" + TABLE][1]
    assert t1["ranks_left"] is not None and any(a["kind"] == "edge" for a in t1["alerts"])
    assert any(i.get("card") == HELD for r in t1["recall"] for i in r["irregularities"])

    line = timeline()
    results = _result_cards(timeline)
    edge_ids = {secret, still}
    for w in walkers:
        if w.role == "surveillance":
            continue
        latest = 0
        for m in w.stream.messages:
            if m.get("table") == TABLE:
                latest = m.get("seq", latest)
            allowed = results if w.role == "public" else shown_at(line, latest)
            leaked = cards_in(m) - allowed
            assert not leaked, "%s was sent %s: %s" % (w.role, sorted(leaked), json.dumps(m)[:600])
            _no_secret_signal(w, m, edge_ids)
        raw = bytes(w.stream.raw).decode()
        for card in NEVER:
            assert '"%s"' % card not in raw, (w.role, card)
        for path, (status, body) in reads[w].items():
            ended_report = (w.role == "supervisor" and path == "/api/tables/%s/report" % TABLE
                            and status == 200 and not isinstance(body, str))
            if ended_report:
                pass   # the ended shoe's report for staff (docs/pages.md): checked below as every read is
            elif path in ("/api/tables/%s/report" % TABLE, "/api/audit", "/table/" + TABLE + "/report", "/audit"):
                # surveillance's own: refused, or the static page with no data in it
                assert status in (401, 403) or (status == 200 and isinstance(body, str)
                                                 and not _cards_in_text(body)), (w.role, path, status)
                continue
            if w.role == "public" and path == "/metrics":
                assert status in (401, 403)
                continue
            assert status == 200, (w.role, path, status, body)
            if isinstance(body, str):
                assert not (_cards_in_text(body) & (set(NEVER) | {HELD})), (w.role, path)
                assert "house edge" not in body and "dragon7" not in body, (w.role, path)
                continue
            leaked = cards_in(body) - (results if w.role == "public" else shown_at(line, 1 << 30))
            assert not leaked, "%s read %s: %s" % (w.role, path, sorted(leaked))
            if path != "/api/vocabulary":  # every kind's name, the same for all: no alert in it
                _no_secret_signal(w, body, edge_ids)
        metrics_text = reads[w]["/metrics"][1]
        if _staff_below(w):
            alerts = reads[w]["/api/tables/" + TABLE][1]["alerts"]
            assert _metric(metrics_text, "shoe_table_open_alerts", TABLE) == len(alerts), metrics_text
    # the public's view: results of completed rounds and nothing else
    for w in walkers:
        if w.role == "public":
            t1 = reads[w]["/api/tables/" + TABLE][1]
            assert t1["last_result"] is not None and "current" not in t1 and "recall" not in t1
            assert all(m["type"] == "event" and set(m) == {"type", "table", "live"} for m in w.stream.messages), \
                w.stream.messages[:3]


def _cards_in_text(text):
    return set(re.findall(r'"((?:10|[2-9TJQKA])[SHDC])"', text))


def _no_secret_signal(w, value, edge_ids):
    """No ranks left, no tallies of the shoe, no edge alert, its id or its acknowledgement."""
    for d in _dicts(value):
        assert "ranks_left" not in d and "shuffle" not in d, (w.role, d)
        assert d.get("kind") != "edge", (w.role, d)
        if d.get("type") == "shoe_end":
            assert not ({"counts", "missing", "excess"} & set(d)), (w.role, d)
        if d.get("type") == "ack" or "severity" in d:
            assert d.get("alert") not in edge_ids and d.get("id") not in edge_ids, (w.role, d)
    assert "house edge" not in json.dumps(value), w.role
