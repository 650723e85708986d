"""NOT RECORDING is never silent: `shoe bridge` (its output and its
console) and `shoe pit` (its API and its event stream) raise a critical
``not_recording`` alert once the bridge has not recorded for
alerts.NOT_RECORDING_S, and clear it by themselves when it records again.
The shoe is the fake link v2 shoe on a real pty, which simply stops talking."""

import io
import queue
import re
import subprocess
import sys
import threading
import time

import rich.console

from host_tools.bridge.command import Runner
from host_tools.bridge.console import TableView
from host_tools.pit import config as config_mod
from host_tools.pit import users as users_mod
from host_tools.pit.service import Pit
from host_tools.protocol import alerts
from host_tools.store import db
from support.fakeshoe import KEY, SHOE
from support.pitclient import Stream
from support.pitrig import PASSWORD, Server

# How long the test waits for what a program shows: the bound is for a
# program that never shows it. A bridge started on a loaded 2-core machine
# (two suites side by side) took more than 15 s to print its first line.
SHOWS_S = 60
BOUND_S = alerts.NOT_RECORDING_S + SHOWS_S  # the alert's own delay, the 3 s a silent shoe takes to count, and that


def _key_file(tmp_path):
    f = tmp_path / "k.bin"
    f.write_bytes(KEY)
    f.chmod(0o600)
    return f


class Lines:
    """A process's stdout, line by line, waited on with a bound."""

    def __init__(self, proc):
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=lambda: [self.q.put(line) for line in proc.stdout], daemon=True).start()

    def wait(self, pred, timeout, pump=None):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pump is not None:
                pump()
            try:
                line = self.q.get(timeout=0.05)
            except queue.Empty:
                continue
            self.seen.append(line)
            if pred(line):
                return line
        raise AssertionError("no such line in %.0f s; last lines: %r" % (timeout, self.seen[-8:]))


def test_the_bridge_prints_the_alert_and_its_clear(shoe, tmp_path):
    path = tmp_path / "s.db"
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "bridge", "--port", shoe.path,
                             "--db", str(path), "--no-console", "--key-file", str(_key_file(tmp_path))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Lines(proc)
    try:
        shoe.connect(seq=2)
        shoe.event(1)
        shoe.event(2)
        shoe.pump(lambda f: shoe.acked() == 2, timeout=SHOWS_S)
        out.wait(lambda line: line.startswith("RECORDING: shoe %s" % SHOE), SHOWS_S, shoe.read)
        # The shoe falls silent: it hears the bridge and says nothing.
        shoe.answer_beats = False
        line = out.wait(lambda line: "not_recording" in line, BOUND_S, shoe.read)
        m = re.match(r"alert critical not_recording: NOT RECORDING for (\d+) s \(since [0-9:.]+\): ", line)
        assert m and alerts.NOT_RECORDING_S <= int(m.group(1)) < BOUND_S, line
        assert not any("RECORDING: shoe" in seen for seen in out.seen[-3:])
        # It speaks again (a new boot: a fresh hello, its events, its heartbeats).
        shoe.answer_beats = True
        n = len(shoe.challenges)
        shoe.pump(lambda f: len(shoe.challenges) > n, timeout=SHOWS_S)
        shoe.hello(seq=3, acked=2)
        shoe.event(3)
        line = out.wait(lambda line: "not_recording" in line, SHOWS_S, shoe.read)
        assert line.startswith("alert info not_recording: recording again after "), line
        # The clear can print before event 3's commit: its ack says it is stored.
        shoe.pump(lambda f: shoe.acked() == 3, timeout=SHOWS_S)
    finally:
        proc.terminate()
        _rest, err = proc.communicate(timeout=15)
    assert "Traceback" not in err
    with db.Store(str(path)) as store:
        rows = [a for a in store.alerts(SHOE) if a["kind"] == "not_recording"]
        assert [a["severity"] for a in rows] == ["critical", "info"]
        assert alerts.open_only(store.alerts(SHOE)) == []
        assert store.last_seq(SHOE) == 3
    # The outage ended and the chain shows nothing missing: a note, not a failure.
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(path), "--key-file",
                        str(_key_file(tmp_path)), "--mac-only"], capture_output=True, text=True, timeout=60)
    assert "note shoe %s: critical alert not_recording, cleared: NOT RECORDING for " % SHOE in r.stdout, r.stdout
    assert "FAIL" not in r.stdout and r.returncode == 0, r.stdout + r.stderr


def test_the_console_shows_the_alarm_until_it_clears():
    """The console's alert list (what a supervisor reads) loses the critical
    line when the clear comes, and keeps a note of it."""

    class Quiet:
        hello = None

    def screen():
        console = rich.console.Console(width=100, file=io.StringIO(), record=True)
        console.print(view.render(100, 30))
        return console.export_text()

    view = TableView(SHOE)
    runner = Runner(Quiet(), view)
    runner._alert(alerts.CRITICAL, "not_recording", "NOT RECORDING for 10 s (since 10:00:00.000): gone")
    assert "not_recording: NOT RECORDING for 10 s" in screen()
    runner._alert(alerts.INFO, "not_recording", "recording again after 14 s not recording")
    screen = screen()
    assert "NOT RECORDING for 10 s" not in screen and "recording again after 14 s" in screen
    assert [e["severity"] for e in view.alerts.values()] == [alerts.INFO]


def test_the_pit_raises_and_clears_it_on_its_stream_and_its_api(shoe, tmp_path):
    key_file = _key_file(tmp_path)
    toml = tmp_path / "pit.toml"
    toml.write_text('store = "pit.db"\n[[table]]\nname = "T1"\nport = "%s"\nkey_file = "%s"\nshoe = "%s"\n'
                    % (shoe.path, key_file, SHOE))
    cfg = config_mod.load(str(toml))
    users_mod.add(cfg.users, "sam", "supervisor", PASSWORD)
    service = Pit(cfg)
    service.start()
    server = stream = None
    try:
        server = Server(service, cfg.users)
        token = server.login("sam")
        stream = Stream(server.port, token)
        shoe.connect(seq=1)
        shoe.event(1)
        shoe.pump(lambda f: shoe.acked() == 1, timeout=SHOWS_S)

        def outage(severity):
            return lambda m: m.get("type") == "alert" and m.get("kind") == "not_recording" \
                and m.get("severity") == severity

        def api_alerts():
            status, body = server.request("GET", "/api/tables/T1", token=token)
            assert status == 200, body
            return [(a["kind"], a["severity"]) for a in body["alerts"]]

        shoe.answer_beats = False   # the shoe falls silent
        end = time.monotonic() + BOUND_S
        while not any(outage("critical")(m) for m in list(stream.messages)):
            assert time.monotonic() < end, stream.messages[-5:]
            shoe.read()
            time.sleep(0.05)
        raised = stream.wait(outage("critical"))
        assert raised["table"] == "T1" and raised["detail"].startswith("NOT RECORDING for ")
        assert api_alerts() == [("not_recording", "critical")]
        shoe.answer_beats = True    # and speaks again
        n = len(shoe.challenges)
        shoe.pump(lambda f: len(shoe.challenges) > n, timeout=SHOWS_S)
        shoe.hello(seq=1, acked=1)
        end = time.monotonic() + SHOWS_S
        while not any(outage("info")(m) for m in list(stream.messages)):
            assert time.monotonic() < end, stream.messages[-5:]
            shoe.read()
            time.sleep(0.05)
        assert stream.wait(outage("info"))["detail"].startswith("recording again after ")
        assert api_alerts() == []
    finally:
        if stream is not None:
            stream.close()
        if server is not None:
            server.close()
        service.close()
