"""Who sees what at the pit, tried as the people it is built against
(BRIEF, "Who may see what"): an anonymous client on the LAN reading the
page, the API and the event stream; a viewer trying to command or to
acknowledge a critical alert; a supervisor and surveillance doing their jobs.

Real emulated shoes record into a real pit (tests/support/pitrig.py); every request
is plain http.client with the headers the test chooses.
"""

import json
import time

import pytest

from host_tools.store import db
from support.pitclient import Stream, call, same_origin
from support.pitrig import running_pit

BURNS = ("AS", "2C")          # the exposed first burn card and the one burned face down after it
ROUND = ("9H", "8D", "KS", "2S")  # Player 9-K = 9 (natural), Banker 8-2 = 0


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with running_pit(tmp_path_factory.mktemp("roles"), {"T1": "ROL1", "T2": "ROL2"}) as rig:
        yield rig


def _login(server, user):
    return server.login(user)


def _deal_a_shoe_and_a_round(server, emu, streams):
    for line in ("shoe decks=8",) + BURNS + ("bets",) + ROUND:
        emu.deal(line)
    for s in streams:
        s.wait(lambda m: m["type"] == "event" and (m.get("live") or {}).get("last_result")
               and m["live"]["last_result"]["round"] == 1 and m["table"] == "T1")


def test_anonymous_stream_api_and_page_never_carry_a_burn_card_ranks_left_or_an_edge_alert(pit):
    server, service, emus, cfg = pit
    anon = Stream(server.port)
    sue = Stream(server.port, server.staff)
    try:
        _deal_a_shoe_and_a_round(server, emus["T1"], [anon, sue])
        with db.Store(cfg.store) as store:
            rid = store.alert("ROL1", "warning", "edge", "dragon7 house edge -3.1 % with 40 cards left")
        service.publish({"type": "alert", "table": "T1", "shoe": "ROL1", "severity": "warning",
                         "kind": "edge", "detail": "dragon7 house edge -3.1 % with 40 cards left", "id": rid})
        sue.wait(lambda m: m["type"] == "alert" and m["kind"] == "edge")
        time.sleep(0.3)  # anything the anonymous stream would get has arrived by now
    finally:
        anon.close()
        sue.close()
    # surveillance saw the burn cards go by: the check below is not vacuous
    assert any(m["type"] == "event" and m["event"].get("card") == "2C" and m["event"].get("up") is False
               for m in sue.messages)
    raw = bytes(anon.raw).decode()
    for secret in ('"2C"', '"AS"', '"up"', "ranks_left", "cards_left", "dragon7", '"alert"', "edge"):
        assert secret not in raw, (secret, raw[:2000])
    # what the public is there for: the result of the completed round
    assert any(m.get("live", {}).get("last_result", {}) and m["live"]["last_result"]["winner"] == "player"
               for m in anon.messages), anon.messages
    status, _h, t1 = call(server.port, "GET", "/api/tables/T1")
    assert status == 200
    assert t1["last_result"]["winner"] == "player" and t1["roads"]["bead_plate"] == "P"
    text = json.dumps(t1)
    for key in ("ranks_left", "cards_left", "current", "recall", "alerts", "next", "line", "seq", '"AS"', '"2C"'):
        assert key not in text, key
    status, _h, listing = call(server.port, "GET", "/api/tables")
    assert status == 200 and "alerts" not in json.dumps(listing) and "ranks_left" not in json.dumps(listing)
    for path in ("/", "/table/T1", "/display/T1"):
        status, _h, page = call(server.port, "GET", path)
        assert status == 200 and "dragon7" not in page and "2C" not in page, path
    for path in ("/api/tables/T1/report", "/api/audit"):
        assert call(server.port, "GET", path)[0] in (401, 403), path


def test_a_viewer_sees_the_round_but_no_burn_card_no_ranks_left_and_no_edge_alert(pit):
    server, service, emus, cfg = pit
    vic = _login(server, "vic")
    status, _h, t1 = call(server.port, "GET", "/api/tables/T1", headers={"Authorization": "Bearer " + vic})
    assert status == 200 and "recall" in t1 and "ranks_left" not in t1
    assert all(a["kind"] != "edge" for a in t1["alerts"])
    status, _h, t1 = call(server.port, "GET", "/api/tables/T1", headers={"Authorization": "Bearer " + server.staff})
    assert status == 200 and t1["ranks_left"] is not None
    assert any(a["kind"] == "edge" for a in t1["alerts"])
    stream = Stream(server.port, vic)
    try:
        for line in ("shoe decks=8", "3S", "7C", "9C", "4D", "bets"):  # 3 exposed: three more burned face down
            emus["T1"].deal(line)
        stream.wait(lambda m: m["type"] == "event" and m["event"].get("type") == "bets")
    finally:
        stream.close()
    raw = bytes(stream.raw).decode()
    assert [w for w in ('"7C"', '"9C"', '"4D"', "edge") if w in raw] == []
    assert any(m["type"] == "event" and m["event"].get("pos") == "BURN" for m in stream.messages)


def test_a_viewer_can_neither_command_nor_acknowledge_and_a_supervisor_can(pit):
    server, _service, _emus, cfg = pit
    with db.Store(cfg.store) as store:
        critical = store.alert("ROL2", "critical", "rollback", "the shoe's hello is below the record")
        warning = store.alert("ROL2", "warning", "forged_event", "3 frames whose tag does not verify")
    vic, sam = _login(server, "vic"), _login(server, "sam")
    port = server.port
    for body in ({"command": "status"}, {"command": "time"}, {"command": "bets", "confirm": True}):
        status, _h, r = call(port, "POST", "/api/tables/T2/command", body, same_origin(port, token=vic))
        assert status == 403, (body, r)
    for alert in (critical, warning):
        status, _h, r = call(port, "POST", "/api/tables/T2/ack-alert", {"alert": alert, "reason": "seen"},
                             same_origin(port, token=vic))
        assert status == 403, r
    # surveillance acknowledges a warning, not a critical kind
    status, _h, r = call(port, "POST", "/api/tables/T2/ack-alert", {"alert": critical, "reason": "checked"},
                         same_origin(port, token=server.staff))
    assert status == 403, r
    # a supervisor: an acknowledgement needs a reason
    status, _h, r = call(port, "POST", "/api/tables/T2/ack-alert", {"alert": critical},
                         same_origin(port, token=sam))
    assert status == 400 and "reason" in r["error"]
    status, _h, r = call(port, "POST", "/api/tables/T2/ack-alert",
                         {"alert": critical, "reason": "journal restored by the vendor, ticket 42"},
                         same_origin(port, token=sam))
    assert status == 200, r
    status, _h, r = call(port, "POST", "/api/tables/T2/command", {"command": "status"},
                         same_origin(port, token=sam))
    assert status == 200, r
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT user, action, target, outcome FROM audit_log"))
    assert ("sam", "ack", str(critical), "ok: journal restored by the vendor, ticket 42") in rows
    assert any(r[0] == "vic" and r[1] == "ack" and r[3].startswith("refused") for r in rows), rows


def test_a_dead_table_loop_is_a_critical_alert_only_a_supervisor_acknowledges(pit):
    server, service, _emus, _cfg = pit
    service.runners["T2"].kill("a fault, for the test")
    port, end = server.port, time.monotonic() + 20
    while True:
        _s, _h, t2 = call(port, "GET", "/api/tables/T2", headers={"Authorization": "Bearer " + server.staff})
        stopped = [a for a in t2["alerts"] if a["kind"] == "recording_stopped"]
        if stopped:
            break
        assert time.monotonic() < end, t2["alerts"]
        time.sleep(0.05)
    (alert,) = stopped
    assert alert["severity"] == "critical" and "a fault, for the test" in alert["detail"]
    body = {"alert": alert["id"], "reason": "restarted by the supervisor thread"}
    for token in (server.login("vic"), server.staff):
        assert call(port, "POST", "/api/tables/T2/ack-alert", body, same_origin(port, token=token))[0] == 403
    assert call(port, "POST", "/api/tables/T2/ack-alert", body, same_origin(port, token=server.login("sam")))[0] == 200


def test_adduser_is_a_setting_change_in_the_audit_log(pit):
    import subprocess
    import sys
    _server, _service, _emus, cfg = pit
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "pit", "adduser", "ann", "--role", "viewer",
                        "--password-stdin", "--config", cfg.path], input="a long enough password\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT action, target, client FROM audit_log WHERE action = 'setting'"))
    assert ("setting", "user ann role viewer", "localhost") in rows
