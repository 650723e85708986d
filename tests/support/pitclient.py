"""HTTP and SSE clients for the pit's security tests (tests/e2e/test_pit_roles.py,
tests/e2e/test_pit_security.py): plain http.client on loopback, so every header
is the test's own choice; an attacker writes requests, not a browser."""

import http.client
import json
import socket
import ssl
import threading
import time


def connect(port, tls=False, host="127.0.0.1", timeout=10):
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def call(port, method, path, body=None, headers=None, tls=False, raw_body=None):
    """(status, headers, parsed body) of one request with exactly ``headers``."""
    con = connect(port, tls)
    data = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    con.request(method, path, data, headers or {})
    r = con.getresponse()
    payload = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    con.close()
    if hdrs.get("content-type", "").startswith("application/json"):
        payload = json.loads(payload)
    else:
        payload = payload.decode("utf-8", "replace")
    return r.status, hdrs, payload


def same_origin(port, tls=False, token=None):
    """The headers a pit page's own fetch() sends."""
    h = {"Content-Type": "application/json",
         "Origin": "%s://127.0.0.1:%d" % ("https" if tls else "http", port)}
    if token:
        h["Authorization"] = "Bearer " + token
    return h


class Stream:
    """An /api/events client keeping every raw byte, every message and when
    it arrived (``times``, monotonic seconds, one per message)."""

    def __init__(self, port, token=None, tls=False, path="/api/events"):
        self.raw = bytearray()
        self.messages = []
        self.times = []
        self.con = connect(port, tls, timeout=30)
        self.con.request("GET", path, headers={"Authorization": "Bearer " + token} if token else {})
        self.resp = self.con.getresponse()
        assert self.resp.status == 200, self.resp.status
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        data = b""
        try:
            for line in self.resp:
                self.raw += line
                if line.startswith(b"data: "):
                    data = line[6:]
                elif line == b"\n" and data:
                    self.times.append(time.monotonic())
                    self.messages.append(json.loads(data))
                    data = b""
        except (OSError, ValueError, AttributeError):
            pass

    def wait(self, pred, timeout=60, timed=False):
        """The first message ``pred`` accepts ((arrival time, message) when
        ``timed``), waiting for it at most ``timeout`` seconds (the bound is
        for a pit that never sends it, not a guess at a loaded machine's pace)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for t, m in zip(list(self.times), list(self.messages)):
                if pred(m):
                    return (t, m) if timed else m
            time.sleep(0.005)
        raise AssertionError("no such message; last: %r" % self.messages[-5:])

    def close(self):
        try:
            self.con.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.con.close()
