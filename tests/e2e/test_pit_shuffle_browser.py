"""The shuffle score and the cold-deck stop on the pit's pages, in real
headless Chromium: the table page and the end-of-shoe report show the score,
and a supervisor clears the stop with the page's button and its
confirmation dialog (audited)."""

import os

import pytest

from host_tools.store import db
from support.browser import WAIT_MS, open_page
from support.bridgecli import stored_events
from support.pitrig import PASSWORD, running_pit
from support.waits import until as _wait

from host_tools.protocol.answers import ANSWER_S

ANSWER_MS = int(ANSWER_S * 1000) + 3 * WAIT_MS


def _open(browser, server, path, user=None):
    return open_page(browser, "http://127.0.0.1:%d" % server.port, path, user, PASSWORD)


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with running_pit(tmp_path_factory.mktemp("pitcold"), {"T1": "COLDWEB"}) as rig:
        yield rig


def test_the_page_shows_the_score_and_a_supervisor_clears_the_stop(chromium, pit):
    server, _service, emus, cfg = pit
    # A command the shoe refuses shows the shoe's reason, not "ok".
    context, page = _open(chromium, server, "/table/T1", user="sam")
    page.click("button[data-command=bets]")
    page.click("#confirm-yes")
    # bounded above the pit's own wait for the shoe's answer (answers.ANSWER_S)
    page.wait_for_selector("#reply:has-text('refused: rejected by the shoe: wrong_state no more bets: "
                           "no card set loaded')", timeout=ANSWER_MS)
    assert "ok" not in page.inner_text("#reply").split(":")[0]
    shots = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "test-output", "screenshots")
    os.makedirs(shots, exist_ok=True)
    page.screenshot(path=os.path.join(shots, "table-command-refused.png"), full_page=True)
    context.close()
    for line in ["shoe decks=8", "KH up", "QH", "JH", "TH", "9H", "8H", "7H"]:
        emus["T1"].deal(line)
    _wait(lambda: any(e.get("rule") == "cold_deck" for e in stored_events(cfg.store, "COLDWEB")), what="the stop")
    # Surveillance sees the score and the stop's alert; a supervisor clears it.
    watch_ctx, watch = _open(chromium, server, "/table/T1", user="sue")
    watch.wait_for_selector("#shuffle-verdict[data-weak=yes]", timeout=WAIT_MS)
    watch.wait_for_selector(".alert.critical[data-kind=cold_deck]", timeout=WAIT_MS)
    assert "KH QH JH TH 9H 8H 7H" in watch.inner_text("#alerts")
    assert watch.inner_text("#shuffle-stats")
    context, page = _open(chromium, server, "/table/T1", user="sam")
    page.wait_for_selector(".alert.critical[data-kind=cold_deck]", timeout=WAIT_MS)
    page.click("button[data-command=clear_stop]")
    page.click("#confirm-yes")
    page.wait_for_selector("#reply:has-text('ok: accepted by the shoe')", timeout=ANSWER_MS)  # no eval: the CSP forbids it
    _wait(lambda: any(e["type"] == "stop_cleared" for e in stored_events(cfg.store, "COLDWEB")), what="stop_cleared")
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT user, role, target, outcome FROM audit_log WHERE target = 'clear_stop'"))
    assert rows and rows[0][:3] == ("sam", "supervisor", "clear_stop") and rows[0][3].startswith("ok")
    report_ctx, report = _open(chromium, server, "/table/T1/report", user="sue")
    report.wait_for_selector("#shuffle-verdict[data-weak=yes]", timeout=WAIT_MS)
    assert not page.errors and not report.errors and not watch.errors
    watch_ctx.close()
    context.close()
    report_ctx.close()
