"""`shoe demo --tables N --serve`: a pit of emulated tables (the firmware in
the MicroPython VM), run as a user runs it, read over its real HTTP API,
and stopped with Ctrl-C (SIGINT) and SIGTERM: exit 0, no traceback."""

import json
import signal
import stat
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

from host_tools import vm


def _start(tmp_path, *extra):
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "demo", "--tables", "2", "--serve",
                             "--port", "0", "--pace", "0.05", "--db", str(tmp_path / "pit.db")] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=vm.ROOT)
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "page at https://" in line:  # HTTPS with the demo's self-signed pair
            return proc, line.rsplit(" ", 1)[1].strip(), lines
    proc.kill()
    raise AssertionError("no page address printed: %r %s" % (lines, proc.stderr.read()))


def _tables(url, cafile):
    ctx = ssl.create_default_context(cafile=cafile)  # the demo's own certificate, verified
    with urllib.request.urlopen(url + "api/tables", timeout=10, context=ctx) as r:
        return {t["name"]: t for t in json.load(r)["tables"]}


def _stop(proc, sig):
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (out, err)
    assert "Traceback" not in err, err
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_demo_serves_two_tables_until_signalled(tmp_path, sig):
    proc, url, lines = _start(tmp_path)
    try:
        assert "MicroPython VM" in lines[0]
        first = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            tables = _tables(url, str(tmp_path / "tls" / "pit.crt"))
            assert sorted(tables) == ["T1", "T2"]
            rounds = {name: t["round"] or 0 for name, t in tables.items()}
            if first is None and all(r >= 1 for r in rounds.values()):
                first = rounds
            elif first is not None and all(rounds[n] > first[n] for n in rounds):
                break
            time.sleep(0.3)
        else:
            raise AssertionError("rounds did not advance at both tables: %r" % tables)
        assert "recording" not in json.dumps(tables)  # the public view: rounds advancing show it records
    finally:
        if proc.poll() is None:
            out = _stop(proc, sig)
            assert "stopped" in out
    # Stopped, the demo ran the verify command it printed on its store: every
    # table's record covered by its simulated chip's signatures.
    printed = [ln for ln in lines if "shoe verify --db" in ln]
    assert printed and "--key-dir" in printed[0], lines
    assert "every table's record its shoe's own" in out, out
    devices = tmp_path / "pit.db.devices"
    assert stat.S_IMODE(devices.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in devices.iterdir() if p.is_file()} == {0o600}
    assert {p.name for p in devices.iterdir()} >= {"DEMO1.key", "DEMO1.pub", "DEMO2.key", "DEMO2.pub"}


def test_demo_tables_without_serve_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "demo", "--tables", "3"],
                       capture_output=True, text=True, cwd=vm.ROOT, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "--serve" in r.stderr, r.stderr
