"""Prometheus metrics of the central record: every metric name `shoe
central` (the consumer) and `shoe central view` serve, stated here once.

The consumer's counters are read when scraped (a custom collector over
the consumer's own totals), so the hot path counts nothing twice; only a
batch's commit time and lag are observed, once per batch. Served the way
the view serves its own: at /metrics, to loopback clients only, on a port
bound to a loopback address (`shoe central --metrics-port`), where a
Prometheus on the central host scrapes it and nobody on the LAN does.
"""

from aiohttp import web
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from host_tools.view import guard, metrics as pit_metrics

# the view (view.py): a NOTIFY's read and fold of the record
VIEW_REFRESH = ("shoe_central_refresh_seconds", "a NOTIFY's read and fold of the record into the view")
# the consumer (consumer.py)
BATCH = ("shoe_central_batch_seconds", "one fetched batch's verification and commit in PostgreSQL")
LAG = ("shoe_central_lag_seconds", "pit commit to central commit of the newest event the last batch "
       "stored")
COUNTS = "shoe_central_%s_total"     # per Central.counts key: stored, duplicates, refused...
COUNT_HELP = {
    "stored": "events verified and stored",
    "duplicates": "events already stored, byte for byte (dropped)",
    "held": "events held for a missing predecessor",
    "refused": "messages or events refused, each with an alert",
    "alerts": "alerts written",
    "batches": "batches committed",
    "retries": "batches retried after a deadlock",
    "pit_log": "pit alert and audit rows accepted",
}
RECONNECTS = ("shoe_central_reconnects_total", "sessions restarted after a NATS or PostgreSQL failure")
UP = ("shoe_central_connected", "1 while the consumer holds its NATS and PostgreSQL sessions")

# a batch commits in tens of ms at a real pace, up to a second or two in a backlog
BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ConsumerCollector:
    def __init__(self, consumer):
        self.consumer = consumer

    def collect(self):
        c = self.consumer
        totals = c.totals()
        out = []
        for key, what in COUNT_HELP.items():
            m = CounterMetricFamily(COUNTS % key, what)
            m.add_metric([], totals.get(key, 0))
            out.append(m)
        m = CounterMetricFamily(RECONNECTS[0], RECONNECTS[1])
        m.add_metric([], c.errors)
        out.append(m)
        m = GaugeMetricFamily(UP[0], UP[1])
        m.add_metric([], 1 if c.central is not None else 0)
        out.append(m)
        m = GaugeMetricFamily(LAG[0], LAG[1])
        m.add_metric([], c.lag if c.lag is not None else -1)
        out.append(m)
        return out


def consumer_registry(consumer):
    """(registry, batch-seconds histogram) for one consumer."""
    reg = CollectorRegistry()
    reg.register(ConsumerCollector(consumer))
    hist = Histogram(BATCH[0], BATCH[1], buckets=BUCKETS, registry=reg)
    return reg, hist


def consumer_app(reg):
    """/metrics to loopback clients only (the view's rule)."""
    async def page(request):
        if not guard.is_loopback(request.remote or ""):
            return web.json_response({"error": "metrics are served to loopback clients only"},
                                     status=403)
        return pit_metrics.text(reg)
    app = web.Application()
    app.router.add_get("/metrics", page)
    return app


async def serve(reg, host, port):
    """Start the metrics site on ``host`` (a loopback address: ValueError
    otherwise); returns the runner to clean up."""
    if not guard.is_loopback(host):
        raise ValueError("--metrics-host %s is not a loopback address: the metrics are served "
                         "to loopback clients only" % host)
    runner = web.AppRunner(consumer_app(reg), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
