"""A running pit for the pit tests (tests/e2e/test_pit.py, tests/e2e/test_pit_browser.py):
emulated shoes (the firmware in the MicroPython VM, on ptys) recording into
a real pit service whose aiohttp app serves 127.0.0.1 on a thread of its
own. One copy, so the two test files set the pit up the same way."""

import asyncio
import contextlib
import http.client
import json
import os
import socket
import ssl
import threading
import time

from aiohttp import web

from host_tools.sim.emulate import Emulator
from host_tools.pit import config as config_mod
from host_tools.pit import serving
from host_tools.pit import users as users_mod
from host_tools.pit.service import Pit
from host_tools.pit.web import make_app

PASSWORD = "correct horse"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The pit's aiohttp app on a thread of its own with its own loop."""

    def __init__(self, pit, users_path, ssl_context=None, connections=None, streams=None, port=None):
        self.port = port or _free_port()
        self.tls = ssl_context is not None
        self.loop = asyncio.new_event_loop()
        self.app = make_app(pit, users_path, tls=ssl_context is not None, streams=streams)
        self.runner = web.AppRunner(self.app)
        started = threading.Event()

        def main():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.runner.setup())
            # as `shoe pit` listens: behind the connection caps (host_tools/pit/serving.py)
            self.server, _port, self.limited = self.loop.run_until_complete(
                serving.listen(self.runner, "127.0.0.1", self.port, ssl_context, connections))
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()
        assert started.wait(10)

    def request(self, method, path, body=None, token=None):
        if self.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the tests' own self-signed pair
            con = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10, context=ctx)
        else:
            con = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        # A state-changing request carries the pit's own Origin, as the page's fetch() does.
        headers = {"Content-Type": "application/json",
                   "Origin": "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)}
        if token:
            headers["Authorization"] = "Bearer " + token
        con.request(method, path, None if body is None else json.dumps(body), headers)
        r = con.getresponse()
        data = r.read()
        con.close()
        return r.status, (json.loads(data) if r.getheader("Content-Type", "").startswith("application/json")
                          else data.decode())

    def login(self, user):
        status, body = self.request("POST", "/api/login", {"user": user, "password": PASSWORD})
        assert status == 200, body
        return body["token"]

    def close(self):
        if self.thread is None:
            return  # closed already (a test that restarts the page server)
        self.loop.call_soon_threadsafe(self.server.close)
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.thread = None


# The rig's users, as `shoe pit adduser` writes them: made once per process
# and copied to each pit after that. An argon2id hash is about 0.3 s of CPU,
# and every pit of a run has the same three users with the same password.
_USERS_FILE = []


def _add_users(path):
    if not _USERS_FILE:
        for name, role in (("sam", "supervisor"), ("vic", "viewer"), ("sue", "surveillance")):
            users_mod.add(path, name, role, PASSWORD)
        with open(path, "rb") as f:
            _USERS_FILE.append(f.read())
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(_USERS_FILE[0])


@contextlib.contextmanager
def running_pit(tmp, shoes, tables=None, **server_kw):
    """A pit in ``tmp`` with one emulated shoe per table, ``shoes`` being
    {table name: shoe id}; users sam (supervisor), vic (viewer) and sue
    (surveillance), all with PASSWORD; ``tables``: more pit.toml lines per
    table name (``{"T2": 'language = "zh"'}``); ``server_kw``: Server's
    keywords (TLS, caps). Yields (server, service, emulators by table,
    config) once every table records; everything is stopped on the way out."""
    emus = {name: Emulator(str(tmp / ("flash%d" % i)), shoe)
            for i, (name, shoe) in enumerate(shoes.items(), 1)}
    for e in emus.values():
        e.start()
    server = service = None
    try:
        toml = tmp / "pit.toml"
        toml.write_text('store = "pit.db"\n' + "".join(
            '[[table]]\nname = "%s"\nport = "%s"\nkey_file = "%s"\ndesignation = "ez"\nlimits = "25 - 5,000"\n%s\n'
            % (name, e.host_path, e.key_path, (tables or {}).get(name, "")) for name, e in emus.items()))
        cfg = config_mod.load(str(toml))
        _add_users(cfg.users)
        service = Pit(cfg)
        service.start()
        server = Server(service, cfg.users, **server_kw)
        end = time.monotonic() + 30
        while not all(r.recording for r in service.runners.values()):
            assert time.monotonic() < end, "the emulated tables did not start recording"
            time.sleep(0.02)
        server.staff = server.login("sue")  # a surveillance login: sees everything a test reads
        yield server, service, emus, cfg
    finally:
        if server is not None:
            server.close()
        if service is not None:
            service.close()
        for e in emus.values():
            e.close()
