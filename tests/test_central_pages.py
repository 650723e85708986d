"""The central record's view (`shoe central view`) in Chromium at 1280 and
1920 pixels wide: its overview and a table page (ties, pairs, naturals and
an open alert from the pits' record) are no wider than the viewport, with
screenshots in test-output/pages/; and its Prometheus /metrics, scraped from
loopback. Real NATS and PostgreSQL, as tests/test_casino_view.py runs them."""

import os
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

from host_tools.sim.rigs import servers
from pitclient import call
from test_casino import casino, consume, dsn, hub, pg  # noqa: F401 (fixtures)
from test_casino_view import make_pits, publish_pits
from test_pit_browser import ARGS, CHROMIUM, WAIT_MS
from test_pit_pages import OVERFLOW_JS, SHOTS


def test_central_pages_fit_1280_and_1920_and_metrics_scrape(tmp_path, hub, dsn, casino):  # noqa: F811
    from playwright.sync_api import sync_playwright
    keydir, _sims = make_pits(tmp_path)
    consume(hub.url, dsn, keydir, casino, publish_pits(tmp_path, hub.url, casino))
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as c:  # an open alert, as ingest would raise one
        c.execute("INSERT INTO alerts (shoe_id, time, severity, kind, detail) VALUES"
                  " ('S2', %s, 'critical', 'rollback', 'the shoe''s hello is below the record')", (time.time(),))
    port = servers.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "central", "view", "--dsn", dsn,
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert b"read-only" in proc.stdout.readline()
        base = "http://127.0.0.1:%d" % port
        os.makedirs(SHOTS, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for width in (1280, 1920):
                page = browser.new_page(viewport={"width": width, "height": 1000})
                for path, name in (("/", "central"), ("/table/P2%2FT1", "central-table")):
                    for _ in range(50):  # the server may still be binding
                        try:
                            page.goto(base + path)
                            break
                        except Exception:
                            time.sleep(0.1)
                    page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
                    page.wait_for_timeout(150)
                    page.screenshot(path=os.path.join(SHOTS, "%s-%d.png" % (name, width)), full_page=True)
                    out = page.evaluate(OVERFLOW_JS)
                    assert out["scroll"] <= out["vw"] and out["bad"] == [], (path, width, out)
                page.close()
            browser.close()
        status, h, text = call(port, "GET", "/metrics")
        assert status == 200, text
        samples = {(s.name, tuple(s.labels.items())): s.value
                   for f in text_string_to_metric_families(text) for s in f.samples}
        assert samples[("shoe_table_recording", (("table", "P2/T1"),))] == 1
        assert samples[("shoe_table_last_seq", (("table", "P2/T1"),))] > 0
        assert samples[("shoe_table_open_alerts", (("table", "P2/T1"),))] >= 1
        assert ("shoe_central_refresh_seconds_count", ()) in samples
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_central_view_listens_on_loopback_only(capsys):
    from host_tools import cli
    assert cli.main(["central", "view", "--dsn", "host=127.0.0.1 dbname=x", "--host", "10.1.2.3"]) == 2
    err = capsys.readouterr().err
    assert "loopback" in err and err.count("\n") == 1
