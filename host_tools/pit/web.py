"""The pit's HTTP side (aiohttp): a JSON API, Server-Sent Events and a plain page.

Without a login a client gets the public scoreboard; each staff role gets
what host_tools/view/roles.py gives it, filtered HERE for the page, the API
and the event stream alike. A login (POST /api/login) sets a ``Secure``
(under TLS), HttpOnly, SameSite=Strict login cookie; the token it returns
also works as ``Authorization: Bearer``; logout ends either. Commands need
the supervisor role, and bets, exposed, new_shoe, clear_tilt and clear_stop also
``"confirm": true``; acknowledging needs a reason, and the critical kinds a
supervisor. Every login, failure, lock, logout, refusal, command (with the
shoe's own accept or reject), acknowledgement and setting change is a row of
the chained ``audit_log`` (host_tools/store/audit.py) with user and address.
The checks every request passes (Host, Origin and content type, headers,
caps, the login throttle) are host_tools/view/guard.py.

Updates are pushed: table threads hand messages to ``Pit.publish``; the
``Broadcast`` (host_tools/view/sse.py) collects them and wakes the event
loop once per burst (not once per message), where each message is encoded
ONCE and the burst goes to every /api/events client as one chunk (one
socket write per client per burst, however many tables spoke). At 128 tables that is what keeps the
loop's share of the pit's CPU small: encoding per client and a write, a
task and a wake-up per message per client was the largest part of it
(`shoe bench pit`, docs/design.md). A client that cannot keep up (its queue
full) is dropped rather than letting memory grow; its browser reconnects
and reloads the state from /api/tables.
"""

import asyncio
import collections
import json
import logging
import os
import secrets
import time

from aiohttp import web

from host_tools.protocol.command_line import parse_command_line
from host_tools.pit import edgeproc
from host_tools.pit import orderwatch
from host_tools.pit import overview as overview_mod
from host_tools.pit import shuffle as shuffle_mod
from host_tools.pit import users as users_mod
from host_tools.protocol import alerts, answers
from host_tools.store import audit as audit_mod
from host_tools.store import db
from host_tools.view import STATIC, guard, metrics, roles, scoreboard
from host_tools.view import report as report_mod
from host_tools.view.sse import Broadcast, keepalive, stream, vocabulary

log = logging.getLogger("shoe.pit.web")

REPORT_ROLES = (roles.SURVEILLANCE, roles.SUPERVISOR)  # the end-of-shoe report (table_report, docs/pages.md)
GAME_CHANGING = ("bets", "exposed", "shoe", "clear_tilt", "clear_stop")   # supervisor + confirm
LOGIN_S = 8 * 3600     # a login ends this long after it was made (a shift)...
IDLE_S = 30 * 60       # ...or this long after its last request
COOKIE = "pit_login"
# The cookie's earlier name: never read, so a browser still sending one is
# the public (its token died with the server that gave it); logins and
# logouts tell the browser to drop it.
OLD_COOKIE = "pit_session"
ANSWER_S = answers.ANSWER_S   # how long a command waits for the shoe's accepted/error event
REASON_MAX = 500
LOGINS_PER_ADDRESS = 4  # logins being checked at once from one address (argon2 costs the pit's CPU)
# Defaults of [web] in pit.toml (config.py): caps on what clients may hold open.
STREAMS, STREAMS_PER_ADDRESS = 2000, 20
REQUESTS, REQUESTS_PER_ADDRESS = 256, 32
# Of those, what clients without a staff login never take: logins and
# staff keep it through a flood (guard.Caps).
STAFF_RESERVE = {"stream": 64, "request": 64}

PIT = web.AppKey("pit", object)
STATE = web.AppKey("state", dict)


def _json_error(status, text):
    return web.json_response({"error": text}, status=status)


def allowed_names(config):
    """The Host names the page answers to: [web] names, the bound address,
    and the loopback names when it is bound to loopback."""
    host = getattr(config, "host", "127.0.0.1")
    names = set(getattr(config, "names", None) or ()) | {host}
    if guard.is_loopback(host):
        names |= {"localhost", "127.0.0.1", "::1"}
    return names


def make_app(pit, users_path, edges=True, tls=False, streams=None):
    """The pit's web app. ``edges``: run the edge monitor for every table
    (host_tools/pit/edges.py, in a process of its own: edgeproc.py); its
    alerts are stored alerts.
    ``tls``: served over HTTPS (cookie Secure, HSTS). ``streams``: the cap
    on event streams, as the open-file budget allows (command.py)."""
    cfg = pit.config
    app = web.Application(middlewares=[_guard], client_max_size=64 * 1024)
    app[PIT] = pit
    per_address = getattr(cfg, "streams_per_address", None) or STREAMS_PER_ADDRESS
    app[STATE] = {"users_path": users_path, "live": {}, "clients": {}, "store": None, "tls": tls,
                  "streams": {},  # login token -> the queues of its open event streams
                  "names": allowed_names(cfg), "throttle": guard.Throttle(),
                  "checking": collections.Counter(),  # address -> logins being checked
                  "caps": guard.Caps(streams or getattr(cfg, "streams", None) or STREAMS, per_address,
                                     REQUESTS, REQUESTS_PER_ADDRESS, STAFF_RESERVE),
                  "edges": edgeproc.EdgeProcess(pit, pit.config.store) if edges else None,
                  "shuffle": shuffle_mod.ShuffleWatch(pit, pit.config.store),
                  "orders": orderwatch.OrderWatch(pit, pit.config.store)}
    app[metrics.REGISTRY], hist = metrics.registry(
        lambda: [(r.name, r.recording, r.fold.state.seq, r.last_commit, r) for r in pit.runners.values()],
        lambda runner: open_alerts(app, runner),
        lambda: app[STATE]["broadcast"].count() if "broadcast" in app[STATE] else 0)
    pit.commit_observers.append(hist.observe)
    app.on_startup.append(_startup)
    app.on_shutdown.append(_shutdown)
    app.router.add_get("/", page)
    app.router.add_get("/table/{name}", table_page)
    app.router.add_get("/table/{name}/report", report_page)
    app.router.add_get("/display/{name}", display_page)
    app.router.add_get("/audit", audit_page)
    app.router.add_static("/static/", STATIC)
    app.router.add_get("/api/audit", audit_list)
    app.router.add_get("/metrics", metrics_page)
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


async def _startup(app):
    state = app[STATE]
    state["store"] = db.Store(app[PIT].config.store)  # this loop thread's own connection
    broadcast = state["broadcast"] = Broadcast(asyncio.get_running_loop())
    state["clients"] = broadcast.clients
    state["started"] = time.time()
    state["keepalive"] = asyncio.create_task(keepalive(broadcast))
    state["listener"] = broadcast.listener
    app[PIT].listeners.append(broadcast.listener)
    if state["edges"] is not None:
        state["edges"].start()
        app[PIT].listeners.append(state["edges"].listener)
    state["shuffle"].start()
    app[PIT].listeners.append(state["shuffle"].listener)
    state["orders"].start()
    app[PIT].listeners.append(state["orders"].listener)


async def _shutdown(app):
    state = app[STATE]
    for listener in (state.get("listener"), state["edges"] and state["edges"].listener,
                     state["shuffle"].listener, state["orders"].listener):
        if listener in app[PIT].listeners:
            app[PIT].listeners.remove(listener)
    if state["edges"] is not None:
        state["edges"].close()
    state["shuffle"].close()
    state["orders"].close()
    if state.get("keepalive") is not None:
        state["keepalive"].cancel()
    if state.get("broadcast") is not None:
        state["broadcast"].close()
    if state["store"] is not None:
        state["store"].close()
        state["store"] = None


# -- the checks every request passes (guard.py) ---------------------------

@web.middleware
async def _guard(request, handler):
    state = request.app[STATE]
    tls = state["tls"]
    framed = request.path.startswith("/display/")
    if guard.host_name(request.host) not in state["names"]:
        resp = guard.refused(421, "this pit does not answer to the name %r" % request.host[:100])
        guard.headers(resp, tls)
        return resp
    address = request.remote or "?"
    if request.path == "/api/events":  # a stream holds its own cap (events())
        return await handler(request)
    caps = state["caps"]
    staff = request.path == "/api/login" or _logged_in(request)[0] is not None
    no = caps.take("request", address, staff)
    if no is not None:
        guard.headers(no, tls)
        return no
    try:
        if request.method in guard.STATE_CHANGING:
            why = guard.forged_write(request)
            if why is not None:
                user, role, _t = _logged_in(request)
                audit(request, user or "-", role, "-", "refused", request.path, "refused: " + why)
                resp = guard.refused(403, why)
                guard.headers(resp, tls)
                return resp
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            guard.headers(e, tls, framed)
            raise
        if not resp.prepared:
            guard.headers(resp, tls, framed)
        return resp
    finally:
        caps.give("request", address, staff)


# -- who asks ----------------------------------------------------------------

def _token(request):
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        return auth[7:].strip()
    return request.cookies.get(COOKIE)


def _logged_in(request):
    """(user, role, token) of the request's live login, else (None, PUBLIC, None).
    A login ends LOGIN_S after it was made or IDLE_S after its last use."""
    token = _token(request)
    live = request.app[STATE]["live"]
    s = live.get(token) if token else None
    now = time.time()
    if s is None:
        return None, roles.PUBLIC, None
    if s["expires"] < now or s["seen"] + IDLE_S < now:
        live.pop(token, None)
        return None, roles.PUBLIC, None
    s["seen"] = now
    return s["user"], s["role"], token


def _role(request):
    """The role a read is answered for; ``?view=public`` asks for the public
    view whoever asks (the display at the table, docs/design.md)."""
    if request.query.get("view") == "public":
        return roles.PUBLIC
    return _logged_in(request)[1]


def _who(request):
    """(user, role) of the request's login, or raise 401."""
    user, role, _t = _logged_in(request)
    if user is None:
        raise web.HTTPUnauthorized(text=json.dumps({"error": "log in first (POST /api/login)"}),
                                   content_type="application/json")
    return user, role


def _need(request, allowed, what, action="read", target=None):
    user, role = _who(request)
    if action == "read" and request.query.get("view") == "public":
        role = roles.PUBLIC   # a read for the public view is answered as one (_role), whoever asks
    if role not in allowed:
        audit(request, user, role, request.match_info.get("name", "-"), action, target or request.path,
              "refused: not %s" % ("staff" if tuple(allowed) == roles.STAFF
                                   else " or ".join(roles.NOUN[r] for r in allowed)))
        raise web.HTTPForbidden(text=json.dumps({"error": "%s needs the %s role" % (what, " or ".join(allowed))}),
                                content_type="application/json")
    return user, role


def audit(request, user, role, tbl, action, target, outcome):
    """One chained row of the audit log (host_tools/store/audit.py)."""
    store = request.app[STATE]["store"]
    client = request.remote or "?"

    def write():
        store.db.execute("BEGIN IMMEDIATE")
        try:
            audit_mod.record(store.db, user, role, client, tbl, action, target, outcome)
        except BaseException:
            store.db.execute("ROLLBACK")
            raise
        store.db.execute("COMMIT")
    store._retry(write)


# -- reads -------------------------------------------------------------------

def open_alerts(app, runner):
    """The table's stored alerts no one has acknowledged yet, without the
    conditions that have cleared themselves (alerts.open_only)."""
    store = app[STATE]["store"]
    if runner.shoe_id is None:
        return []
    acked = audit_mod.acks(store.db, runner.name)
    return [a for a in alerts.open_only(store.alerts(runner.shoe_id)) if str(a["id"]) not in acked]


def _runner(request):
    runner = request.app[PIT].runners.get(request.match_info["name"])
    if runner is None:
        raise web.HTTPNotFound(text=json.dumps({"error": "no table %r" % request.match_info["name"]}),
                               content_type="application/json")
    return runner


def _limits(runner):
    return getattr(runner.table, "limits", None)


def _display_facts(runner):
    """What the table's scoreboard heads itself with: the limits and the
    labels' language from pit.toml, and which card set of the shoe this is
    (counted by the table's fold, read under its lock)."""
    with runner.lock:
        card_set = runner.fold.card_sets or None
    return {"limits": _limits(runner), "language": getattr(runner.table, "language", "en"),
            "card_set": card_set}


async def tables(request):
    role = _role(request)
    out = []
    for runner in request.app[PIT].runners.values():
        snap = runner.snapshot()
        snap["limits"] = _limits(runner)
        if role != roles.PUBLIC:
            snap["alerts"] = open_alerts(request.app, runner)
        out.append(roles.table_for(role, snap))
    return web.json_response({"tables": out, "role": role})


async def table(request):
    """The table's state, plus what the page draws: the scoreboard's cells
    (placed by the roads library's grid(), host_tools/view/scoreboard.py) and,
    for surveillance, the cards left per rank of the current card set."""
    runner = _runner(request)
    role = _role(request)
    snap = runner.snapshot(detail=True)
    snap.update(_display_facts(runner))
    with runner.lock:  # the board a table thread folds into; read under its lock
        snap["scoreboard"] = scoreboard.draw(runner.fold.board)
    if role != roles.PUBLIC:
        snap["alerts"] = open_alerts(request.app, runner)
    if roles.sees_everything(role):
        store = request.app[STATE]["store"]
        snap["shuffle"] = shuffle_mod.shoe_score(store, runner.shoe_id)  # for surveillance (issue 25)
    out = roles.table_for(role, snap)
    out["role"] = role
    return web.json_response(out)


async def table_report(request):
    """The end-of-shoe report's stored facts: every round, irregularities,
    voids, every alert with its acknowledgement, and the chain's anchor.
    Surveillance's at any time; a supervisor's once the shoe has ended,
    without what surveillance alone sees (report.for_staff, docs/pages.md)."""
    runner = _runner(request)
    user, role = _need(request, REPORT_ROLES, "the end-of-shoe report")
    if runner.shoe_id is None:
        return _json_error(404, "table %s has recorded no shoe yet" % runner.name)
    store = request.app[STATE]["store"]
    out = report_mod.report(report_mod.card_set_events(store, runner.shoe_id), store.shoe(runner.shoe_id),
                            runner.shoe_id)
    out["table"] = runner.name
    out["alerts"] = report_mod.alerts_with_acks(store, runner.name, runner.shoe_id)
    if roles.sees_everything(role):
        out["shuffle"] = shuffle_mod.shoe_score(store, runner.shoe_id)
        return web.json_response(out)
    if out["ended"] is None:
        audit(request, user, role, runner.name, "read", request.path, "refused: the shoe is in play")
        return _json_error(403, "the report of a shoe in play is surveillance's; a supervisor reads it once "
                                "the shoe has ended")
    return web.json_response(report_mod.for_staff(out))


async def audit_list(request):
    """The newest rows of the audit log, for surveillance; ``?q=`` and
    ``?action=`` search the whole log (_audit_search)."""
    _need(request, (roles.SURVEILLANCE,), "the audit log")
    store = request.app[STATE]["store"]
    cols = audit_mod.AUDIT_COLUMNS
    where, args = _audit_search(request.query)
    rows = store.db.execute("SELECT %s FROM audit_log%s ORDER BY id DESC LIMIT 500" % (", ".join(cols), where),
                            args).fetchall()
    _n, head, why = audit_mod.check_audit(store.db)
    actions = [a for (a,) in store.db.execute("SELECT DISTINCT action FROM audit_log ORDER BY action")]
    return web.json_response({"rows": [dict(zip(cols, r)) for r in rows], "head": head, "chain": why or "ok",
                              "actions": actions})


def _audit_search(query):
    """(SQL WHERE, arguments) of the audit page's search: ``action`` one
    action exactly; ``q`` text found in the user, table, client, target or outcome
    (a literal substring: % and _ are not wildcards)."""
    where, args = [], []
    action = query.get("action", "")[:40]
    if action:
        where.append("action = ?")
        args.append(action)
    text = query.get("q", "").strip()[:200]
    if text:
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join("%s LIKE ? ESCAPE '\\'" % c for c in ("user", "tbl", "target", "outcome",
                                                                           "client")) + ")")
        args += [like] * 5
    return (" WHERE " + " AND ".join(where)) if where else "", args


async def events(request):
    """Server-Sent Events: what the asker's role may see of every committed
    event, alert, state change, acknowledgement and restart, each tagged
    with its table. One cap per address and one in all (guard.Caps)."""
    state = request.app[STATE]
    address = request.remote or "?"
    user, role, token = _logged_in(request)
    staff = token is not None
    no = state["caps"].take("stream", address, staff)
    if no is not None:
        guard.headers(no, state["tls"])
        return no
    if request.query.get("view") == "public":
        role, token = roles.PUBLIC, None
    try:
        if token is None:
            return await stream(request, state["clients"][role])
        live = state["live"]

        def alive():
            # An open page is in use: its stream keeps the login from
            # idling out; the shift's end (expires) and a logout still end it.
            s, now = live.get(token), time.time()
            if s is None or s["expires"] < now:
                return False
            s["seen"] = now
            return True
        queues = state["streams"].setdefault(token, set())
        try:
            return await stream(request, state["clients"][role], alive, queues)
        finally:
            if not queues:
                state["streams"].pop(token, None)
    finally:
        state["caps"].give("stream", address, staff)


async def metrics_page(request):
    """Prometheus metrics, for staff (metrics.py; also on a loopback port),
    counted as the asker's role may see them; ``?view=public`` gets none."""
    _user, role = _need(request, roles.STAFF, "the metrics")
    if _role(request) == roles.PUBLIC:
        return _json_error(403, "the public view has no metrics")
    return metrics.text(request.app[metrics.REGISTRY][role])


async def page(request):
    """The overview, rendered here so it reads without script (rows by
    host_tools/pit/overview.py); overview.js then keeps it live from
    /api/events. The public overview is each table's name, display link,
    limits and last result."""
    role = _role(request)
    rows = []
    for runner in request.app[PIT].runners.values():
        s = runner.snapshot()
        if role == roles.PUBLIC:
            rows.append(overview_mod.public_row(s, _limits(runner)))
        else:
            rows.append(overview_mod.staff_row(s, _limits(runner),
                                               len(roles.alerts_for(role, open_alerts(request.app, runner)))))
    file = "overview.html" if role != roles.PUBLIC else "public.html"
    with open(os.path.join(STATIC, file), encoding="utf-8") as f:
        body = f.read().replace("<!--ROWS-->", "\n".join(rows))
    return web.Response(text=body, content_type="text/html", headers={"Cache-Control": "no-store"})


def _static_page(file, check_table=True):
    async def handler(request):
        if check_table:
            _runner(request)  # 404 for a table the pit does not have
        return web.FileResponse(os.path.join(STATIC, file), headers={"Cache-Control": "no-cache"})
    return handler


table_page = _static_page("table.html")
report_page = _static_page("report.html")
display_page = _static_page("display.html")
audit_page = _static_page("audit.html", check_table=False)


# -- people ------------------------------------------------------------------

async def _body(request):
    try:
        return guard.json_object(await request.read())
    except guard.BadBody as e:
        raise web.HTTPBadRequest(text=json.dumps({"error": str(e)}), content_type="application/json")


def _login_keys(name, address):
    """The throttle's keys of a login: the (user, address) pair it may lock,
    and the name and the address it slows down (guard.Throttle)."""
    return "user %s at %s" % (name, address), "user " + name, "address " + address


async def login(request):
    data = await _body(request)
    state = request.app[STATE]
    name, password = data.get("user"), data.get("password")
    shown = name[:64] if isinstance(name, str) else "-"
    address = request.remote or "?"
    pair, *slowed = _login_keys(shown, address)
    throttle = state["throttle"]
    wait = throttle.retry_after(pair)
    if wait > 0:
        audit(request, shown, "-", "-", "login", shown, "refused: locked for %.0f s more" % wait)
        return guard.refused(429, "too many failed logins: try again in %d s" % (int(wait) + 1),
                             **{"Retry-After": str(int(wait) + 1)})
    checking = state["checking"]
    if checking[address] >= LOGINS_PER_ADDRESS:
        return guard.refused(429, "%d logins from %s are being checked already" % (checking[address], address),
                             **{"Retry-After": "1"})
    checking[address] += 1
    try:
        delay = throttle.slow_down(*slowed)
        if delay:  # right or wrong, the answer waits: the wait tells nothing
            await asyncio.sleep(delay)
        try:
            users = users_mod.load(state["users_path"])
        except users_mod.UsersError as e:
            return _json_error(500, str(e))
        role = await asyncio.get_running_loop().run_in_executor(None, users_mod.check, users, name, password)
    finally:
        checking[address] -= 1
        if checking[address] <= 0:
            del checking[address]
    if role is None:
        locked = throttle.fail(pair, *slowed)
        audit(request, shown, "-", "-", "login", shown, "failed: wrong user name or password")
        if pair in locked:
            log.warning("login throttle: %s locked after %d failures in %.0f s", pair, throttle.limit, throttle.window)
            audit(request, shown, "-", "-", "lock", pair, "locked: %d failures in %.0f s"
                  % (throttle.limit, throttle.window))
        return _json_error(401, "wrong user name or password")
    now = time.time()
    for t, s in list(state["live"].items()):  # forget the ended ones
        if s["expires"] < now or s["seen"] + IDLE_S < now:
            del state["live"][t]
    token = secrets.token_urlsafe(32)
    state["live"][token] = {"user": name, "role": role, "expires": now + LOGIN_S, "seen": now}
    audit(request, name, role, "-", "login", name, "ok")
    resp = web.json_response({"user": name, "role": role, "token": token, "expires": now + LOGIN_S})
    resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict", max_age=LOGIN_S, path="/",
                    secure=state["tls"])
    _drop_old_cookie(request, resp)
    return resp


async def me(request):
    """Who this browser is logged in as ({"user": null, "role": "public"}
    when no one): the login cookie is HttpOnly, so the page asks."""
    user, role, _t = _logged_in(request)
    return web.json_response({"user": user, "role": role})


async def logout(request):
    """End the login, whether it came as the cookie or as a Bearer token."""
    user, role, token = _logged_in(request)
    live = request.app[STATE]["live"]
    for t in (token, request.cookies.get(COOKIE), _token(request)):
        if t:
            live.pop(t, None)
            for q in list(request.app[STATE]["streams"].get(t, ())):  # its streams end now
                try:
                    q.put_nowait(None)
                except asyncio.QueueFull:
                    pass
    if user is not None:
        audit(request, user, role, "-", "logout", user, "ok")
    resp = web.json_response({"ok": True})
    resp.del_cookie(COOKIE, path="/", secure=request.app[STATE]["tls"], httponly=True, samesite="Strict")
    _drop_old_cookie(request, resp)
    return resp


def _drop_old_cookie(request, resp):
    """Tell a browser that still sends the cookie's earlier name to forget it."""
    if OLD_COOKIE in request.cookies:
        resp.del_cookie(OLD_COOKIE, path="/", secure=request.app[STATE]["tls"], httponly=True, samesite="Strict")


async def ack_alert(request):
    runner = _runner(request)
    user, role = _who(request)
    data = await _body(request)
    alert_id, reason = data.get("alert"), data.get("reason")
    if not isinstance(alert_id, int) or isinstance(alert_id, bool):
        return _json_error(400, "give the alert's id as \"alert\": <number>")
    alert = next((a for a in open_alerts(request.app, runner) if a["id"] == alert_id), None)
    if alert is None or alert["kind"] in roles.SECRET_KINDS and not roles.sees_everything(role):
        return _json_error(404, "no open alert %d at table %s" % (alert_id, runner.name))
    if not roles.may_ack(role, alert["kind"]):
        audit(request, user, role, runner.name, "ack", str(alert_id), "refused: %s may not acknowledge %s"
              % (role, alert["kind"]))
        who = "a supervisor" if alert["kind"] in roles.CRITICAL_ACK else "a supervisor or surveillance"
        return _json_error(403, "%s alerts are acknowledged by %s" % (alert["kind"], who))
    if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
        return _json_error(400, "give the reason as \"reason\": text (1-%d characters)" % REASON_MAX)
    reason = " ".join(reason.split())
    audit(request, user, role, runner.name, audit_mod.ACK, str(alert_id), audit_mod.ACK_OK + reason)
    request.app[PIT].publish({"type": "ack", "table": runner.name, "alert": alert_id, "kind": alert["kind"],
                              "user": user})
    return web.json_response({"ok": True, "alert": alert_id, "user": user, "reason": reason})


async def _shoe_answer(request, runner, reply):
    """The shoe's own accepted/error event for the command just sent (its
    counter is in the bridge's reply), or None within ANSWER_S."""
    parts = reply.split()
    if not reply.startswith("ok sent") or not parts[-1].isdigit():
        return None
    broadcast = request.app[STATE]["broadcast"]
    key = (runner.name, int(parts[-1]))
    if key in broadcast.early:
        return broadcast.early.pop(key)
    fut = asyncio.get_running_loop().create_future()
    broadcast.answers[key] = fut
    try:
        return await asyncio.wait_for(fut, ANSWER_S)
    except asyncio.TimeoutError:
        return None
    finally:
        broadcast.answers.pop(key, None)


async def command(request):
    runner = _runner(request)
    data = await _body(request)
    name, args = data.get("command"), data.get("args") or {}
    user, role = _need(request, roles.COMMANDERS, "a command", "command", str(name)[:100])
    if not isinstance(name, str) or not isinstance(args, dict):
        return _json_error(400, "give \"command\": NAME and optionally \"args\": {name: value}")
    if name in ("new_shoe", "shoe") and "designation" not in args:
        args = dict(args, designation=runner.table.designation)
    line = " ".join([name] + ["%s=%s" % (k, v) for k, v in args.items()])
    try:
        cmd, pairs = parse_command_line(line)
    except ValueError as e:
        return _json_error(400, str(e))
    if cmd == "state":
        return _json_error(400, "state is not a command; GET /api/tables/%s" % runner.name)
    if cmd in GAME_CHANGING and data.get("confirm") is not True:
        return _json_error(400, "%s changes the game: send it again with \"confirm\": true" % name)
    reply = await asyncio.wrap_future(runner.command(cmd, pairs))
    answer = await _shoe_answer(request, runner, reply)
    if answer is None:
        verdict = ("no answer from the shoe within %.0f s" % ANSWER_S if reply.startswith("ok")
                   else "not sent: " + (reply[6:] if reply.startswith("error ") else reply))
    elif answer["type"] == "accepted":
        verdict = "accepted by the shoe"
    else:
        verdict = "rejected by the shoe: %s %s" % (answer.get("reason"), answer.get("message") or "")
    audit(request, user, role, runner.name, "command", line, "%s; %s" % (reply, verdict.strip()))
    ok = reply.startswith("ok") and answer is not None and answer["type"] == "accepted"
    return web.json_response({"ok": ok, "reply": reply, "shoe": verdict.strip()}, status=200 if ok else 409)
