"""The pit's Prometheus /metrics, scraped as Prometheus would and parsed by
prometheus_client's own parser: staff only on the page, per table recording,
last seq, lag and open alerts, the commit latency histogram and the stream
clients; and on the loopback metrics port without a login."""

import asyncio
import time

import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from host_tools.view import metrics
from host_tools.store import db
from support.pitclient import Stream, call
from support.pitrig import _free_port, running_pit


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with running_pit(tmp_path_factory.mktemp("metrics"), {"T1": "MET1", "T2": "MET2"}) as rig:
        yield rig


def _samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_are_staff_only_and_tell_each_table(pit):
    server, service, emus, cfg = pit
    assert call(server.port, "GET", "/metrics")[0] == 401
    for line in ("shoe decks=8", "AS", "2C", "bets", "9H", "8D", "KS", "2S"):
        emus["T1"].deal(line)
    end = time.monotonic() + 10
    while service.runners["T1"].fold.state.last_result is None:
        assert time.monotonic() < end
        time.sleep(0.02)
    with db.Store(cfg.store) as store:
        store.alert("MET2", "warning", "gap", "events wait for a predecessor")
    stream = Stream(server.port, server.staff)
    try:
        time.sleep(0.2)
        status, h, text = call(server.port, "GET", "/metrics", headers={"Authorization": "Bearer " + server.login("vic")})
    finally:
        stream.close()
    assert status == 200 and h["content-type"].startswith("text/plain"), text
    s = _samples(text)
    t1, t2 = (("table", "T1"),), (("table", "T2"),)
    assert s[("shoe_table_recording", t1)] == 1 and s[("shoe_table_recording", t2)] == 1
    assert s[("shoe_table_last_seq", t1)] == service.runners["T1"].fold.state.seq
    assert 0 <= s[("shoe_table_lag_seconds", t1)] < 30
    assert s[("shoe_table_open_alerts", t2)] == 1 and s[("shoe_table_open_alerts", t1)] == 0
    assert s[("shoe_commit_latency_seconds_count", ())] >= 8
    assert s[("shoe_stream_clients", ())] >= 1


def test_the_loopback_metrics_port_needs_no_login(pit):
    server, service, _emus, _cfg = pit
    port = _free_port()

    async def start():
        runner = web.AppRunner(metrics.app(service, server.app))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return runner
    runner = asyncio.run_coroutine_threadsafe(start(), server.loop).result(10)
    try:
        status, _h, text = call(port, "GET", "/metrics")
        assert status == 200 and "shoe_table_recording" in text
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), server.loop).result(10)
