"""Who reads the end-of-shoe report (docs/pages.md): surveillance at any
time; a supervisor once the shoe has ended, without what surveillance alone
may see (ranks left, the shuffle score, edge alerts, the cards an
irregularity names); a viewer and the public never. The report lists every
round of the shoe."""

import json
import time

from support.outcomes import Dealer
from support.pitrig import running_pit
from host_tools.store import db

ROUNDS = ["B", "Pn", "T"]


def _get(server, path, who):
    status, body = server.request("GET", path, token=who)
    return status, body


def test_the_report_is_a_supervisors_once_the_shoe_has_ended(tmp_path):
    with running_pit(tmp_path, {"T1": "REP1"}) as (server, service, emus, cfg):
        sam, vic, sue = server.login("sam"), server.login("vic"), server.staff
        dealer = Dealer(emus["T1"])
        dealer.new_shoe()
        dealer.round("B")
        with db.Store(cfg.store) as store:
            store.alert("REP1", "warning", "edge", "dragon7 house edge -2.4 % with 38 cards left")
            store.alert("REP1", "warning", "reader", "a reader fault")
        # in play: surveillance's only
        status, body = _get(server, "/api/tables/T1/report", sam)
        assert status == 403 and "in play" in body["error"], body
        assert _get(server, "/api/tables/T1/report", vic)[0] == 403
        assert _get(server, "/api/tables/T1/report", None)[0] == 401
        # the cover card, the hand, "last hand", one more hand: the shoe ends (Ch 9D)
        emus["T1"].deal("cover")
        dealer.round("Pn")
        dealer.round("T", bets=False)
        runner = service.runners["T1"]
        end = time.monotonic() + 20
        while runner.fold.state.ended is None:
            assert time.monotonic() < end, "the shoe did not end"
            time.sleep(0.05)
        status, full = _get(server, "/api/tables/T1/report", sue)
        assert status == 200 and full["ended"] is not None
        assert full["ranks_left"] is not None and "shuffle" in full
        assert any(a["kind"] == "edge" for a in full["alerts"])
        status, mine = _get(server, "/api/tables/T1/report", sam)
        assert status == 200, mine
        text = json.dumps(mine)
        assert "ranks_left" not in mine and "shuffle" not in mine and "dragon7" not in text and '"edge"' not in text
        assert any(a["kind"] == "reader" for a in mine["alerts"]) and mine["partial"]
        assert all("card" not in i for i in mine["irregularities"])
        # every round, in order, with its hands as dealt
        for rep in (full, mine):
            rounds = [(r["round"], r["status"], r.get("winner")) for r in rep["rounds"]]
            assert rounds == [(1, "result", "banker"), (2, "result", "player"), (3, "result", "tie")], rounds
            assert rep["rounds"][1]["natural"] and rep["rounds"][1]["player_pair"]
            assert len(rep["rounds"][0]["player"]) == 2 and len(rep["rounds"][0]["banker"]) == 2
        assert _get(server, "/api/tables/T1/report", vic)[0] == 403
        # the audit page's search runs over the whole log on the server
        status, log = _get(server, "/api/audit?action=login", sue)
        assert status == 200 and log["rows"] and {r["action"] for r in log["rows"]} == {"login"}
        assert "login" in log["actions"] and "read" in log["actions"]
        status, log = _get(server, "/api/audit?q=in%20play", sue)
        assert status == 200 and log["rows"] and all("in play" in r["outcome"] for r in log["rows"]), log
        assert {r["user"] for r in log["rows"]} == {"sam"}
        status, log = _get(server, "/api/audit?q=100%25_", sue)  # % and _ are literal, not wildcards
        assert status == 200 and log["rows"] == []
        assert _get(server, "/api/audit?q=sam", sam)[0] == 403
