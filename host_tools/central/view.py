"""`shoe central view --dsn DSN [--host H --port P]`: the pit page over the
central record, every pit and table of the casino, read-only.

The page is the pit's own (host_tools/view/static/, served from where the
pit serves it): this app answers the read endpoints that page uses, from
PostgreSQL instead of a pit's live tables, so the same JavaScript draws it.
A table is named ``<pit>/<table>`` (URLs carry it as ``P1%2FT1``), so the
overview lists the casino grouped by pit.

What a table shows is folded from its stored events by the pit's own code:
``CentralTable`` owns the same ``TableFold`` a pit table owns
(host_tools/view/fold.py), fed the central rows (so the round, next
card, recall and roads are computed exactly as on the pit PC); the scoreboard is
host_tools/view/scoreboard.py over the roads library's Board, and the cards
left and the end-of-shoe report are host_tools/view/report.py run on the
table's current card set.

Updates: the consumers NOTIFY ``central.NOTIFY`` in every transaction that
stored events or alerts; this app LISTENs and, on a notification (or every
``POLL_S`` should one be missed, e.g. across a reconnect), reads what is
new: ``shoes.last_seq`` per shoe, and the events after what it has folded
(a shoe's stored events have no holes: the consumer stores seq N only
after N-1). Each table that moved is pushed to /api/events as the pit
pushes it, with its live state (the page updates in place, and reads the
table again only when a round or a shoe has ended).

Read-only by construction: the sessions run with
``default_transaction_read_only``; login, logout, acknowledgements and
commands answer 403 with one line; /api/me says ``read_only`` and the
page hides its controls.
"""

import asyncio
import json
import logging
import os
import threading
import time

from aiohttp import web

from host_tools import exits
from host_tools.central import ingest as central
from host_tools.central import metrics as central_metrics
from host_tools.central import pitlog
from host_tools.view import guard, metrics, scoreboard, sse
from host_tools.view import report as report_mod
from host_tools.view import roles as pit_roles
from host_tools.view.fold import TableFold
from host_tools.view import STATIC


log = logging.getLogger("shoe.casino.view")

POLL_S = 2.0          # look even without a notification this often
PIT_LOG_LIMIT = 200   # pit-log rows (and stray central alerts) /api/pit-log returns
READ_ONLY = ("this is the central record's view, read-only: acknowledge and send commands "
             "at the pit's own page")

VIEW = web.AppKey("view", object)
# Whom the central record's page is for: every table, message and metric it
# serves passes the pit's one filter (host_tools/view/roles.py) as this role.
ROLE = pit_roles.SURVEILLANCE


class CentralTable:
    """One table of the central record: the pit page's fold of a table
    (host_tools/view/fold.py) with no bridge, no thread and no port,
    fed stored events in seq order, each parsed once."""

    def __init__(self, pit, tbl, shoe_id):
        self.name = "%s/%s" % (pit, tbl)
        self.pit, self.tbl = pit, tbl
        self.table = _TableConfig(self.name, shoe_id)
        self.lock = threading.Lock()
        self.shoe_id = shoe_id
        self.line = "CENTRAL RECORD: no event yet"
        self.folded = 0          # the last seq folded in
        self.stored_at = None    # when the record stored it
        self.fold = TableFold(self.name)

    def feed(self, seq, text, stored_at):
        """Fold one stored event in, as the pit's table folds a committed one."""
        with self.lock:
            event = self.fold.fold_text(seq, text)
            if event is not None and event.get("type") == "shoe" and event.get("source") is None:
                self.table.designation = event.get("designation") or "-"
            self.folded = seq
            self.stored_at = stored_at
            self.line = "CENTRAL RECORD: stored through seq %d (%s)" % (seq, _clock(stored_at))

    def snapshot(self, detail=False):
        """The pit's snapshot shape (host_tools/pit/service.TableRunner)."""
        with self.lock:
            out = {"name": self.name, "designation": self.table.designation, "port": None,
                   "shoe": self.shoe_id, "recording": True, "line": self.line,
                   "restarts": 0, "died": None, "alive": True}
            out.update(self.fold.view(detail))
        return out


class _TableConfig:
    """The little of a pit table's configuration the page shows."""

    def __init__(self, name, shoe):
        self.name, self.shoe, self.port, self.designation = name, shoe, None, "-"


def _clock(t):
    return time.strftime("%H:%M:%S", time.localtime(t)) if t else "-"


def _alert(row):
    """A central alert in the shape the page reads (store.alerts' keys)."""
    aid, shoe, t, severity, kind, detail, count, last = row
    return {"id": aid, "shoe_id": shoe, "time": t, "first_time": t, "last_time": last or t,
            "severity": severity, "kind": kind, "detail": detail, "count": count or 1, "ack": None}


class View:
    """The central record as the page sees it: tables folded in memory,
    refreshed on NOTIFY, pushed to SSE clients."""

    def __init__(self, dsn):
        self.dsn = dsn
        self.tables = {}         # name -> CentralTable
        self.by_shoe = {}        # shoe -> CentralTable
        self.alert_id = 0        # newest alert id seen
        self.alert_seen = 0.0    # newest alert last_time seen (a merged alert grows in place)
        self.broadcast = None    # sse.Broadcast to the SSE clients, made on the loop
        self.conn = None
        self.lock = asyncio.Lock()
        self.tasks = []
        self.refreshes = 0
        self.refresh_seconds = None  # a metrics Histogram (metrics_page)
        self.open_alerts = {}        # shoe -> alerts in the record (refreshed with the tables)

    async def connect(self):
        import psycopg
        conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        await conn.execute("SET default_transaction_read_only = on")
        return conn

    async def start(self):
        self.broadcast = sse.Broadcast(asyncio.get_running_loop())
        self.conn = await self.connect()
        await self.refresh()
        self.tasks = [asyncio.create_task(self._listen()),
                      asyncio.create_task(sse.keepalive(self.broadcast))]

    def hang_up(self):
        """End every SSE stream (at shutdown, before aiohttp waits for handlers)."""
        if self.broadcast is not None:
            self.broadcast.close()

    async def close(self):
        self.hang_up()
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        if self.conn is not None:
            await self.conn.close()

    async def _listen(self):
        """LISTEN on its own connection; refresh on every notification and
        every POLL_S; reconnect when PostgreSQL goes away."""
        while True:
            try:
                conn = await self.connect()
                try:
                    await conn.execute("LISTEN %s" % central.NOTIFY)
                    await self.refresh()
                    while True:
                        async for _n in conn.notifies(timeout=POLL_S, stop_after=1):
                            pass
                        await self.refresh()
                finally:
                    await conn.close()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # PostgreSQL away: the page keeps what it has
                log.warning("central view: %s: %s; retrying", type(e).__name__, e)
                await asyncio.sleep(POLL_S)

    async def refresh(self):
        """Read what is new in the record and fold it; push what moved."""
        started = time.perf_counter()
        async with self.lock:
            try:
                moved, alerted = await self._refresh()
            except Exception:
                # the request path's connection may be the broken one
                try:
                    await self.conn.close()
                finally:
                    self.conn = await self.connect()
                moved, alerted = await self._refresh()
            self.refreshes += 1
            messages = []
            for name in sorted(moved):
                t = self.tables[name]
                with t.lock:
                    messages.append({"type": "event", "table": name, "live": t.fold.live()})
        messages += [{"type": "alert", "table": name} for name in sorted(alerted)]
        messages = [m for m in (pit_roles.message_for(ROLE, m) for m in messages) if m is not None]
        if messages and self.broadcast is not None:
            self.broadcast.send(sse.encode(messages))
        if self.refresh_seconds is not None:
            self.refresh_seconds.observe(time.perf_counter() - started)

    async def _refresh(self):
        cur = self.conn.cursor()
        # each table's current shoe: the one whose head was stored last there
        await cur.execute("SELECT DISTINCT ON (pit, tbl) shoe_id, pit, tbl, last_seq FROM shoes"
                          " WHERE last_seq IS NOT NULL ORDER BY pit, tbl, updated DESC, shoe_id")
        moved, alerted = set(), set()
        for shoe, pit, tbl, last_seq in await cur.fetchall():
            name = "%s/%s" % (pit, tbl)
            t = self.tables.get(name)
            if t is None or t.shoe_id != shoe:
                t = CentralTable(pit, tbl, shoe)
                # from the newest card set on: what the pit's page shows too
                await cur.execute("SELECT max(seq) FROM events WHERE shoe_id = %s AND type = 'shoe'",
                                  (shoe,))
                t.folded = ((await cur.fetchone())[0] or 1) - 1
                if name in self.tables:
                    self.by_shoe.pop(self.tables[name].shoe_id, None)
                self.tables[name] = t
                self.by_shoe[shoe] = t
                moved.add(name)
            if last_seq > t.folded:
                await cur.execute("SELECT seq, event, central_committed FROM events WHERE shoe_id = %s"
                                  " AND seq > %s AND seq <= %s ORDER BY seq", (shoe, t.folded, last_seq))
                for seq, text, at in await cur.fetchall():
                    t.feed(seq, text, at)
                moved.add(name)
        await cur.execute("SELECT shoe_id, count(*) FROM alerts GROUP BY shoe_id")
        self.open_alerts = dict(await cur.fetchall())
        # new alerts, and merged ones whose count grew (their last_time moved)
        await cur.execute("SELECT id, shoe_id, coalesce(last_time, time) FROM alerts WHERE id > %s"
                          " OR coalesce(last_time, time) > %s ORDER BY id",
                          (self.alert_id, self.alert_seen))
        for aid, shoe, seen in await cur.fetchall():
            self.alert_id = max(self.alert_id, aid)
            self.alert_seen = max(self.alert_seen, seen)
            if shoe in self.by_shoe:
                alerted.add(self.by_shoe[shoe].name)
        return moved, alerted

    # -- reads the handlers use ------------------------------------------------

    def table(self, name):
        t = self.tables.get(name)
        if t is None:
            raise web.HTTPNotFound(text=json.dumps({"error": "no table %r in the central record" % name}),
                                   content_type="application/json")
        return t

    async def alerts(self, shoe_ids):
        """{shoe: [alert, ...]} of the central record's alerts of those shoes."""
        cur = self.conn.cursor()
        await cur.execute("SELECT id, shoe_id, time, severity, kind, detail, count, last_time"
                          " FROM alerts WHERE shoe_id = ANY(%s) ORDER BY id", (list(shoe_ids),))
        out = {s: [] for s in shoe_ids}
        for row in await cur.fetchall():
            out[row[1]].append(_alert(row))
        return out

    async def pit_log(self, limit=PIT_LOG_LIMIT):
        """Every pit's alerts and audit rows as central holds them (newest
        first), and central's own alerts tied to no shoe (merged refusals of
        unknown devices and malformed messages), so surveillance sees them
        in one place."""
        cur = self.conn.cursor()
        await cur.execute("SELECT casino, pit, kind, pit_id, time, body, linked FROM pit_log"
                          " ORDER BY time DESC NULLS LAST LIMIT %s", (limit,))
        rows = [{"casino": r[0], "pit": r[1], "kind": r[2], "id": r[3], "time": r[4],
                 "row": pitlog.display(r[2], json.loads(r[5])), "linked": r[6]}
                for r in await cur.fetchall()]
        await cur.execute("SELECT id, shoe_id, time, severity, kind, detail, count, last_time, casino,"
                          " pit FROM alerts WHERE shoe_id IS NULL ORDER BY id DESC LIMIT %s", (limit,))
        central = []
        for r in await cur.fetchall():
            a = _alert(r[:8])
            a["casino"], a["pit"] = r[8], r[9]
            central.append(a)
        return {"pits": rows, "central": central}

    async def display_facts(self, t):
        """What the player display heads itself with, as the pit's web.py
        gives it: the card set's number (the record's count of the shoe's
        ``shoe`` events); the limits and language are pit.toml's, which the
        record does not hold (the display shows a dash and English)."""
        cur = self.conn.cursor()
        await cur.execute("SELECT count(*) FROM events WHERE shoe_id = %s AND type = 'shoe'", (t.shoe_id,))
        return {"limits": None, "language": "en", "card_set": (await cur.fetchone())[0] or None}

    async def card_set(self, t):
        """The table's current card set, as report.py reads it: its events
        (each parsed once) and the chain head."""
        cur = self.conn.cursor()
        sql, params = report_mod.card_set_query("%s", "pit_committed")
        await cur.execute(sql, params(t.shoe_id))
        events = report_mod.parse_rows(await cur.fetchall())
        await cur.execute("SELECT first_seq, first_prev, last_seq, last_mac FROM shoes WHERE shoe_id = %s",
                          (t.shoe_id,))
        h = await cur.fetchone()
        head = {"shoe_id": t.shoe_id, "first_seq": h[0], "first_prev": h[1], "last_seq": h[2],
                "last_mac": h[3], "head_hash": None} if h else None
        return events, head


# -- handlers ------------------------------------------------------------------

async def api_tables(request):
    view = request.app[VIEW]
    async with view.lock:
        tables = [view.tables[n] for n in sorted(view.tables)]
        alerts = await view.alerts([t.shoe_id for t in tables])
    out = []
    for t in tables:
        snap = t.snapshot()
        snap["pit"], snap["table"] = t.pit, t.tbl
        snap["alerts"] = alerts[t.shoe_id]
        out.append(pit_roles.table_for(ROLE, snap))
    return web.json_response({"tables": out, "read_only": True})


async def api_table(request):
    """A table as the pit's /api/tables/NAME gives it; ``?view=public`` is
    the player display's view (roles.table_for), as at the pit."""
    view = request.app[VIEW]
    async with view.lock:
        t = view.table(request.match_info["name"])
        snap = t.snapshot(detail=True)
        with t.lock:
            snap["scoreboard"] = scoreboard.draw(t.fold.board)
        snap["pit"], snap["table"] = t.pit, t.tbl
        snap["alerts"] = (await view.alerts([t.shoe_id]))[t.shoe_id]
        snap.update(await view.display_facts(t))
    if request.query.get("view") == "public":
        return web.json_response(pit_roles.table_for(pit_roles.PUBLIC, snap))
    snap["read_only"] = True
    return web.json_response(dict(pit_roles.table_for(ROLE, snap), role=ROLE))


async def api_report(request):
    view = request.app[VIEW]
    async with view.lock:
        t = view.table(request.match_info["name"])
        alerts = (await view.alerts([t.shoe_id]))[t.shoe_id]
        events, head = await view.card_set(t)
    out = report_mod.report(events, head, t.shoe_id)
    out["table"] = t.name
    out["alerts"] = alerts
    return web.json_response(out)


async def api_me(request):
    return web.json_response({"user": None, "role": None, "read_only": True})


async def metrics_page(request):
    """Prometheus metrics of the central record's view (host_tools/pit/
    metrics.py's names), to loopback clients only: a Prometheus on this
    host scrapes it, nobody on the LAN does."""
    if not guard.is_loopback(request.remote or ""):
        return web.json_response({"error": "metrics are served to loopback clients only"}, status=403)
    return metrics.text(request.app[metrics.REGISTRY][ROLE])


async def refused(request):
    return web.json_response({"error": READ_ONLY}, status=403)


async def api_events(request):
    """Server-Sent Events: one message per table that moved (the page then
    re-reads that table), in the pit's format and by the pit's own stream.
    The central record is surveillance's view: its clients are sent the
    surveillance messages (see docs/design.md on who may reach it)."""
    return await sse.stream(request, request.app[VIEW].broadcast.clients[ROLE])


def _html(file, replace=()):
    with open(os.path.join(STATIC, file), encoding="utf-8") as f:
        text = f.read()
    for old, new in replace:
        text = text.replace(old, new)
    return text


async def page(request):
    """The pit's overview page, titled for the casino; overview.js fills the
    rows from /api/tables."""
    text = _html("overview.html", (("<title>Pit overview</title>", "<title>Casino overview</title>"),
                                   ("<h1>Pit overview</h1>", "<h1>Casino overview (central record)</h1>")))
    return web.Response(text=text, content_type="text/html")


async def pit_log_page(request):
    """Every pit's alerts and audit rows, and central's refusals tied to no
    shoe, on one page for surveillance (drawn here, escaped: the rows are
    what pits sent, so they are not trusted as markup)."""
    from html import escape
    view = request.app[VIEW]
    async with view.lock:
        got = await view.pit_log()

    def row(cells):
        return "<tr>%s</tr>" % "".join("<td>%s</td>" % escape(str(c)) for c in cells)
    pits = [row((r["casino"], r["pit"], r["kind"] + ("" if r["linked"] else " (held: a row before it "
                                                                          "has not arrived)"),
                 _clock(r["time"]),
                 ", ".join("%s=%s" % (k, v) for k, v in sorted(r["row"].items()) if k != "id")))
            for r in got["pits"]]
    central = [row((a["casino"], a["pit"], a["kind"], a["severity"], a["count"], _clock(a["time"]),
                    _clock(a["last_time"]), a["detail"])) for a in got["central"]]
    text = ("<!doctype html><meta charset=utf-8><title>Pit alerts and audit (central record)</title>"
            "<h1>Pit alerts and audit rows</h1><table><tr><th>casino<th>pit<th>kind<th>time<th>row"
            "</tr>%s</table><h2>Refused at central (no device)</h2><table><tr><th>casino<th>pit"
            "<th>kind<th>severity<th>count<th>first<th>last<th>detail</tr>%s</table>" % (
                "".join(pits), "".join(central)))
    return web.Response(text=text, content_type="text/html")


async def audit_page(request):
    """The pit's audit log lives in the pit's store; what central holds of
    it (every pit's audit rows, as they arrived) is /pit-log. Say so on a
    page, in the pit page's style, rather than a bare 404."""
    text = _html("notcentral.html", (("<!--WHAT-->", "The audit log"),
                                     ("<!--WHY-->", "Each pit keeps its own audit log (who logged in, who sent "
                                      "which command, who acknowledged which alert) in its store; open it on "
                                      "the pit's page. The central record holds every pit's audit rows and "
                                      "alerts as they arrived: "),
                                     ("<!--LINK-->", '<a id="pit-log" href="/pit-log">pit alerts and audit rows</a>')))
    return web.Response(text=text, content_type="text/html")


def _static_page(file):
    async def handler(request):
        request.app[VIEW].table(request.match_info["name"])  # 404 for a table the record lacks
        return web.FileResponse(os.path.join(STATIC, file), headers={"Cache-Control": "no-cache"})
    return handler


async def api_pit_log(request):
    view = request.app[VIEW]
    async with view.lock:
        return web.json_response(await view.pit_log())


@web.middleware
async def _headers(request, handler):
    """The pit page's browser headers (guard.py): CSP, nosniff, no framing."""
    try:
        resp = await handler(request)
    except web.HTTPException as e:
        guard.headers(e, False)
        raise
    if not resp.prepared:
        guard.headers(resp, False)
    return resp


def make_app(dsn):
    app = web.Application(middlewares=[_headers])
    view = app[VIEW] = View(dsn)

    async def startup(app):
        await view.start()

    async def cleanup(app):
        await view.close()

    async def shutdown(app):
        view.hang_up()

    app.on_startup.append(startup)
    app.on_shutdown.append(shutdown)
    app.on_cleanup.append(cleanup)
    app.router.add_get("/", page)
    app.router.add_get("/table/{name}", _static_page("table.html"))
    app.router.add_get("/table/{name}/report", _static_page("report.html"))
    app.router.add_get("/display/{name}", _static_page("display.html"))
    app.router.add_get("/audit", audit_page)
    app.router.add_static("/static/", STATIC)
    app.router.add_get("/api/me", api_me)
    app.router.add_get("/api/tables", api_tables)
    app.router.add_get("/api/tables/{name}/report", api_report)
    app.router.add_get("/api/tables/{name}", api_table)
    app.router.add_get("/api/events", api_events)
    app.router.add_get("/api/vocabulary", sse.vocabulary)
    app.router.add_get("/api/pit-log", api_pit_log)
    app.router.add_get("/pit-log", pit_log_page)


    app.router.add_get("/metrics", metrics_page)
    # "recording" at the centre: the table's shoe is in the record; lag: since the record last stored for it
    app[metrics.REGISTRY], view.refresh_seconds = metrics.registry(
        lambda: [(t.name, True, t.folded or None, t.stored_at, t) for t in list(view.tables.values())],
        lambda t: range(view.open_alerts.get(t.shoe_id, 0)),
        lambda: view.broadcast.count() if view.broadcast is not None else 0,
        histogram=central_metrics.VIEW_REFRESH, each=(ROLE,))
    for path in ("/api/login", "/api/logout", "/api/tables/{name}/ack-alert",
                 "/api/tables/{name}/command"):
        app.router.add_post(path, refused)
    return app


def run(args):
    """`shoe central view`: serve until SIGINT/SIGTERM."""
    import sys
    import psycopg
    if not guard.is_loopback(args.host):
        # It has no login and shows everything surveillance sees: never in clear on the LAN.
        print("central view: --host %s is not a loopback address: the view has no login and serves "
              "plain HTTP, so it listens on loopback only" % args.host, file=sys.stderr)
        return exits.EXIT_USAGE
    from host_tools.casino import secrets
    try:
        with psycopg.connect(args.dsn, connect_timeout=5) as c:
            if c.execute("SELECT to_regclass('events')").fetchone()[0] is None:
                print("central view: %s holds no central record (no table events)" %
                      secrets.dsn_label(args.dsn), file=sys.stderr)
                return exits.EXIT_USAGE
    except psycopg.Error as e:
        print("central view: cannot connect to %s: %s" % (secrets.dsn_label(args.dsn),
                                                          str(e).strip().splitlines()[0]),
              file=sys.stderr)
        return exits.EXIT_USAGE
    print("central view: http://%s:%d/ (read-only) over %s" % (args.host, args.port,
                                                               secrets.dsn_label(args.dsn)), flush=True)
    web.run_app(make_app(args.dsn), host=args.host, port=args.port, print=None,
                handle_signals=True, shutdown_timeout=5)
    return exits.EXIT_OK
