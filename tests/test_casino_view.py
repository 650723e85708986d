"""`shoe central view`: the pit page over the central record, read-only.

Two pits' signed shoes go through the real publisher, nats-server and the
real consumer into PostgreSQL; the view then answers the pit page's reads
from there (host_tools/central/view.py)."""

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest
from aiohttp.test_utils import TestClient, TestServer

from host_tools import cli
from host_tools.casino import publish
from host_tools.sim.rigs import servers
from host_tools.sim import simtable
from host_tools.central import view
from host_tools.store import db
from test_casino import casino, consume, dsn, hub, pg  # noqa: F401 (fixtures)
from test_roads import result

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOTS = os.path.join(ROOT, "test-output", "screenshots")
SHOES = {"P1": {"S1": ("T1", "BBPTPBBBPPTB")}, "P2": {"S2": ("T1", "PPBTBPPPB"), "S3": ("T2", "TBPB")}}
# Each outcome's four cards (P1, B1, P2, B2) and totals: both hands stand on two cards.
HANDS = {"B": (("2C", "9H", "3D", "KS"), 5, 9), "P": (("9H", "2C", "KS", "3D"), 9, 5),
         "T": (("9H", "9D", "KS", "KC"), 9, 9)}
PLACES = ("P1", "B1", "P2", "B2")


def game_events(letters, first_round=1):
    """A card set's events as a shoe sends them: the shoe, then per round
    bets, four cards and the result (test_roads' result event)."""
    out = [] if first_round > 1 else [{"type": "shoe", "decks": 8, "designation": "standard",
                                       "exposed": "simulated", "batch": "A", "cards": 416, "next": "P1"}]
    left = 416 - 4 * (first_round - 1)
    for n, letter in enumerate(letters, first_round):
        out.append({"type": "bets", "round": n})
        cards, ptotal, btotal = HANDS[letter]
        for i, (pos, card) in enumerate(zip(PLACES, cards)):
            left -= 1
            out.append({"type": "card", "round": n, "pos": pos, "card": card, "up": False,
                        "next": PLACES[i + 1] if i < 3 else None, "simulated": False, "left": left})
        out.append(dict(result(n, letter), player=[cards[0], cards[2]], banker=[cards[1], cards[3]],
                        player_total=ptotal, banker_total=btotal))
    return [json.dumps(e, separators=(",", ":")) for e in out]


class ScriptedShoe(simtable.SimShoe):
    """A simulated shoe signing given event texts (in order) instead of its own."""

    def __init__(self, shoe_id, key, texts):
        super().__init__(shoe_id, key)
        self.texts = list(texts)

    def body(self, seq):
        return self.texts.pop(0)


WHERE = {s: (pit, t) for pit, shoes in SHOES.items() for s, (t, _l) in shoes.items()}  # the registry


def make_pits(tmp_path):
    keydir = str(tmp_path / "keys")
    keys = simtable.make_keys(keydir, [s for shoes in SHOES.values() for s in shoes])
    sims = {}
    for pit, shoes in SHOES.items():
        with db.Store(str(tmp_path / ("%s.db" % pit))) as st:
            for shoe, (_t, letters) in shoes.items():
                texts = game_events(letters)
                sims[shoe] = ScriptedShoe(shoe, keys[shoe], texts)
                sims[shoe].deal(st, len(texts))
    return keydir, sims


def publish_pits(tmp_path, url, casino_name):
    n = 0
    for pit, shoes in SHOES.items():
        n += publish.drain(str(tmp_path / ("%s.db" % pit)), url, casino_name, pit,
                           {s: t for s, (t, _l) in shoes.items()})
    return n


def stored(tmp_path, pit, shoe):
    with db.open_existing(str(tmp_path / ("%s.db" % pit))) as st:
        return [e for (e,) in st.db.execute("SELECT event FROM events WHERE shoe_id = ? ORDER BY seq",
                                            (shoe,))]


def shoe_roads(tmp_path, pit, shoe, capsys):
    """`shoe roads --json` of the pit store's events of one shoe."""
    path = tmp_path / ("%s-%s.jsonl" % (pit, shoe))
    path.write_text("\n".join(stored(tmp_path, pit, shoe)) + "\n")
    capsys.readouterr()
    assert cli.main(["roads", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


async def sse_until(resp, table, timeout=15.0):
    """Read /api/events until a message names ``table``; returns it."""
    deadline = time.monotonic() + timeout
    kind = None
    while time.monotonic() < deadline:
        line = await asyncio.wait_for(resp.content.readline(), max(0.1, deadline - time.monotonic()))
        text = line.decode().strip()
        if text.startswith("event: "):
            kind = text[7:]
        elif text.startswith("data: "):
            msg = json.loads(text[6:])
            if msg.get("table") == table:
                return kind, msg
    raise AssertionError("no push for %s" % table)


def test_central_view_lists_every_pit_reads_roads_and_refuses_writes(tmp_path, hub, dsn, casino, capsys,
                                                                      monkeypatch):
    # only a notification can bring a change in time: the fallback poll is pushed out
    monkeypatch.setattr(view, "POLL_S", 60.0)
    keydir, sims = make_pits(tmp_path)
    total = publish_pits(tmp_path, hub.url, casino)
    consume(hub.url, dsn, keydir, casino, total, where=WHERE)

    async def main():
        async with TestClient(TestServer(view.make_app(dsn))) as c:
            r = await c.get("/api/tables")
            data = await r.json()
            names = [t["name"] for t in data["tables"]]
            assert names == ["P1/T1", "P2/T1", "P2/T2"]
            assert [t["shoe"] for t in data["tables"]] == ["S1", "S2", "S3"]
            assert all(t["alerts"] == [] for t in data["tables"])

            for pit, shoes in SHOES.items():
                for shoe, (tbl, letters) in shoes.items():
                    r = await c.get("/api/tables/%s%%2F%s" % (pit, tbl))
                    assert r.status == 200
                    t = await r.json()
                    assert t["roads"] == shoe_roads(tmp_path, pit, shoe, capsys)
                    assert len(t["scoreboard"]["bead_plate"]["cells"]) == len(letters)
                    assert t["round"] == len(letters) and t["designation"] == "standard"
                    ranks = t["ranks_left"]["ranks"]
                    assert sum(ranks.values()) == 416 - 4 * len(letters)
                    assert ranks["9"] == 32 - len(letters) - letters.count("T")
                    assert [r["round"] for r in t["recall"]][-1] == len(letters)
            r = await c.get("/api/tables/P1%2FT1/report")
            rep = await r.json()
            assert rep["chain"]["anchor"] == "S1:%d:%s" % (sims["S1"].seq, sims["S1"].prev)
            assert (await c.get("/api/tables/P9%2FT1")).status == 404

            me = await (await c.get("/api/me")).json()
            assert me == {"user": None, "role": None, "read_only": True}
            for path, body in (("/api/login", {"user": "a", "password": "b"}),
                               ("/api/logout", {}),
                               ("/api/tables/P1%2FT1/command", {"command": "bets", "confirm": True}),
                               ("/api/tables/P1%2FT1/ack-alert", {"alert": 1})):
                r = await c.post(path, json=body)
                assert r.status == 403, path
                err = (await r.json())["error"]
                assert "read-only" in err and "\n" not in err

            # more rounds at one table: the view is pushed (LISTEN/NOTIFY), not polled
            events = await c.get("/api/events")
            assert (await events.content.readline()).startswith(b": connected")
            with db.Store(str(tmp_path / "P1.db")) as st:
                texts = game_events("PP", first_round=len(SHOES["P1"]["S1"][1]) + 1)
                sims["S1"].texts = texts
                sims["S1"].deal(st, len(texts))
            loop = asyncio.get_running_loop()
            refreshes = c.app[view.VIEW].refreshes
            await loop.run_in_executor(None, publish_pits, tmp_path, hub.url, casino)
            t0 = time.monotonic()
            consumer = loop.run_in_executor(None, consume, hub.url, dsn, keydir, casino, total + 12)
            kind, msg = await sse_until(events, "P1/T1")
            pushed_in = time.monotonic() - t0
            await consumer
            assert kind == "event"
            t = await (await c.get("/api/tables/P1%2FT1")).json()
            assert t["round"] == 14 and t["roads"]["bead_plate"].endswith("PP")
            assert t["roads"] == shoe_roads(tmp_path, "P1", "S1", capsys)
            assert pushed_in < 15 and c.app[view.VIEW].refreshes > refreshes

            # forgeries at the pit's subject: the consumer's alerts reach the view too
            from host_tools.sim.rigs import casino as rig
            assert await rig.inject(hub.url, casino, "P1", str(tmp_path / "P1.db"), "S1") == 2
            consumer = loop.run_in_executor(None, lambda: consume(hub.url, dsn, keydir, casino,
                                                                  total + 12, timeout=3,
                                                                  where=WHERE))
            kind, msg = await sse_until(events, "P1/T1")
            await consumer
            assert kind == "alert"
            events.close()
            tables = (await (await c.get("/api/tables")).json())["tables"]
            # the two refusals are one merged alert (cause, device) with its count
            assert [sum(a["count"] for a in t["alerts"]) for t in tables] == [2, 0, 0]
            assert [len(t["alerts"]) for t in tables] == [1, 0, 0]
            assert {a["kind"] for a in tables[0]["alerts"]} == {"conflict"}
    asyncio.run(main())


def test_central_view_command_line_errors(capsys):
    assert cli.main(["central", "view"]) == 2
    assert "needs --dsn" in capsys.readouterr().err
    port = servers.free_port()
    assert cli.main(["central", "view", "--dsn", "host=127.0.0.1 port=%d dbname=x connect_timeout=2"
                     % port]) == 2
    err = capsys.readouterr().err
    assert err.startswith("central view: cannot connect") and err.count("\n") == 1


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium (make test installs it)")
def test_central_overview_in_chromium(tmp_path, hub, dsn, casino):
    from playwright.sync_api import sync_playwright
    from test_pit_browser import ARGS, WAIT_MS
    keydir, _sims = make_pits(tmp_path)
    consume(hub.url, dsn, keydir, casino, publish_pits(tmp_path, hub.url, casino), where=WHERE)
    port = servers.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "central", "view", "--dsn", dsn,
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert b"read-only" in proc.stdout.readline()
        base = "http://127.0.0.1:%d" % port
        os.makedirs(SHOTS, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 700})
            for _ in range(50):  # the server may still be binding
                try:
                    page.goto(base + "/")
                    break
                except Exception:
                    time.sleep(0.1)
            page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
            rows = page.locator("#tables tbody tr")
            assert [rows.nth(i).get_attribute("data-table") for i in range(rows.count())] == \
                ["P1/T1", "P2/T1", "P2/T2"]
            assert page.locator("h1").inner_text() == "Casino overview (central record)"
            assert page.locator("#read-only").is_visible() and page.locator("#login").count() == 0
            page.screenshot(path=os.path.join(SHOTS, "central.png"), full_page=True)
            page.locator("a", has_text="P2/T1").click()
            page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
            assert page.locator("#title").inner_text() == "Table P2/T1"
            assert page.locator("[data-road-grid=bead_plate] .cell").count() == len(SHOES["P2"]["S2"][1])
            assert not page.locator("#commands-panel").is_visible()
            page.screenshot(path=os.path.join(SHOTS, "central-table.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
