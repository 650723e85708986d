"""The pit page in real headless Chromium (Debian's `chromium`, driven by Playwright).

Two emulated shoes (the firmware in the MicroPython VM, on ptys) record into
a real pit service whose aiohttp app serves the page on 127.0.0.1; the
browser reads it as a pit screen does. What is checked is what the page
draws: the scoreboard's cells are read back from their data attributes and
compared with `shoe roads --json` run on `shoe export` of the same store.

`make test` installs chromium first when it is missing and it can (root);
without it these tests FAIL with one line, they are never skipped.
Screenshots go to test-output/screenshots/ (gitignored).
"""

import json
import os
import subprocess
import sys
import time

import pytest

from host_tools.roads.board import grid
from host_tools.store import db
from support.browser import WAIT_MS, login_context
from support.pitrig import PASSWORD, running_pit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOTS = os.path.join(ROOT, "test-output", "screenshots")

from support.outcomes import LETTERS, SEQUENCE, Dealer  # noqa: E402,F401


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with running_pit(tmp_path_factory.mktemp("pitweb"), {"T1": "WEB1", "T2": "WEB2"}) as rig:
        yield rig


def _url(server, path):
    return "http://127.0.0.1:%d%s" % (server.port, path)


def _open(browser, server, path, user=None):
    context = login_context(browser, _url(server, ""), user, PASSWORD)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(_url(server, path))
    page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
    if user:
        page.wait_for_selector("[data-user=%s]" % user, timeout=WAIT_MS)
    page.errors = errors
    return context, page


def _shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, name), full_page=True)


def _cli(*args):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli"] + list(args), capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_overview_loads_with_every_table(chromium, pit):
    server, _service, _emus, _cfg = pit
    context, page = _open(chromium, server, "/", user="vic")
    try:
        rows = page.eval_on_selector_all("#tables tbody tr", "rs => rs.map(r => [r.dataset.table, "
                                         "r.dataset.recording, r.querySelector('[data-field=line]').textContent,"
                                         "r.querySelector('[data-field=line]').title])")
        assert [r[0] for r in rows] == ["T1", "T2"]
        for name, recording, words, line in rows:  # in plain words; the bridge's line is the title
            assert recording == "yes" and words == "Recording" and line.startswith("RECORDING: shoe WEB"), rows
        page.click("a[href='/table/T2']")
        page.wait_for_selector("body[data-page=table][data-loaded=yes]", timeout=WAIT_MS)
        assert page.text_content("#title") == "Table T2"
        assert page.errors == []
    finally:
        context.close()


def test_a_dealt_card_appears_on_the_table_page_as_it_is_dealt(chromium, pit):
    """Each card dealt is drawn on the table page, in its place, without a
    reload (the pit pushes it; the page fetches the table when told). The
    time from deal to drawing is printed as a figure, not asserted: a loaded
    machine (two suites side by side) stretches it past any fixed second,
    and the pit's latency has its own bench (`shoe bench pit`: card ->
    durable -> page p99s)."""
    server, _service, emus, _cfg = pit
    dealer = Dealer(emus["T2"])
    dealer.new_shoe()
    context, page = _open(chromium, server, "/table/T2", user="sue")  # ranks left: surveillance's
    try:
        page.wait_for_selector("#round [data-status=open]", timeout=WAIT_MS)  # betting closed, P1 due
        times = []
        for card in ("9H", "8D", "KS", "2S"):
            sent = time.monotonic()
            emus["T2"].deal(card)
            page.wait_for_selector("#round [data-card='%s']" % card, timeout=WAIT_MS)
            times.append(time.monotonic() - sent)
        print("card dealt -> drawn on the table page: %s s" % ", ".join("%.3f" % t for t in times))
        page.wait_for_selector("#round [data-status=result]", timeout=WAIT_MS)
        assert "Player wins (natural)" in page.text_content("#outcome")
        positions = page.eval_on_selector_all("#round [data-pos] [data-card]",
                                              "cs => cs.map(c => [c.parentNode.dataset.pos, c.dataset.card])")
        assert positions == [["P1", "9H"], ["P2", "KS"], ["B1", "8D"], ["B2", "2S"]]
        # cards left per rank add up to the shoe's own count of cards left
        total = int(page.get_attribute("#ranks", "data-total"))
        assert total == int(page.text_content("#left")) == 416 - 2 - 4
        assert page.get_attribute("#ranks [data-rank='9']", "data-left") == str(32 - 1)
        assert page.errors == []
    finally:
        context.close()


def test_the_drawn_roads_match_shoe_roads_on_the_exported_store(chromium, pit, tmp_path):
    server, _service, emus, cfg = pit
    dealer = Dealer(emus["T1"])
    dealer.new_shoe()
    for i, outcome in enumerate(SEQUENCE):
        dealer.round(outcome, bets=i + 1 < len(SEQUENCE))
    context, page = _open(chromium, server, "/table/T1")
    try:
        page.wait_for_selector("[data-road-grid=bead_plate][data-cells='%d']" % len(SEQUENCE), timeout=WAIT_MS)
        cells = page.eval_on_selector_all(".cell[data-road]", "cs => cs.map(c => Object.assign({}, c.dataset))")
        asked = page.eval_on_selector_all("[data-ask-side] [data-road]",
                                          "ms => ms.map(m => [m.parentNode.dataset.askSide, m.dataset.road, "
                                          "m.dataset.mark])")
        counts = page.eval_on_selector_all("[data-count]", "cs => cs.map(c => [c.dataset.count, "
                                           "c.querySelector('b').textContent])")
        _shot(page, "table.png")
        assert page.errors == []
    finally:
        context.close()

    export = tmp_path / "t1.jsonl"
    export.write_text(_cli("export", "--db", cfg.store, "--shoe", "WEB1"))
    want = json.loads(_cli("roads", "--json", str(export)))
    assert want["bead_plate"] == LETTERS  # the shoe dealt what was meant

    by_road = {}
    for c in cells:
        by_road.setdefault(c["road"], {})[(int(c["col"]), int(c["row"]))] = c
    # Bead Plate: one bead per round, top to bottom, then the next column
    assert {k: c["mark"] for k, c in by_road["bead_plate"].items()} == {
        (i // 6, i % 6): m for i, m in enumerate(want["bead_plate"])}
    # Big Road and the derived roads: placed as grid() places `shoe roads`' logical columns
    for road in ("big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        expected = {}
        for column, places in zip(want[road], grid(want[road])):
            for mark, xy in zip(column, places):
                expected[xy] = mark
        drawn = {k: c["mark"] for k, c in by_road.get(road, {}).items()}
        assert drawn == expected, road
    ties = {}
    for c in by_road["big_road"].values():
        ties.setdefault(int(c["lcol"]), {})[int(c["lrow"])] = int(c["ties"])
    assert [[ties[col][row] for row in sorted(ties[col])] for col in sorted(ties)] == want["big_road_ties"]
    assert any(int(c["lrow"]) >= 6 and int(c["row"]) == 5 for c in by_road["big_road"].values()), \
        "the streak of nine should run along the bottom row as a dragon tail"
    # pair dots and natural marks: one per counted round that had one
    beads = by_road["bead_plate"].values()
    n = want["counts"]
    assert sum(int(c["bankerPair"]) for c in beads) == n["banker_pair"] == 1
    assert sum(int(c["playerPair"]) for c in beads) == n["player_pair"] == 1
    assert sum(int(c["natural"]) for c in beads) == n["natural"] == 3
    assert {(s, r): (None if m == "none" else m) for s, r, m in asked} == {
        (s, r): want["ask"][s][r] for s in ("banker", "player") for r in want["ask"][s]}
    assert dict(counts) == {k: str(v) for k, v in n.items()}

    # the printable report of the same shoe: its summary and a clean record
    context, page = _open(chromium, server, "/table/T1/report", user="sue")
    try:
        facts = dict(page.eval_on_selector_all("#summary-facts tr", "rs => rs.map(r => "
                                               "[r.cells[0].textContent, r.cells[1].textContent])"))
        assert facts["Banker / Player / Tie"] == "%(banker)d / %(player)d / %(tie)d" % n
        assert facts["Rounds on the roads"] == str(len(SEQUENCE))
        assert page.text_content("#irregularity-list") == "None."
        assert page.eval_on_selector("[data-road-grid=big_road]", "g => g.dataset.cells") == str(
            sum(len(c) for c in want["big_road"]))
        _shot(page, "report.png")
    finally:
        context.close()


def test_an_alert_acknowledged_by_a_supervisor_disappears_for_every_viewer(chromium, pit):
    server, _service, _emus, cfg = pit
    with db.Store(cfg.store) as store:
        alert_id = store.alert("WEB2", "warning", "forged_event", "<b>3 frames</b> whose tag does not verify")
    sup_ctx, sup = _open(chromium, server, "/table/T2", user="sam")
    view_ctx, viewer = _open(chromium, server, "/table/T2", user="vic")
    over_ctx, overview = _open(chromium, server, "/", user="vic")
    try:
        selector = "[data-alert='%d']" % alert_id
        for page in (sup, viewer):
            page.wait_for_selector(selector, timeout=WAIT_MS)
        # the store's text is shown as text, never parsed as markup
        assert "<b>3 frames</b>" in viewer.text_content(selector)
        assert viewer.query_selector(selector + " b b") is None
        assert viewer.is_disabled(selector + " button.ack")
        assert overview.text_content("tr[data-table=T2] [data-field=alerts]") == "1"
        _shot(overview, "overview.png")
        sup.click(selector + " button.ack")
        sup.fill("#ack-reason", "seen on the camera")
        sup.click("#ack-yes")
        for page in (sup, viewer):
            page.wait_for_selector(selector, state="detached", timeout=2000)
        # a selector, not wait_for_function(string): the page's CSP forbids eval
        overview.wait_for_selector("tr[data-table=T2] [data-field=alerts]:text-is('0')", timeout=2000)
        with db.Store(cfg.store) as store:
            rows = list(store.db.execute("SELECT user, action, target FROM audit_log WHERE action = 'ack'"))
        assert ("sam", "ack", str(alert_id)) in rows
        assert sup.errors == [] and viewer.errors == [] and overview.errors == []
    finally:
        for ctx in (sup_ctx, view_ctx, over_ctx):
            ctx.close()


def test_without_a_login_no_command_can_be_sent(chromium, pit):
    server, _service, _emus, _cfg = pit
    context, page = _open(chromium, server, "/table/T2")
    try:
        for cmd in ("bets", "exposed", "new_shoe", "clear_tilt", "status"):
            assert page.is_disabled("[data-command=%s]" % cmd), cmd
        status = _post_bets(page)
        assert status == 401
    finally:
        context.close()
    # a viewer's login sends no command at all (roles.py)
    context, page = _open(chromium, server, "/table/T2", user="vic")
    try:
        assert page.is_disabled("[data-command=bets]") and page.is_disabled("[data-command=status]")
        status = _post_bets(page)
        assert status == 403
    finally:
        context.close()


def _post_bets(page):
    """The page, with its own login cookie, POSTs a confirmed ``bets`` to T2 (as a script
    on the page could, controls or not); returns the HTTP status."""
    return page.evaluate("""async () => (await fetch('/api/tables/T2/command', {method: 'POST',
        headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({command: 'bets', confirm: true})})).status""")


def test_a_supervisors_command_waits_for_the_confirmation(chromium, pit):
    server, _service, _emus, cfg = pit
    context, page = _open(chromium, server, "/table/T2", user="sam")
    try:
        page.click("[data-command=bets]")
        page.wait_for_selector("dialog#confirm[open]", timeout=WAIT_MS)
        page.click("#confirm-no")
        # selectors, not wait_for_function(string): the page's CSP forbids eval, the tests' included
        page.wait_for_selector("#reply:text-matches('^cancelled')", timeout=WAIT_MS)
        page.click("[data-command=bets]")
        page.click("#confirm-yes")
        page.wait_for_selector("#reply:text-matches('^(ok|error|refused)')", timeout=WAIT_MS)
        with db.Store(cfg.store) as store:
            rows = list(store.db.execute("SELECT user, target FROM audit_log WHERE action = 'command'"))
        assert rows.count(("sam", "bets")) == 1, rows  # the cancelled one was never sent
    finally:
        context.close()


def test_the_end_of_shoe_report_prints_the_anchor(chromium, pit):
    server, _service, emus, cfg = pit
    Dealer(emus["T2"]).new_shoe()  # the report covers the card set now in the shoe
    context, page = _open(chromium, server, "/table/T2/report", user="sue")
    try:
        anchor = page.text_content("#anchor")
        with db.Store(cfg.store) as store:
            info = store.shoe("WEB2")
        shoe, seq, mac = anchor.split(":")
        assert shoe == "WEB2" and int(seq) <= info["last_seq"] and len(mac) == 32
        page.emulate_media(media="print")
        assert not page.is_visible("#print")  # the print stylesheet hides the controls
        assert page.errors == []
    finally:
        context.close()
    key = emus["T2"].key_path
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", cfg.store, "--shoe", "WEB2",
                        "--key-file", key, "--anchor", anchor, "--mac-only"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_pits_edge_monitor_turns_a_favourable_wager_into_a_stored_alert(tmp_path):
    """EdgeWatch (host_tools/pit/edges.py) with the real EdgeMonitor and a real
    store: a one-deck shoe dealt down to its four nines and eight low cards
    makes Lucky Nines player-favourable (tests/unit/test_edges.py says why); the
    pit stores an `edge` alert per wager that turned, pushes each, and a
    result repeating the same composition raises nothing more."""
    from host_tools.pit.edges import EdgeWatch
    from host_tools.settle.core import cards

    class FakePit:
        def __init__(self):
            self.messages = []

        def publish(self, message):
            self.messages.append(message)

    keep = [cards.make(8, s) for s in range(4)] + [cards.make(r, s) for r in (1, 2) for s in range(4)]
    left = [1] * 52
    for c in keep:
        left[c] -= 1
    events = [{"type": "shoe", "decks": 1, "designation": "standard"}]
    events += [{"type": "card", "round": 1, "pos": "DISCARD", "card": cards.name(c)}
               for c in range(52) for _ in range(left[c])]
    store = db.Store(str(tmp_path / "edges.db"))
    pit = FakePit()
    watch = EdgeWatch(pit, str(tmp_path / "edges.db"))
    for seq, event in enumerate(events + [{"type": "result", "round": 1}], 1):
        watch.handle(store, {"type": "event", "table": "T9", "shoe": "X9", "seq": seq, "event": event})
    alerts = store.alerts("X9")
    assert alerts and {(a["severity"], a["kind"]) for a in alerts} == {("warning", "edge")}, alerts
    nines = [a for a in alerts if "lucky_nines" in a["detail"]]
    assert len(nines) == 1 and "edge_alert round 1" in nines[0]["detail"], alerts
    assert "12 cards left" in nines[0]["detail"]
    assert [(m["type"], m["table"], m["id"]) for m in pit.messages] == [("alert", "T9", a["id"]) for a in alerts]
    watch.handle(store, {"type": "event", "table": "T9", "shoe": "X9", "seq": len(events) + 2,
                         "event": {"type": "result", "round": 2}})
    assert len(store.alerts("X9")) == len(alerts)
    store.close()
