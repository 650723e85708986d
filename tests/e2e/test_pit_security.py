"""The pit's web server against an attacker on the casino LAN:
TLS and the cookie, forged writes (Origin, content type), the Host header,
the headers a browser needs, Bearer logout, login expiry and the login
throttle (the password policy and pit.toml's refusals: tests/unit/test_pit_users.py,
test_pit_config.py). Each test sends the attacker's exact
request with http.client (tests/support/pitclient.py) to a real pit recording real
emulated shoes (tests/support/pitrig.py)."""

import json
import os
import ssl
import stat
import subprocess
import sys
import time

import pytest

from host_tools.pit import tls
from host_tools.store import db
from support.pitclient import call, connect, same_origin
from support.pitrig import PASSWORD, running_pit


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "pit.crt"), str(d / "pit.key")
    tls.selfsigned(cert, key, ["127.0.0.1", "localhost"])
    return cert, key


@pytest.fixture(scope="module")
def pit(tmp_path_factory, pair):
    ctx = tls.context(*pair)
    with running_pit(tmp_path_factory.mktemp("sec"), {"T1": "SEC1"}, ssl_context=ctx) as rig:
        yield rig


def _login(port, user="sam", password=PASSWORD, source=None, headers=None):
    con = connect(port, tls=True)
    if source:
        con.source_address = (source, 0)
    con.request("POST", "/api/login", '{"user": "%s", "password": "%s"}' % (user, password),
                headers or same_origin(port, tls=True))
    r = con.getresponse()
    body = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    con.close()
    return r.status, hdrs, body


def test_https_with_a_secure_httponly_strict_cookie_and_hsts(pit, pair):
    server, _s, _e, _c = pit
    ctx = ssl.create_default_context(cafile=pair[0])  # the pair's own certificate verifies
    import http.client
    con = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=10)
    con.request("GET", "/")
    r = con.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("Strict-Transport-Security", "").startswith("max-age=")
    con.close()
    status, hdrs, _b = _login(server.port)
    assert status == 200
    cookie = hdrs["set-cookie"].lower()
    for flag in ("secure", "httponly", "samesite=strict"):
        assert flag in cookie, cookie
    # plain HTTP to the HTTPS port gets nothing a browser would use
    with pytest.raises(Exception):
        status, _h, _b = call(server.port, "GET", "/api/tables")
        assert status != 200


def test_the_login_cookie_works_and_the_old_cookie_name_is_the_public(pit):
    """The login cookie is ``pit_login``; a browser still sending the old
    ``pit_session`` (even with a live token in it) is answered as the public,
    never as staff and never with an error, and a login or logout tells it
    to drop the old one."""
    server, _s, _e, _c = pit
    status, hdrs, body = _login(server.port, "sue")
    assert status == 200
    token = json.loads(body)["token"]
    assert hdrs["set-cookie"].startswith("pit_login=" + token), hdrs["set-cookie"]
    me = lambda cookie: call(server.port, "GET", "/api/me", headers={"Cookie": cookie}, tls=True)
    assert me("pit_login=" + token)[2] == {"user": "sue", "role": "surveillance"}
    status, _h, who = me("pit_session=" + token)
    assert (status, who) == (200, {"user": None, "role": "public"})
    assert call(server.port, "GET", "/api/audit", headers={"Cookie": "pit_session=" + token}, tls=True)[0] == 401
    assert call(server.port, "GET", "/api/audit", headers={"Cookie": "pit_login=" + token}, tls=True)[0] == 200
    con = connect(server.port, tls=True)
    con.request("POST", "/api/logout", "{}", dict(same_origin(server.port, True),
                                                  Cookie="pit_login=%s; pit_session=%s" % (token, token)))
    r = con.getresponse()
    r.read()
    dropped = [v for k, v in r.getheaders() if k.lower() == "set-cookie"]
    con.close()
    assert r.status == 200 and any(v.startswith('pit_session=""') or v.startswith("pit_session=;") for v in dropped), dropped
    assert me("pit_login=" + token)[2]["user"] is None


def test_selfsigned_writes_a_private_key_and_refuses_to_overwrite(tmp_path):
    (tmp_path / "pit.toml").write_text('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/x"\nkey_file = "k"\n')
    run = lambda: subprocess.run([sys.executable, "-m", "host_tools.cli", "pit", "selfsigned", "--config",
                                  str(tmp_path / "pit.toml"), "--name", "pit1.casino.lan"],
                                 capture_output=True, text=True, timeout=60)
    r = run()
    assert r.returncode == 0, r.stderr
    key = tmp_path / "tls" / "pit.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert tls.context(str(tmp_path / "tls" / "pit.crt"), str(key)) is not None
    r = run()
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "exists" in r.stderr
    key.chmod(0o644)
    with pytest.raises(tls.TLSError) as e:
        tls.context(str(tmp_path / "tls" / "pit.crt"), str(key))
    assert "chmod 600" in str(e.value)


@pytest.mark.parametrize("headers, why", [
    ({"Content-Type": "text/plain", "Origin": "https://127.0.0.1:{port}"}, "application/json"),
    ({"Content-Type": "application/json", "Origin": "https://evil.example"}, "Origin"),
    ({"Content-Type": "application/json"}, "Origin or Referer"),
    ({"Content-Type": "application/json", "Referer": "https://evil.example/https://127.0.0.1:{port}/"},
     "Origin or Referer"),
])
def test_a_forged_write_is_refused_and_logged(pit, headers, why):
    server, _s, _e, cfg = pit
    token = server.login("sam")
    h = {k: v.format(port=server.port) for k, v in headers.items()}
    h["Authorization"] = "Bearer " + token
    status, _h, body = call(server.port, "POST", "/api/tables/T1/command", tls=True,
                            raw_body='{"command": "status"}', headers=h)
    assert status == 403 and why in body["error"], body
    status, _h, body = call(server.port, "POST", "/api/login", tls=True,
                            raw_body='{"user": "sam", "password": "%s"}' % PASSWORD,
                            headers={k: v for k, v in h.items() if k != "Authorization"})
    assert status == 403, body
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT action, outcome, client FROM audit_log WHERE action = 'refused'"))
    assert rows and all(r[2] == "127.0.0.1" for r in rows) and any(why in r[1] for r in rows)
    # the page's own write, with the Referer alone, is taken
    h = {"Content-Type": "application/json", "Referer": "https://127.0.0.1:%d/table/T1" % server.port,
         "Authorization": "Bearer " + token}
    assert call(server.port, "POST", "/api/tables/T1/command", {"command": "status"}, h, tls=True)[0] == 200


def test_a_foreign_host_header_is_refused(pit):
    server, _s, _e, _c = pit
    for host in ("evil.example", "evil.example:%d" % server.port, "127.0.0.1.evil.example"):
        status, _h, _b = call(server.port, "GET", "/api/tables", headers={"Host": host}, tls=True)
        assert status == 421, host
    assert call(server.port, "GET", "/api/tables", headers={"Host": "localhost:%d" % server.port}, tls=True)[0] == 200


def test_every_page_has_the_headers_and_no_inline_script(pit):
    server, _s, _e, _c = pit
    for path in ("/", "/table/T1", "/table/T1/report", "/audit", "/display/T1", "/api/tables",
                 "/static/common.js"):
        status, h, body = call(server.port, "GET", path, tls=True)
        assert status == 200, path
        csp = h["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"]
        if path.startswith("/display/"):
            assert "frame-ancestors 'self'" in csp
        else:
            assert "frame-ancestors 'none'" in csp and h["x-frame-options"] == "DENY"
        if path.endswith(".html") or h["content-type"].startswith("text/html"):
            low = body.lower()
            assert low.count("<script") == low.count('<script type="module" src="/static/'), path
            assert "style=" not in low and " on" + "click=" not in low, path


def test_logout_ends_a_bearer_login_and_logins_expire(pit):
    server, _s, _e, _c = pit
    token = server.login("sam")
    assert call(server.port, "GET", "/api/me", headers={"Authorization": "Bearer " + token}, tls=True)[2]["user"] == "sam"
    status, _h, _b = call(server.port, "POST", "/api/logout", {}, same_origin(server.port, True, token), tls=True)
    assert status == 200
    assert call(server.port, "GET", "/api/me", headers={"Authorization": "Bearer " + token}, tls=True)[2]["user"] is None
    status, _h, _b = call(server.port, "POST", "/api/tables/T1/command", {"command": "status"},
                          same_origin(server.port, True, token), tls=True)
    assert status == 401
    # a login left idle past its time, and one past its shift, are gone
    from host_tools.pit import web as pit_web
    live = server.app[pit_web.STATE]["live"]
    idle, shift = server.login("sam"), server.login("vic")
    live[idle]["seen"] -= pit_web.IDLE_S + 1
    live[shift]["expires"] = time.time() - 1
    for t in (idle, shift):
        assert call(server.port, "GET", "/api/me", headers={"Authorization": "Bearer " + t}, tls=True)[2]["user"] is None


def _timed_login(port, user, password, source):
    t = time.monotonic()
    status, h, _b = _login(port, user, password, source=source)
    return status, h, time.monotonic() - t


def test_a_lockout_is_per_user_and_address_and_the_slow_down_never_locks_anyone_out(pit):
    """Ten wrong passwords for vic from one address lock vic at that address
    only; guessing vic's password from many addresses, or many names from
    one address, slows those attempts down (guard.SLOW_MAX at most) but never
    refuses vic, or sam, the right password."""
    from host_tools.pit import web as pit_web
    from host_tools.view import guard
    server, _s, _e, cfg = pit
    port = server.port
    # Every attempt below must fall in one window of the pit's throttle
    # (60 s). Each is an argon2 check, seconds long on a loaded machine:
    # a side-by-side run's ten failures outlasted the window, and the pair
    # was never locked. The window is the pit's to set; the test widens it.
    throttle = server.app[pit_web.STATE]["throttle"]
    saved, throttle.window = throttle.window, 3600.0
    try:
        _lockout_and_slow_down(port, cfg)
    finally:
        throttle.window = saved


def _lockout_and_slow_down(port, cfg):
    from host_tools.view import guard
    for _ in range(10):
        assert _login(port, "vic", "wrong password!", source="127.0.0.10")[0] == 401
    status, h, _b = _login(port, "vic", PASSWORD, source="127.0.0.10")
    assert status == 429 and int(h["retry-after"]) >= 1   # that pair is locked
    status, _h, took = _timed_login(port, "vic", PASSWORD, "127.0.0.11")
    assert status == 200, status                         # vic elsewhere is not
    # a guesser spread over more addresses: each of its tries is slowed...
    slowed = []
    for i in range(2):
        status, _h, took = _timed_login(port, "vic", "wrong password!", "127.0.0.%d" % (50 + i))
        assert status == 401
        slowed.append(took)
    assert min(slowed) >= guard.SLOW_MAX, slowed
    # ...and vic, from an address of its own, still logs in (slowed at most SLOW_MAX)
    status, _h, took = _timed_login(port, "vic", PASSWORD, "127.0.0.90")
    assert status == 200, status
    # six names guessed from one address: that address is slowed, sam still logs in from it
    for i in range(6):
        assert _login(port, "nobody%d" % i, "wrong password!", source="127.0.0.40")[0] == 401
    status, _h, took = _timed_login(port, "sam", PASSWORD, "127.0.0.40")
    assert status == 200 and took >= guard.slow_delay(6) > 0, (status, took)
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT user, action, target, outcome, client FROM audit_log"
                                     " WHERE action IN ('login', 'lock')"))
    assert ("vic", "lock", "user vic at 127.0.0.10") in [r[:3] for r in rows]
    assert [r for r in rows if r[1] == "lock" and r[0] != "vic"] == []  # no name nor address locked
    assert any(r[0] == "vic" and r[3].startswith("refused") and r[4] == "127.0.0.10" for r in rows)
    assert sum(1 for r in rows if r[0] == "vic" and r[3].startswith("failed")) == 12


def test_a_staff_stream_ends_with_its_login(pit):
    """A stream opened as surveillance must not go on carrying burn cards
    after a logout, or after the login expired (the next keepalive ends it)."""
    from support.pitclient import Stream
    from host_tools.pit import web as pit_web
    from host_tools.view import sse
    server, _s, _e, _c = pit
    port = server.port
    for end_it in ("logout", "expiry"):
        token = server.login("sue")
        stream = Stream(port, token, tls=True)
        try:
            if end_it == "logout":
                assert call(port, "POST", "/api/logout", {}, same_origin(port, True, token), tls=True)[0] == 200
            else:
                server.app[pit_web.STATE]["live"][token]["expires"] = time.time() - 1
            stream.thread.join(sse.KEEPALIVE_S + 5)
            assert not stream.thread.is_alive(), "the %s left the stream open" % end_it
        finally:
            stream.close()


def _deep(n):
    return [("[" * n).encode(), ('{"a":' * 13000).encode(),  # each under the 64 KiB body cap ("[" * 30000 + "]" * 30000).encode(),
            ('{"user":' + "[" * 900 + "]" * 900 + ',"password":"x"}').encode(),
            ('{"alert":1,"reason":' + "[" * 900 + "]" * 900 + "}").encode(),
            ('{"command":"status","args":{"a":' + "[" * 900 + "]" * 900 + "}}").encode()]


@pytest.mark.parametrize("path", ["/api/login", "/api/tables/T1/ack-alert", "/api/tables/T1/command"])
def test_json_of_any_depth_is_a_400_not_a_500(pit, path):
    """60,000 nested brackets (and 900, under the parser's recursion limit,
    as the value of a field) are a client's error: 400 with one line, as
    staff, and the pit answers the next request."""
    server, _s, _e, _c = pit
    port = server.port
    for body in _deep(60000):
        status, _h, r = call(port, "POST", path, raw_body=body, headers=same_origin(port, True, server.staff),
                             tls=True)
        assert status == 400 and isinstance(r, dict) and "JSON" in r["error"], (path, body[:40], status, r)
    assert call(port, "GET", "/api/me", headers={"Authorization": "Bearer " + server.staff}, tls=True)[0] == 200
