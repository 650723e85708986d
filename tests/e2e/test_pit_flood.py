"""No number of clients stops a table from recording, or staff from using
the page: with the pit's open-file soft limit at 1,024 (common under
systemd), 1,000 event streams from one address and then 1,000 from 250
loopback addresses hold what the caps allow and no more, while a table's
loop is killed and restarted: both tables record throughout; and through
such a flood a supervisor logs in and reads its pages (host_tools/pit/
serving.py, guard.Caps and its staff reserve). The crowd is its own process
(tests/support/flood.py)."""

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from host_tools.pit import serving
from host_tools.pit import web as pit_web
from support.pitclient import call
from support.pitrig import running_pit

HERE = os.path.dirname(os.path.abspath(__file__))
SOFT = 1024


@pytest.fixture
def low_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _crowd(port, n, addresses):
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(HERE), "support", "flood.py"), str(port), str(n), str(addresses)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line, "the crowd printed nothing"
    return proc, json.loads(line)


def _records(server, emu, service, table, card):
    before = service.runners[table].fold.state.seq
    emu.deal(card)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if service.runners[table].fold.state.seq != before and service.runners[table].recording:
            return True
        time.sleep(0.02)
    return False


def _staff_call(port, method, path, body=None, token=None, source="127.0.1.1"):
    """One request from a staff workstation's own address."""
    import http.client
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(source, 0))
    headers = {"Content-Type": "application/json", "Origin": "http://127.0.0.1:%d" % port}
    if token:
        headers["Authorization"] = "Bearer " + token
    con.request(method, path, None if body is None else json.dumps(body), headers)
    r = con.getresponse()
    data = r.read()
    con.close()
    return r.status, data


def _staff_stream(port, token, source="127.0.1.1"):
    import http.client
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(source, 0))
    con.request("GET", "/api/events", headers={"Authorization": "Bearer " + token})
    r = con.getresponse()
    first = r.read(len(b": connected")) if r.status == 200 else r.read()
    con.close()
    return r.status, first


def _staff_pages(port):
    """A supervisor at a workstation of its own logs in, reads the overview,
    the tables and a table, and opens its own event stream."""
    from support.pitrig import PASSWORD
    status, body = _staff_call(port, "POST", "/api/login", {"user": "sam", "password": PASSWORD})
    assert status == 200, (status, body)
    token = json.loads(body)["token"]
    for path in ("/", "/api/tables", "/api/tables/T1", "/table/T1"):
        status, body = _staff_call(port, "GET", path, token=token)
        assert status == 200, (path, status, body[:200])
    status, first = _staff_stream(port, token)
    assert status == 200 and first.startswith(b": connected"), (status, first)


def test_a_thousand_streams_stop_neither_a_table_recording_nor_staff(tmp_path, low_limit):
    connections, streams = serving.budget(2, SOFT)
    with running_pit(tmp_path, {"T1": "FLD1", "T2": "FLD2"}, connections=connections, streams=streams) as rig:
        server, service, emus, _cfg = rig
        for e in emus.values():
            e.deal("shoe decks=8")
        crowds = []
        try:
            proc, one = _crowd(server.port, 1000, 1)
            crowds.append(proc)
            assert one.get("200") == 20, one  # streams_per_address
            proc, many = _crowd(server.port, 1000, 250)
            crowds.append(proc)
            held = 20 + many.get("200", 0)
            # the cap short of the staff's reserve, reached and held, no more
            assert held == streams - pit_web.STAFF_RESERVE["stream"], many
            # a fault in T1's loop, with every client still connected
            restarts = service.runners["T1"].restarts
            service.runners["T1"].kill("the flood test")
            end = time.monotonic() + 30
            while service.runners["T1"].restarts == restarts or not service.runners["T1"].recording:
                assert time.monotonic() < end, service.runners["T1"].line
                time.sleep(0.05)
            assert _records(server, emus["T1"], service, "T1", "AS"), service.runners["T1"].line
            assert _records(server, emus["T2"], service, "T2", "AS"), service.runners["T2"].line
            _staff_pages(server.port)  # through the flood (a connection reset before the reserve)
        finally:
            for p in crowds:
                p.stdin.close()
                p.wait(30)
        # the crowd gone, the page answers again
        end = time.monotonic() + 10
        while True:
            try:
                if call(server.port, "GET", "/api/tables")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < end, "the page did not answer after the crowd left"
            time.sleep(0.1)
