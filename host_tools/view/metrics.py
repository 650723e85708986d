"""Prometheus metrics of a pit (the `prometheus_client` library's text format).

What an operator's alerting needs to see before a pit boss does: per table
whether it records, the last stored seq, how long since its last commit, its
open alerts; the card->durable commit latency as a histogram; how many event
streams are open. Table figures are read when scraped (a custom collector),
so nothing is counted twice and nothing runs between scrapes except the
histogram's observe() per commit.

Served at /metrics of the page for a staff login, and, with [web]
metrics_port, on 127.0.0.1 only without one (where a Prometheus on the pit
PC scrapes it); never to the public. Each role is served its own registry:
the open alerts are counted through roles.alerts_for, so a count never
tells staff below surveillance that an alert they may not see is open. The
loopback port has no login, so it is served the viewer's.
"""

import time

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from host_tools.view import roles

# Card -> durable is a few ms at 128 tables (`shoe bench pit`); the buckets
# resolve the 20 ms budget and show a stall.
BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
REGISTRY = web.AppKey("metrics_registry", dict)   # role -> its CollectorRegistry
LOOPBACK_ROLE = roles.VIEWER                      # the metrics port's (no login)


class TableCollector:
    def __init__(self, tables, open_alerts, clients, role=roles.SURVEILLANCE):
        self.tables, self.open_alerts, self.clients, self.role = tables, open_alerts, clients, role

    def collect(self):
        rec = GaugeMetricFamily("shoe_table_recording", "1 while the table records, else 0", labels=["table"])
        seq = GaugeMetricFamily("shoe_table_last_seq", "the last seq stored for the table's shoe", labels=["table"])
        lag = GaugeMetricFamily("shoe_table_lag_seconds", "seconds since the table's last event was made durable",
                                labels=["table"])
        alerts = GaugeMetricFamily("shoe_table_open_alerts", "alerts not acknowledged", labels=["table"])
        now = time.time()
        for name, recording, last_seq, last_commit, runner in self.tables():
            rec.add_metric([name], 1 if recording else 0)
            seq.add_metric([name], last_seq if last_seq is not None else -1)
            lag.add_metric([name], now - last_commit if last_commit else -1)
            alerts.add_metric([name], len(roles.alerts_for(self.role, list(self.open_alerts(runner)))))
        streams = GaugeMetricFamily("shoe_stream_clients", "event-stream clients connected")
        streams.add_metric([], self.clients())
        return [rec, seq, lag, alerts, streams]


def registry(tables, open_alerts, clients, histogram=None, each=roles.STAFF):
    """One registry per role of ``each``, with the table collector as that
    role may see it and one latency histogram shared by all (the pit's
    commit latency unless ``histogram`` names another); ({role: registry},
    histogram)."""
    name, what = histogram or ("shoe_commit_latency_seconds", "an event's append until durable (one group commit)")
    hist = Histogram(name, what, buckets=BUCKETS, registry=None)
    regs = {}
    for role in each:
        reg = regs[role] = CollectorRegistry()
        reg.register(TableCollector(tables, open_alerts, clients, role))
        reg.register(hist)
    return regs, hist


def text(reg):
    return web.Response(body=generate_latest(reg), headers={"Content-Type": CONTENT_TYPE_LATEST})


def app(pit, main_app):
    """The loopback-only metrics app, sharing the page's registry."""
    a = web.Application()

    async def handler(request):
        return text(main_app[REGISTRY][LOOPBACK_ROLE])
    a.router.add_get("/metrics", handler)
    return a
