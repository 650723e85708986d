"""What the pit's web server does before and after every handler, against a
LAN it does not trust (BRIEF, "Who may see what"): the Host it answers to,
forged cross-site writes, the headers a browser needs to keep the page its
own, caps on what one address or all of them may hold open, and the login
throttle.

Kept apart from web.py so each check is one small function a test can name,
and so the central view (host_tools/central/view.py) wears the same headers.
"""

import collections
import ipaddress
import json
import time

from aiohttp import web

from host_tools.exits import ShoeError

STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")

# No inline script anywhere (every page loads its modules from /static/);
# the road cells' positions are set through the CSSOM, which style-src allows.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors %s")
HSTS = "max-age=31536000"


def is_loopback(host):
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host_header):
    """The name of a Host header without its port ("[::1]:8443" -> "::1")."""
    h = host_header or ""
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def headers(resp, tls, framed_by_self=False):
    resp.headers.setdefault("Content-Security-Policy", CSP % ("'self'" if framed_by_self else "'none'"))
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["X-Frame-Options"] = "SAMEORIGIN" if framed_by_self else "DENY"
    resp.headers["Referrer-Policy"] = "same-origin"
    resp.headers["Cross-Origin-Opener-Policy"] = "same-origin"
    if tls:
        resp.headers["Strict-Transport-Security"] = HSTS
    if resp.content_type == "application/json":
        resp.headers.setdefault("Cache-Control", "no-store")


def refused(status, text, **extra):
    resp = web.json_response({"error": text}, status=status)
    for k, v in extra.items():
        resp.headers[k] = v
    return resp


JSON_DEPTH = 8   # the deepest body the API takes: {"args": {...}} is 2


class BadBody(ShoeError, ValueError):
    """A request body that is not the JSON object the API takes."""


def _depth(value, limit):
    """True when ``value`` nests no deeper than ``limit`` (iterative: a
    deep value must not cost the server its stack)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def json_object(raw):
    """The body as a JSON object, or BadBody saying in one line why not.
    Malformed, not UTF-8, nested past the parser's recursion limit (60,000
    "[" once gave a 500) or past JSON_DEPTH: all the client's error."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadBody("the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise BadBody("the body must be a JSON object")
    if not _depth(data, JSON_DEPTH):
        raise BadBody("the body's JSON nests deeper than %d levels" % JSON_DEPTH)
    return data


def forged_write(request):
    """Why a state-changing request is not the pit's own page's, or None.

    SameSite cookies alone do not stop a form post from a sibling origin or
    a text/plain body (a "simple" request no preflight guards), so the
    request must say it is JSON and come from the pit's own origin."""
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        return "a write must be sent as application/json"
    own = "%s://%s" % (request.scheme, request.host)
    origin = request.headers.get("Origin")
    if origin is not None:
        return None if origin == own else "Origin %s is not this pit's (%s)" % (origin[:100], own)
    referer = request.headers.get("Referer")
    if referer is not None and (referer == own or referer.startswith(own + "/")):
        return None
    return "a write must carry this pit's Origin or Referer"


class Caps:
    """Per-address and total caps on requests in flight and open streams,
    with a reserve only staff may use.

    A stream is an open file for as long as its client likes; a request in
    flight is one for as long as it takes. Past a cap the client gets a 503
    (all) or 429 (its address) at once, and its connection is closed with
    it, so a refused client holds nothing: no crowd of clients can take the
    file descriptors the tables' stores need (web.py reserves those). Clients
    without a staff login (and not logging in) may fill the caps only up to
    ``reserve`` short of them: the rest is kept for logins and staff, who are
    also not held to the per-address caps (a crowd may share their address)."""

    def __init__(self, streams, streams_per_address, requests, requests_per_address, reserve=None):
        self.limits = {"stream": (streams, streams_per_address), "request": (requests, requests_per_address)}
        reserve = reserve or {}
        self.reserve = {k: min(reserve.get(k, 0), self.limits[k][0] // 2) for k in self.limits}
        self.total = {"stream": 0, "request": 0}
        self.public = {"stream": 0, "request": 0}
        self.by_address = {"stream": collections.Counter(), "request": collections.Counter()}

    def take(self, kind, address, staff=False):
        """None, or the refusal to send (which closes its connection)."""
        total, each = self.limits[kind]
        no = None
        if staff:
            if self.total[kind] >= total:
                no = refused(503, "the pit serves as many %ss as it can now" % kind, **{"Retry-After": "10"})
        elif self.by_address[kind][address] >= each:
            no = refused(429, "too many %ss open from %s" % (kind, address), **{"Retry-After": "10"})
        elif self.public[kind] >= total - self.reserve[kind] or self.total[kind] >= total:
            no = refused(503, "the pit serves as many %ss as it can now" % kind, **{"Retry-After": "10"})
        if no is not None:
            no.force_close()
            return no
        self.total[kind] += 1
        if not staff:
            self.public[kind] += 1
            self.by_address[kind][address] += 1
        return None

    def give(self, kind, address, staff=False):
        self.total[kind] -= 1
        if staff:
            return
        self.public[kind] -= 1
        self.by_address[kind][address] -= 1
        if self.by_address[kind][address] <= 0:
            del self.by_address[kind][address]


# The login slow-down (Throttle.slow_down): past SLOW_AFTER failures in the
# window on a user name or an address, every login attempt on it waits
# SLOW_BASE, doubling per failure, up to SLOW_MAX: a guesser's pace, never a
# lockout (only a (user, address) pair is locked, web.login).
SLOW_AFTER, SLOW_BASE, SLOW_MAX = 5, 0.125, 1.0


def slow_delay(failures):
    """Seconds an attempt waits after ``failures`` recent failures on its name or address."""
    if failures < SLOW_AFTER:
        return 0.0
    return min(SLOW_MAX, SLOW_BASE * 2 ** min(failures - SLOW_AFTER, 16))


class Throttle:
    """Failed logins per key in a sliding window: past ``limit`` failures
    in ``window`` seconds a key is locked (``retry_after``) until the oldest
    failure leaves the window; ``slow_down`` gives the wait its count calls
    for. The pit locks only a (user, address) pair, so a guesser elsewhere
    cannot lock a user out, and slows names and addresses down."""

    def __init__(self, limit=10, window=60.0, clock=time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self.fails = {}

    def _recent(self, key):
        now = self.clock()
        q = self.fails.get(key)
        while q and q[0] <= now - self.window:
            q.popleft()
        if q is not None and not q:
            del self.fails[key]
            return None
        return q

    def retry_after(self, *keys):
        """Seconds until every key may try again (0: now)."""
        wait = 0.0
        for key in keys:
            q = self._recent(key)
            if q is not None and len(q) >= self.limit:
                wait = max(wait, q[0] + self.window - self.clock())
        return wait

    def slow_down(self, *keys):
        """Seconds an attempt on these keys waits first (slow_delay of the most failed)."""
        return slow_delay(max([len(self._recent(k) or ()) for k in keys] or [0]))

    def fail(self, *keys):
        """Note a failure; the keys that this failure locked."""
        locked = []
        for key in keys:
            q = self._recent(key)
            if q is None:
                q = self.fails[key] = collections.deque()
            q.append(self.clock())
            if len(q) == self.limit:
                locked.append(key)
        if len(self.fails) > 100000:  # a flood of names: forget the oldest rather than grow
            for key in list(self.fails)[:50000]:
                del self.fails[key]
        return locked
