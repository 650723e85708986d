"""`shoe central view`: the pit page over the central record, read-only.

Two pits' signed shoes go through the real publisher, nats-server and the
real consumer into PostgreSQL; the view then answers the pit page's reads
from there (host_tools/central/view.py)."""

import asyncio
import collections
import json
import os
import select
import signal
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
from support.browser import OVERFLOW_JS, WAIT_MS
from support.pitclient import call
from prometheus_client.parser import text_string_to_metric_families
from support.casino import consume

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOTS = os.path.join(ROOT, "test-output", "screenshots")
SHOES = {"P1": {"S1": ("T1", "BBPTPBBBPPTB")}, "P2": {"S2": ("T1", "PPBTBPPPB"), "S3": ("T2", "TBPB")}}
# Each outcome's four cards (P1, B1, P2, B2) and totals: both hands stand on two cards.
HANDS = {"B": (("2C", "9H", "3D", "KS"), 5, 9), "P": (("9H", "2C", "KS", "3D"), 9, 5),
         "T": (("9H", "9D", "KS", "KC"), 9, 9)}


def game_lines(letters, first_round=1):
    """A dealing script whose rounds end as ``letters`` say: a new shoe and
    its burn (an ace, so one more card, Ch 5F) unless it carries on, then
    per round "no more bets" and four cards (both hands stand on two)."""
    out = [] if first_round > 1 else ["shoe decks=8 designation=standard exposed=simulated",
                                      "AS", "AH"]
    for letter in letters:
        out.append("bets")
        out += list(HANDS[letter][0])
    return out


class Script:
    """Dealing-script lines a test may add to after the shoe has dealt them all."""

    def __init__(self, lines):
        self.lines = collections.deque(lines)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.lines:
            raise StopIteration
        return self.lines.popleft()


def deal_all(sim, store):
    """Store every event the shoe makes of what its script holds; how many."""
    n = 0
    while True:
        try:
            sim.deal(store, 1)
        except StopIteration:
            return n
        n += 1


WHERE = {s: (pit, t) for pit, shoes in SHOES.items() for s, (t, _l) in shoes.items()}  # the registry


def make_pits(tmp_path):
    keydir = str(tmp_path / "keys")
    keys = simtable.make_keys(keydir, [s for shoes in SHOES.values() for s in shoes])
    sims = {}
    for pit, shoes in SHOES.items():
        with db.Store(str(tmp_path / ("%s.db" % pit))) as st:
            for shoe, (_t, letters) in shoes.items():
                sims[shoe] = simtable.SimShoe(shoe, keys[shoe], lines=Script(game_lines(letters)),
                                              workdir=str(tmp_path))
                deal_all(sims[shoe], st)
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
                    assert sum(ranks.values()) == 416 - 2 - 4 * len(letters)  # the burn, the rounds
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
                sims["S1"].stream.lines.lines.extend(
                    game_lines("PP", first_round=len(SHOES["P1"]["S1"][1]) + 1))
                more = deal_all(sims["S1"], st)
            loop = asyncio.get_running_loop()
            refreshes = c.app[view.VIEW].refreshes
            await loop.run_in_executor(None, publish_pits, tmp_path, hub.url, casino)
            t0 = time.monotonic()
            consumer = loop.run_in_executor(None, lambda: consume(hub.url, dsn, keydir, casino, total + more,
                                                                  where=WHERE))
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
                                                                  total + more, timeout=3,
                                                                  where=WHERE))
            kind, msg = await sse_until(events, "P1/T1")
            await consumer
            assert kind == "alert"
            events.close()
            tables = (await (await c.get("/api/tables")).json())["tables"]
            # the two refusals are one merged alert (cause, device) with its count
            assert [sum(a["count"] for a in t["alerts"]) for t in tables] == [2, 0, 0]
            assert [len(t["alerts"]) for t in tables] == [1, 0, 0]
            assert {a["kind"] for a in tables[0]["alerts"]} == {"forged_event"}
    asyncio.run(main())


def test_central_view_command_line_errors(capsys):
    assert cli.main(["central", "view"]) == 2
    assert "needs --dsn" in capsys.readouterr().err
    port = servers.free_port()
    assert cli.main(["central", "view", "--dsn", "host=127.0.0.1 port=%d dbname=x connect_timeout=2"
                     % port]) == 2
    err = capsys.readouterr().err
    assert err.startswith("central view: cannot connect") and err.count("\n") == 1


@pytest.fixture(scope="module")
def central_site(tmp_path_factory, hub, module_dsn, module_casino):
    """The Chromium tests' central record (three shoes of two pits,
    published and consumed, and an open alert as ingest would raise one)
    and `shoe central view` serving it: made once, only read by the tests."""
    import psycopg
    tmp = tmp_path_factory.mktemp("central-site")
    keydir, _sims = make_pits(tmp)
    consume(hub.url, module_dsn, keydir, module_casino, publish_pits(tmp, hub.url, module_casino), where=WHERE)
    with psycopg.connect(module_dsn, autocommit=True) as c:
        c.execute("INSERT INTO alerts (shoe_id, time, severity, kind, detail) VALUES"
                  " ('S2', %s, 'critical', 'rollback', 'the shoe''s hello is below the record')", (time.time(),))
    port = servers.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "central", "view", "--dsn", module_dsn,
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert b"read-only" in proc.stdout.readline()
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def _goto(page, url):
    for _ in range(50):  # the server may still be binding
        try:
            page.goto(url)
            return
        except Exception:
            time.sleep(0.1)
    page.goto(url)


def test_central_overview_in_chromium(central_site, chromium):
    port = central_site
    base = "http://127.0.0.1:%d" % port
    os.makedirs(SHOTS, exist_ok=True)
    page = chromium.new_page(viewport={"width": 1100, "height": 700})
    try:
        _goto(page, base + "/")
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
    finally:
        page.close()


ROADS = ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")


def completed_rounds(dsn, pit, tbl, through):
    """Real rounds completed in the table's current card set up to seq
    ``through``, read from the central record with SQL and plain JSON (the
    oracle: not the view's fold, not the roads library)."""
    import psycopg
    with psycopg.connect(dsn) as c:
        if c.execute("SELECT to_regclass('shoes')").fetchone()[0] is None:
            return 0  # no consumer has made the schema yet
        shoe = c.execute("SELECT shoe_id FROM shoes WHERE pit = %s AND tbl = %s ORDER BY updated DESC"
                         " LIMIT 1", (pit, tbl)).fetchone()
        if shoe is None:
            return 0
        shoe = shoe[0]
        rows = c.execute("SELECT type, event FROM events WHERE shoe_id = %s AND seq <= %s ORDER BY seq",
                         (shoe, through)).fetchall()
    n = 0
    for kind, text in rows:
        if kind == "shoe":
            n = 0
        elif kind == "result" and not json.loads(text)["simulated"]:
            n += 1
    return n


@pytest.mark.slow
def test_central_demo_tables_show_cards_roads_and_rounds_in_chromium(chromium):
    """`shoe central demo` as a user runs it (hub, leaves, two simulated
    pits of shoe streams, two consumers, PostgreSQL, the view): every
    table page shows the round's cards, all five roads and the last rounds,
    and its bead plate has one cell per completed round of the central
    record up to the seq the page says it shows. Screenshots at 1280 and
    1920 px wide go to test-output/screenshots/. Under -m slow (it deals
    20 rounds at every table at the demo's pace); by default the demo runs
    to its verified exit (test_casino_access.py) and the view's pages are
    read in Chromium from a central record made here (the tests above and
    below)."""
    port = servers.free_port()
    # The demo deals until the test has seen what it needs and stops it
    # (Ctrl-C): with a fixed 30 s of dealing, a loaded machine ended the
    # dealing (and the view) before 20 rounds had reached the central record.
    # At 6 events a second a shoe (about 550 events) lasts 90 s or more, so
    # the pages are read well before the next shoe starts its rounds over.
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "central", "demo", "--seconds", "900",
                             "--tables", "2", "--rate", "6", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    out = []
    try:
        # Its start (PostgreSQL's initdb, the hub, the leaves, certificates)
        # until it says it deals, or exits: 60 s ran out on a loaded machine.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if not select.select([proc.stdout], [], [], 1.0)[0]:
                continue
            line = proc.stdout.readline()
            assert line, "".join(out)
            out.append(line)
            if "dealing for" in line:
                break
        assert out and "dealing for" in out[-1], "".join(out)
        # the read-only role's DSN the demo prints for psql (its password in a passfile, never printed)
        dsn = next(line for line in out if line.startswith("  look: psql")).split('"')[1]
        # Until every table's shoe has 20 completed rounds.
        deadline = time.monotonic() + 300
        while min(completed_rounds(dsn, pit, tbl, 10 ** 9) for pit in ("P1", "P2")
                  for tbl in ("T1", "T2")) < 20:
            assert time.monotonic() < deadline, "the demo's tables did not reach 20 rounds in 300 s"
            assert proc.poll() is None, "the demo stopped before its tables reached 20 rounds"
            time.sleep(0.5)
        os.makedirs(SHOTS, exist_ok=True)
        for width in (1280, 1920):
            page = chromium.new_page(viewport={"width": width, "height": 900})
            page.goto("http://127.0.0.1:%d/" % port)
            page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
            rows = page.locator("#tables tbody tr")
            names = [rows.nth(i).get_attribute("data-table") for i in range(rows.count())]
            assert names == ["P1/T1", "P1/T2", "P2/T1", "P2/T2"]
            page.screenshot(path=os.path.join(SHOTS, "central-demo-%d.png" % width), full_page=True)
            for name in names:
                page.goto("http://127.0.0.1:%d/table/%s" % (port, name.replace("/", "%2F")))
                page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
                # one read of the drawn page: the line and the board come from one JSON
                line, beads, cells, cards, recall = page.evaluate("""() => [
                    document.getElementById('state').textContent,
                    document.querySelectorAll('[data-road-grid=bead_plate] .cell').length,
                    %s.map(r => document.querySelectorAll('[data-road-grid=' + r + '] .cell').length),
                    document.querySelectorAll('#round [data-pos] [data-card]').length,
                    [...document.querySelectorAll('#recall tr[data-recall-round]')].map(
                        r => r.querySelectorAll('[data-card]').length)]""" % json.dumps(list(ROADS)))
                through = int(line.split("stored through seq ")[1].split()[0])
                rounds = completed_rounds(dsn, *name.split("/"), through)
                assert rounds >= 20, (name, line)
                assert beads == rounds, (name, line)
                assert all(n > 0 for n in cells), (name, dict(zip(ROADS, cells)))
                assert len(recall) == 10 and all(n >= 4 for n in recall), (name, recall)
                assert cards > 0 or page.locator("#round [data-status=open]").count() == 1, name
                if name == "P2/T1":
                    page.screenshot(path=os.path.join(SHOTS, "central-demo-table-%d.png" % width),
                                    full_page=True)
            page.close()
    finally:
        # Ctrl-C: the demo stops its pits (each drains for up to 30 s), waits
        # up to 120 s for central to catch up, then verifies the central
        # record; on a loaded machine all that took more than 120 s, and the
        # demo's last lines were lost with it. It is given until it exits.
        os.killpg(proc.pid, signal.SIGINT)
        try:
            rest = proc.communicate(timeout=600)[0]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rest = proc.communicate()[0]
    assert "lost 0, duplicated 0, extra 0" in rest and "the central record is every shoe's own: exit 0" in rest, rest


# The central view's pages at 1280 and 1920 px: screenshots beside the pit's in test-output/pages/.
PAGES = os.path.join(ROOT, "test-output", "pages")


def test_central_pages_fit_1280_and_1920_and_metrics_scrape(central_site, chromium):
    port = central_site
    base = "http://127.0.0.1:%d" % port
    os.makedirs(PAGES, exist_ok=True)
    for width in (1280, 1920):
        page = chromium.new_page(viewport={"width": width, "height": 1000})
        try:
            for path, name in (("/", "central"), ("/table/P2%2FT1", "central-table"),
                               ("/table/P2%2FT1/report", "central-report"),
                               ("/display/P2%2FT1", "central-display"), ("/audit", "central-audit")):
                _goto(page, base + path)
                page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
                page.wait_for_timeout(150)
                page.screenshot(path=os.path.join(PAGES, "%s-%d.png" % (name, width)), full_page=True)
                out = page.evaluate(OVERFLOW_JS)
                assert out["scroll"] <= out["vw"] and out["bad"] == [], (path, width, out)
                text = page.inner_text("body")
                if name == "central-display":  # the player display of a table in the record
                    assert page.locator("[data-road-grid=bead_plate] .cell").count() > 0
                    assert "rollback" not in text and "Cards left" not in text
                if name == "central-audit":  # a page that says where the audit log is, not a 404
                    assert "audit log is the pit's" in text and page.locator("a#pit-log").count() == 1
                if name == "central-report":  # what central does not hold is named, not "no card dealt"
                    assert "No card dealt yet" not in text and "not kept at central" in text
        finally:
            page.close()
    status, h, text = call(port, "GET", "/metrics")
    assert status == 200, text
    samples = {(s.name, tuple(s.labels.items())): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("shoe_table_recording", (("table", "P2/T1"),))] == 1
    assert samples[("shoe_table_last_seq", (("table", "P2/T1"),))] > 0
    assert samples[("shoe_table_open_alerts", (("table", "P2/T1"),))] >= 1
    assert ("shoe_central_refresh_seconds_count", ()) in samples
