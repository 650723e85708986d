"""The pit's HTTP side (aiohttp): a JSON API, Server-Sent Events and a plain page.

Reads are open to anyone on the pit LAN, as a scoreboard is. Writes (ack an
alert, send a command) need a login (POST /api/login sets an HttpOnly,
SameSite=Strict session cookie; the token it returns also works as
``Authorization: Bearer``); bets, exposed, new_shoe, clear_tilt and clear_stop change
the game and need the supervisor role and ``"confirm": true``. Every write
that reaches a table, and its outcome, is a row of ``audit_log`` in the
store, outside every shoe's chain (the shoe did not say it).

Updates are pushed: table threads hand messages to ``Pit.publish``; the
``Broadcast`` here collects them and wakes the event loop once per burst
(not once per message), where each message is encoded ONCE and the burst
goes to every /api/events client as one chunk (one socket write per client
per burst, however many tables spoke). At 128 tables that is what keeps the
loop's share of the pit's CPU small: encoding per client and a write, a
task and a wake-up per message per client was the largest part of it
(`shoe bench pit`, docs/design.md). A client that cannot keep up (its queue
full) is dropped rather than letting memory grow; its browser reconnects
and reloads the state from /api/tables.
"""

import asyncio
import html
import json
import os
import secrets
import threading
import time

from aiohttp import web

from host_tools.bridge.command import parse_control
from host_tools.pit import edges as edges_mod
from host_tools.pit import report as report_mod
from host_tools.pit import shuffle as shuffle_mod
from host_tools.pit import scoreboard
from host_tools.pit import users as users_mod
from host_tools.protocol import alerts, tablestate
from host_tools.store import db

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")

GAME_CHANGING = ("bets", "exposed", "shoe", "clear_tilt", "clear_stop")   # supervisor + confirm
SESSION_S = 12 * 3600
COOKIE = "pit_session"
QUEUE = 1000          # bursts a client may fall behind before it is dropped
KEEPALIVE_S = 15.0
KEEPALIVE = b": keepalive\n\n"

PIT = web.AppKey("pit", object)
STATE = web.AppKey("state", dict)


def _json_error(status, text):
    return web.json_response({"error": text}, status=status)


def make_app(pit, users_path, edges=True):
    """The pit's web app. ``edges``: run the edge monitor for every table
    (host_tools/pit/edges.py, its own thread); its alerts are stored alerts."""
    app = web.Application()
    app[PIT] = pit
    app[STATE] = {"users_path": users_path, "sessions": {}, "clients": set(), "store": None,
                  "edges": edges_mod.EdgeWatch(pit, pit.config.store) if edges else None,
                  "shuffle": shuffle_mod.ShuffleWatch(pit, pit.config.store)}
    app.on_startup.append(_startup)
    app.on_shutdown.append(_shutdown)
    app.router.add_get("/", page)
    app.router.add_get("/table/{name}", table_page)
    app.router.add_get("/table/{name}/report", report_page)
    app.router.add_static("/static/", STATIC)
    app.router.add_get("/api/me", me)
    app.router.add_post("/api/logout", logout)
    app.router.add_get("/api/tables/{name}/report", table_report)
    app.router.add_get("/api/tables", tables)
    app.router.add_get("/api/tables/{name}", table)
    app.router.add_get("/api/events", events)
    app.router.add_get("/api/vocabulary", vocabulary)
    app.router.add_post("/api/login", login)
    app.router.add_post("/api/tables/{name}/ack-alert", ack_alert)
    app.router.add_post("/api/tables/{name}/command", command)
    return app


class Broadcast:
    """Messages from any thread to every SSE client, encoded once per burst.

    ``listener`` (a ``Pit.listeners`` entry, called on table threads) only
    appends to a list; the first message of a burst schedules ``flush`` on
    the loop, which takes everything that arrived meanwhile, encodes each
    message once and puts the same bytes into every client's queue.
    """

    def __init__(self, loop):
        self.loop = loop
        self.lock = threading.Lock()
        self.pending = []
        self.scheduled = False
        self.clients = set()

    def listener(self, message):  # runs on a table thread
        with self.lock:
            self.pending.append(message)
            if self.scheduled:
                return
            self.scheduled = True
        try:
            self.loop.call_soon_threadsafe(self.flush)
        except RuntimeError:
            pass  # the loop has closed: the pit is stopping

    def flush(self):  # runs on the event loop
        with self.lock:
            batch, self.pending, self.scheduled = self.pending, [], False
        if not batch or not self.clients:
            return
        self.send(encode(batch))

    def send(self, chunk):
        for q in list(self.clients):
            try:
                q.put_nowait(chunk)
            except asyncio.QueueFull:
                self.clients.discard(q)  # its handler ends at its next chunk

    def close(self):
        """End every SSE stream (at shutdown, before aiohttp waits for handlers)."""
        for q in list(self.clients):
            try:
                q.put_nowait(None)
            except asyncio.QueueFull:
                pass
        self.clients.clear()


def encode(messages):
    """Messages as one SSE chunk; each names its ``type`` as the event."""
    return b"".join(("event: %s\ndata: %s\n\n" % (m["type"], json.dumps(m))).encode()
                    for m in messages)


async def keepalive(broadcast):
    """A comment line to every client now and then, so proxies and the
    browser keep an idle stream open (one timer, not one per client).
    host_tools/central/view.py runs one for its Broadcast too."""
    while True:
        await asyncio.sleep(KEEPALIVE_S)
        broadcast.send(KEEPALIVE)


async def stream(request, clients):
    """One /api/events client: its queue joins ``clients`` (a Broadcast's)
    and every chunk put there is written, until it is hung up (None) or
    dropped as too slow (no longer in ``clients``). Shared with the central
    view (host_tools/central/view.py)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    q = asyncio.Queue(QUEUE)
    clients.add(q)
    try:
        await resp.write(b": connected\n\n")
        while True:
            chunk = await q.get()
            if chunk is None or q not in clients:
                break
            chunks, stop = [chunk], False
            while not q.empty():  # whatever else queued while this client was writing
                chunk = q.get_nowait()
                if chunk is None:
                    stop = True
                    break
                chunks.append(chunk)
            await resp.write(b"".join(chunks) if len(chunks) > 1 else chunks[0])
            if stop:
                break
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        clients.discard(q)
    return resp


async def _startup(app):
    state = app[STATE]
    state["store"] = db.Store(app[PIT].config.store)  # this loop thread's own connection
    broadcast = state["broadcast"] = Broadcast(asyncio.get_running_loop())
    state["clients"] = broadcast.clients
    state["keepalive"] = asyncio.create_task(keepalive(broadcast))
    state["listener"] = broadcast.listener
    app[PIT].listeners.append(broadcast.listener)
    if state["edges"] is not None:
        state["edges"].start()
        app[PIT].listeners.append(state["edges"].listener)
    state["shuffle"].start()
    app[PIT].listeners.append(state["shuffle"].listener)


async def _shutdown(app):
    state = app[STATE]
    for listener in (state.get("listener"), state["edges"] and state["edges"].listener,
                     state["shuffle"].listener):
        if listener in app[PIT].listeners:
            app[PIT].listeners.remove(listener)
    if state["edges"] is not None:
        state["edges"].close()
    state["shuffle"].close()
    if state.get("keepalive") is not None:
        state["keepalive"].cancel()
    if state.get("broadcast") is not None:
        state["broadcast"].close()
    if state["store"] is not None:
        state["store"].close()
        state["store"] = None


# -- reads -------------------------------------------------------------------

def open_alerts(app, runner):
    """The table's stored alerts no one has acknowledged yet."""
    store = app[STATE]["store"]
    if runner.shoe_id is None:
        return []
    acked = {r[0] for r in store.db.execute(
        "SELECT target FROM audit_log WHERE action = 'ack' AND tbl = ? AND outcome = 'ok'",
        (runner.name,))}
    return [a for a in store.alerts(runner.shoe_id) if str(a["id"]) not in acked]


def _runner(request):
    runner = request.app[PIT].runners.get(request.match_info["name"])
    if runner is None:
        raise web.HTTPNotFound(text=json.dumps({"error": "no table %r" % request.match_info["name"]}),
                               content_type="application/json")
    return runner


async def tables(request):
    out = []
    for runner in request.app[PIT].runners.values():
        snap = runner.snapshot()
        snap["alerts"] = open_alerts(request.app, runner)
        out.append(snap)
    return web.json_response({"tables": out})


async def table(request):
    """The table's state, plus what the page draws: the scoreboard's cells
    (placed by the roads library's grid(), host_tools/pit/scoreboard.py) and
    the cards left per rank of the current card set."""
    runner = _runner(request)
    snap = runner.snapshot(detail=True)
    with runner.lock:  # the board a table thread folds into; read under its lock
        snap["scoreboard"] = scoreboard.draw(runner.fold.board)
    snap["alerts"] = open_alerts(request.app, runner)
    store = request.app[STATE]["store"]
    snap["ranks_left"] = (report_mod.ranks_left(report_mod.card_set_events(store, runner.shoe_id))
                          if runner.shoe_id else None)
    snap["shuffle"] = shuffle_mod.shoe_score(store, runner.shoe_id)
    return web.json_response(snap)


async def table_report(request):
    """The end-of-shoe report's stored facts: irregularities, voids, every
    alert with its acknowledgement, and the chain's anchor."""
    runner = _runner(request)
    if runner.shoe_id is None:
        return _json_error(404, "table %s has recorded no shoe yet" % runner.name)
    store = request.app[STATE]["store"]
    out = report_mod.report(report_mod.card_set_events(store, runner.shoe_id), store.shoe(runner.shoe_id),
                            runner.shoe_id)
    out["table"] = runner.name
    out["alerts"] = report_mod.alerts_with_acks(store, runner.name, runner.shoe_id)
    out["shuffle"] = shuffle_mod.shoe_score(store, runner.shoe_id)
    return web.json_response(out)


async def events(request):
    """Server-Sent Events: every committed event, alert, state change,
    acknowledgement and restart, each tagged with its table."""
    return await stream(request, request.app[STATE]["clients"])


async def vocabulary(request):
    """The names the page draws with, defined once on the server
    (host_tools/protocol/tablestate.py, alerts.py)."""
    return web.json_response(dict(tablestate.VOCABULARY, alert_kinds=alerts.vocabulary()))


async def page(request):
    """The overview, rendered here so it reads without script; overview.js
    then keeps it live from /api/events (static/overview.js)."""
    rows = []
    for runner in request.app[PIT].runners.values():
        s = runner.snapshot()
        result = s["last_result"] or {}
        name = html.escape(s["name"])
        rows.append('<tr data-table="%s"><td><a href="/table/%s">%s</a></td><td class="%s">%s</td>'
                    "<td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>" % (
                        name, name, name, "ok" if s["recording"] else "bad", html.escape(s["line"]),
                        s["round"] if s["round"] is not None else "-", html.escape(str(s["next"] or "-")),
                        html.escape(str(result.get("winner") or "-")), len(open_alerts(request.app, runner))))
    with open(os.path.join(STATIC, "overview.html"), encoding="utf-8") as f:
        body = f.read().replace("<!--ROWS-->", "\n".join(rows))
    return web.Response(text=body, content_type="text/html")


def _static_page(file):
    async def handler(request):
        _runner(request)  # 404 for a table the pit does not have
        return web.FileResponse(os.path.join(STATIC, file), headers={"Cache-Control": "no-cache"})
    return handler


table_page = _static_page("table.html")
report_page = _static_page("report.html")


# -- people ------------------------------------------------------------------

async def _body(request):
    try:
        data = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise web.HTTPBadRequest(text=json.dumps({"error": "the body must be a JSON object"}),
                                 content_type="application/json")
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": "the body must be a JSON object"}),
                                 content_type="application/json")
    return data


async def login(request):
    data = await _body(request)
    state = request.app[STATE]
    try:
        users = users_mod.load(state["users_path"])
    except users_mod.UsersError as e:
        return _json_error(500, str(e))
    name, password = data.get("user"), data.get("password")
    role = await asyncio.get_running_loop().run_in_executor(None, users_mod.check, users, name, password)
    if role is None:
        return _json_error(401, "wrong user name or password")
    token = secrets.token_urlsafe(32)
    state["sessions"][token] = (name, role, time.time() + SESSION_S)
    resp = web.json_response({"user": name, "role": role, "token": token})
    resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict", max_age=SESSION_S)
    return resp


async def me(request):
    """Who this browser is logged in as ({"user": null} when no one): the
    session cookie is HttpOnly, so the page asks rather than reads it."""
    try:
        user, role = _who(request)
    except web.HTTPUnauthorized:
        return web.json_response({"user": None, "role": None})
    return web.json_response({"user": user, "role": role})


async def logout(request):
    token = request.cookies.get(COOKIE)
    if token:
        request.app[STATE]["sessions"].pop(token, None)
    resp = web.json_response({"ok": True})
    resp.del_cookie(COOKIE)
    return resp


def _who(request):
    """(user, role) of the request's session, or raise 401."""
    token = request.cookies.get(COOKIE)
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        token = auth[7:].strip()
    session = request.app[STATE]["sessions"].get(token) if token else None
    if session is None or session[2] < time.time():
        raise web.HTTPUnauthorized(text=json.dumps({"error": "log in first (POST /api/login)"}),
                                   content_type="application/json")
    return session[0], session[1]


def audit(app, user, role, tbl, action, target, outcome):
    store = app[STATE]["store"]
    store._retry(lambda: store.db.execute(
        "INSERT INTO audit_log (time, user, role, tbl, action, target, outcome) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (time.time(), user, role, tbl, action, target, outcome)))


async def ack_alert(request):
    runner = _runner(request)
    user, role = _who(request)
    data = await _body(request)
    alert_id = data.get("alert")
    if not isinstance(alert_id, int) or isinstance(alert_id, bool):
        return _json_error(400, "give the alert's id as \"alert\": <number>")
    if not any(a["id"] == alert_id for a in open_alerts(request.app, runner)):
        return _json_error(404, "no open alert %d at table %s" % (alert_id, runner.name))
    audit(request.app, user, role, runner.name, "ack", str(alert_id), "ok")
    request.app[PIT].publish({"type": "ack", "table": runner.name, "alert": alert_id, "user": user})
    return web.json_response({"ok": True, "alert": alert_id, "user": user})


async def command(request):
    runner = _runner(request)
    user, role = _who(request)
    data = await _body(request)
    name, args = data.get("command"), data.get("args") or {}
    if not isinstance(name, str) or not isinstance(args, dict):
        return _json_error(400, "give \"command\": NAME and optionally \"args\": {name: value}")
    if name in ("new_shoe", "shoe") and "designation" not in args:
        args = dict(args, designation=runner.table.designation)
    line = " ".join([name] + ["%s=%s" % (k, v) for k, v in args.items()])
    try:
        cmd, pairs = parse_control(line)
    except ValueError as e:
        return _json_error(400, str(e))
    if cmd == "state":
        return _json_error(400, "state is not a command; GET /api/tables/%s" % runner.name)
    if cmd in GAME_CHANGING:
        if role != "supervisor":
            audit(request.app, user, role, runner.name, "command", line, "refused: not a supervisor")
            return _json_error(403, "%s changes the game: the supervisor role is needed" % name)
        if data.get("confirm") is not True:
            return _json_error(400, "%s changes the game: send it again with \"confirm\": true" % name)
    reply = await asyncio.wrap_future(runner.command(cmd, pairs))
    audit(request.app, user, role, runner.name, "command", line, reply)
    return web.json_response({"ok": reply.startswith("ok"), "reply": reply},
                             status=200 if reply.startswith("ok") else 409)
