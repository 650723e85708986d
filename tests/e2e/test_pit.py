"""`shoe pit`: two emulated shoes in one pit service, seen through its HTTP API.

The service (host_tools/pit) runs one supervised bridge thread per table; the
page's API is read here over real HTTP on 127.0.0.1 (the aiohttp app on its
own thread and loop), the way a pit screen reads it.
"""

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from host_tools.pit import users as users_mod
from host_tools.store import db
from support.waits import until
from support.pitclient import Stream
from support.pitrig import PASSWORD, running_pit


@pytest.fixture(scope="module")
def pit(tmp_path_factory):
    with running_pit(tmp_path_factory.mktemp("pit"), {"T1": "PIT1", "T2": "PIT2"}) as rig:
        yield rig


def _tables(server):
    return {t["name"]: t for t in server.request("GET", "/api/tables", token=server.staff)[1]["tables"]}


def test_both_tables_are_listed_recording(pit):
    server, _service, _emus, _cfg = pit
    tables = _tables(server)
    assert set(tables) == {"T1", "T2"}
    for name, shoe in (("T1", "PIT1"), ("T2", "PIT2")):
        assert tables[name]["line"].startswith("RECORDING: shoe %s" % shoe), tables[name]
        assert tables[name]["alerts"] == []
    status, page = server.request("GET", "/", token=server.staff)
    assert status == 200 and "T1" in page and "T2" in page and "RECORDING" in page


def test_a_dealt_card_is_pushed_and_the_table_shows_the_round(pit):
    """The card reaches a staff stream as it is dealt (its time printed as a
    figure: `shoe bench pit` holds the pit to its p99s; a loaded machine
    stretches any one card past a fixed second)."""
    server, _service, emus, _cfg = pit
    stream = Stream(server.port, server.staff)
    try:
        for line in ("shoe decks=8", "AS", "2C", "bets"):
            emus["T1"].deal(line)
        stream.wait(lambda m: m["type"] == "event" and m["event"]["type"] == "bets")
        sent = time.monotonic()
        emus["T1"].deal("9H")
        got, message = stream.wait(lambda m: m["type"] == "event" and m["event"].get("card") == "9H", timed=True)
        assert message["table"] == "T1" and message["shoe"] == "PIT1"
        print("card dealt -> on the stream: %.3f s" % (got - sent))
        for line in ("8D", "KS", "2S"):
            emus["T1"].deal(line)
        stream.wait(lambda m: m["type"] == "event" and m["event"]["type"] == "result")
    finally:
        stream.close()
    status, t1 = server.request("GET", "/api/tables/T1", token=server.staff)
    assert status == 200
    assert t1["current"] == {"round": 1, "cards": [["P1", "9H"], ["B1", "8D"], ["P2", "KS"], ["B2", "2S"]],
                             "status": "result", "simulated": False}
    assert t1["roads"]["bead_plate"] == "P" and t1["roads"]["counts"]["natural"] == 1
    assert [r["round"] for r in t1["recall"]] == [1] and t1["recall"][0]["winner"] == "player"
    assert _tables(server)["T1"]["last_result"]["winner"] == "player"
    assert server.request("GET", "/api/tables/NOPE")[0] == 404


def test_commands_need_a_login_and_game_changes_a_confirmed_supervisor(pit):
    server, _service, _emus, cfg = pit
    assert server.request("POST", "/api/tables/T2/command", {"command": "status"})[0] == 401
    assert server.request("POST", "/api/tables/T2/command", {"command": "bets", "confirm": True})[0] == 401
    viewer = server.login("vic")
    status, body = server.request("POST", "/api/tables/T2/command", {"command": "bets", "confirm": True},
                                  token=viewer)
    assert status == 403, body
    assert server.request("POST", "/api/login", {"user": "sam", "password": "wrong"})[0] == 401
    sam = server.login("sam")
    status, body = server.request("POST", "/api/tables/T2/command", {"command": "new_shoe"}, token=sam)
    assert status == 400 and "confirm" in body["error"]
    status, body = server.request("POST", "/api/tables/T2/command",
                                  {"command": "new_shoe", "args": {"decks": 6}, "confirm": True}, token=sam)
    assert status == 200 and body["reply"].startswith("ok sent shoe"), body
    def events():
        with db.Store(cfg.store) as store:
            return [json.loads(t) for _s, _q, t, _p, _h in store.events("PIT2")]
    until(lambda: any(e["type"] == "shoe" and e["decks"] == 6 and e["designation"] == "ez"
                      for e in events()), what="the new shoe event")
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT user, role, tbl, action, target, outcome FROM audit_log"
                                     " WHERE action = 'command'"))
    assert ("vic", "viewer", "T2", "command", "bets", "refused: not a supervisor") in rows
    assert any(r[:5] == ("sam", "supervisor", "T2", "command", "new_shoe decks=6 designation=ez")
               and r[5].startswith("ok") for r in rows), rows


def test_a_supervisors_ack_is_audited_and_the_alert_leaves_the_overview(pit):
    server, _service, _emus, cfg = pit
    with db.Store(cfg.store) as store:
        alert_id = store.alert("PIT2", "warning", "forged_event", "3 frames whose tag does not verify")
    assert [a["id"] for a in _tables(server)["T2"]["alerts"]] == [alert_id]
    assert _tables(server)["T1"]["alerts"] == []
    assert server.request("POST", "/api/tables/T2/ack-alert", {"alert": alert_id})[0] == 401
    stream = Stream(server.port, server.staff)
    try:
        sam = server.login("sam")
        status, body = server.request("POST", "/api/tables/T2/ack-alert", {"alert": alert_id, "reason": "seen"},
                                      token=sam)
        assert status == 200, body
        stream.wait(lambda m: m["type"] == "ack" and m["alert"] == alert_id and m["table"] == "T2")
    finally:
        stream.close()
    assert _tables(server)["T2"]["alerts"] == []
    with db.Store(cfg.store) as store:
        rows = list(store.db.execute("SELECT user, role, tbl, action, target, outcome FROM audit_log"
                                     " WHERE action = 'ack'"))
    assert rows == [("sam", "supervisor", "T2", "ack", str(alert_id), "ok: seen")]
    status, _ = server.request("POST", "/api/tables/T2/ack-alert", {"alert": alert_id, "reason": "again"}, token=sam)
    assert status == 404  # acknowledged once
    # the audit table sits beside the shoes' chains and does not disturb them
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", cfg.store],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "OK   shoe PIT2" in r.stdout, r.stdout + r.stderr


def test_a_killed_table_loop_restarts_and_the_other_table_keeps_recording(pit):
    """Independent of the other tests' order (xdist may give each its own pit):
    whatever T1 showed before the kill, it shows again after the restart."""
    server, service, emus, _cfg = pit
    t1, t2 = service.runners["T1"], service.runners["T2"]
    t2_thread, restarts = t2.thread, t1.restarts
    before = _tables(server)["T1"]
    stream = Stream(server.port, server.staff)
    try:
        t1.kill("killed by the test")
        stream.wait(lambda m: m["type"] == "state" and m["table"] == "T1" and "died" in m["line"])
        emus["T2"].deal("AS")  # T2 keeps recording while T1 is down
        stream.wait(lambda m: m["type"] == "event" and m["table"] == "T2")
        stream.wait(lambda m: m["type"] == "restart" and m["table"] == "T1")
        until(lambda: _tables(server)["T1"]["recording"], 20, "T1 recording again")
        # the restarted table re-read its shoe's state from the store
        after = _tables(server)["T1"]
        assert (after["last_result"], after["round"]) == (before["last_result"], before["round"])
        emus["T1"].deal("AS")  # and the restarted T1 records again
        stream.wait(lambda m: m["type"] == "event" and m["table"] == "T1")
    finally:
        stream.close()
    tables = _tables(server)
    assert tables["T1"]["restarts"] == restarts + 1 and "killed by the test" in tables["T1"]["died"]
    assert tables["T2"]["restarts"] == 0 and t2.thread is t2_thread and tables["T2"]["recording"]
    assert tables["T1"]["seq"] > (before["seq"] or 0)


def _pit_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "pit"] + list(args), input=stdin,
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("text, says", [
    ('store = "p.db"\n', "pit.toml: table: missing"),
    ('store = "p.db"\n[[table]]\nname = "T1"\nkey_file = "k"\n', "table[0].port: missing"),
    ('store = "p.db"\n[web]\nport = "80"\n[[table]]\nname = "T1"\nport = "/dev/x"\nkey_file = "k"\n',
     "web.port: must be a port number"),
    ('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/x"\nkey_file = "k"\ndesignation = "big"\n',
     "table[0].designation: 'big' is not one of"),
    ('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/x"\nkey_file = "k"\ncolour = 1\n',
     "table[0].colour: unknown key"),
    ('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/x"\nkey_file = "k"\n'
     '[[table]]\nname = "T1"\nport = "/dev/y"\nkey_file = "k"\n', "table[1].name: 'T1' names two tables"),
    ('store = \n', "not valid TOML"),
])
def test_a_bad_pit_toml_is_one_line_naming_the_key(tmp_path, text, says):
    path = tmp_path / "pit.toml"
    path.write_text(text)
    r = _pit_cli("--config", str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_key_file_others_can_read_stops_the_start_in_one_line(tmp_path):
    key = tmp_path / "k.bin"
    key.write_bytes(bytes(32))
    key.chmod(0o644)
    (tmp_path / "pit.toml").write_text('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/null"\n'
                                       'key_file = "k.bin"\n')
    r = _pit_cli("--config", str(tmp_path / "pit.toml"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "chmod 600" in r.stderr, r.stderr


def test_adduser_stores_an_argon2_hash_in_a_private_file(tmp_path):
    (tmp_path / "pit.toml").write_text('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/null"\n'
                                       'key_file = "k.bin"\n')
    r = _pit_cli("adduser", "ann", "--role", "supervisor", "--password-stdin",
                 "--config", str(tmp_path / "pit.toml"), stdin=PASSWORD + "\n")
    assert r.returncode == 0, r.stderr
    path = tmp_path / "users.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    users = users_mod.load(str(path))
    assert users["ann"]["role"] == "supervisor" and users["ann"]["hash"].startswith("$argon2id$")
    assert PASSWORD not in path.read_text()
    assert users_mod.check(users, "ann", PASSWORD) == "supervisor"
    assert users_mod.check(users, "ann", "wrong password") is None
    assert users_mod.check(users, "bob", PASSWORD) is None
    r = _pit_cli("adduser", "ann", "--role", "supervisor", "--password-stdin",
                 "--config", str(tmp_path / "pit.toml"), stdin="short\n")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "12 characters" in r.stderr
