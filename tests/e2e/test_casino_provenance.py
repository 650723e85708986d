"""Where an event comes from, decided by the device registry and not by
the message, on the real servers with least privilege on: the
pit publishes with its own credential, `shoe central`'s consumer pulls with
its own and writes with the writer role."""

import asyncio
import json
import os
import random
import time

import psycopg
import pytest

from host_tools import cli
from host_tools.casino import access, publish, streams, wire
from host_tools.central import consumer
from host_tools.protocol import keys as keys_mod
from host_tools.sim import simtable
from host_tools.sim.rigs import casino as casino_rig
from host_tools.store import db

CASINO = "C1"


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    r = casino_rig.Rig(str(tmp_path_factory.mktemp("casino")), pits=2, tables=2, consumers=0,
                       casino=CASINO)
    r.start(pits=False)
    yield r
    r.close()


def deal(rig, path, shoe, n, seed=0):
    key = keys_mod.read_key(os.path.join(rig.keydir, shoe + ".key"))
    sim = simtable.SimShoe(shoe, key, seed=seed)
    with db.Store(path) as st:
        sim.resume(st)
        sim.deal(st, n)
    return sim


def pit_auth(rig, pit):
    return rig.auth("pit-" + pit, access.pit_inbox(CASINO, pit))


def consume(rig, until, timeout=60.0):
    """Run one `shoe central` consumer (its own credential, the writer role)
    until ``until(admin connection)`` holds."""
    async def main():
        stop = asyncio.Event()
        c = consumer.Consumer(rig.hub.url, rig.writer_dsn, rig.keydir, CASINO,
                              auth=rig.auth("central"))
        task = asyncio.create_task(c.run(stop))
        deadline = time.monotonic() + timeout
        ok = False
        while time.monotonic() < deadline and not ok:
            await asyncio.sleep(0.2)
            with psycopg.connect(rig.pg.dsn) as conn:
                ok = until(conn)
        await asyncio.sleep(0.3)
        stop.set()
        await task
        assert c.errors == 0, c.last_error
        return ok
    return asyncio.run(main())


def q(rig, sql, args=()):
    with psycopg.connect(rig.pg.dsn) as c:
        return c.execute(sql, args).fetchall()


async def publish_raw(rig, pit, msgs):
    """Publish (subject, headers, body) with the pit's own credential, as
    an insider on that pit's PC could."""
    nc = await streams.connect(rig.leaves[pit].url, auth=pit_auth(rig, pit))
    try:
        js = nc.jetstream(domain=rig.domain(pit), publish_async_max_pending=2000)
        futs = [await js.publish_async(s, b, headers=h) for s, h, b in msgs]
        await asyncio.gather(*futs)
    finally:
        await nc.close()


def test_a_table_claimed_in_the_subject_is_overruled_by_the_registry(rig, tmp_path):
    """C1-P1-T1 is registered at P1/T1; its pit publishes it as table T9.
    Central files every event under T1 and says so in one merged alert."""
    shoe = rig.shoes["P1"][0]
    path = str(tmp_path / "p1.db")
    deal(rig, path, shoe, 30)
    assert publish.drain(path, rig.leaves["P1"].url, CASINO, "P1", {shoe: "T9"},
                         domain=rig.domain("P1"), auth=pit_auth(rig, "P1")) == 30
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM events WHERE shoe_id = %s",
                                            (shoe,)).fetchone()[0] >= 30)
    assert q(rig, "SELECT DISTINCT pit, tbl FROM events WHERE shoe_id = %s", (shoe,)) == [("P1", "T1")]
    assert q(rig, "SELECT casino, pit, tbl FROM shoes WHERE shoe_id = %s", (shoe,)) == [(CASINO, "P1", "T1")]
    rows = q(rig, "SELECT kind, count FROM alerts WHERE shoe_id = %s", (shoe,))
    assert rows == [("table_mismatch", 30)]


def test_a_device_of_another_pit_or_no_registry_entry_is_refused_with_an_alert(rig, tmp_path):
    """P1's credential publishes (on P1's own subjects) the events of P2's
    registered shoe and of a shoe nobody registered, both correctly signed:
    nothing of either is stored."""
    other = rig.shoes["P2"][1]
    stranger = "C1-P1-T99"
    simtable.make_keys(rig.keydir, [stranger])
    path = str(tmp_path / "p1-rogue.db")
    deal(rig, path, other, 5)
    deal(rig, path, stranger, 5)
    assert publish.drain(path, rig.leaves["P1"].url, CASINO, "P1", {other: "T2", stranger: "T1"},
                         domain=rig.domain("P1"), auth=pit_auth(rig, "P1")) == 10
    assert consume(rig, lambda c: c.execute(
        "SELECT count(*) FROM alerts WHERE kind IN ('wrong_pit', 'unknown_device')").fetchone()[0] >= 2)
    assert q(rig, "SELECT count(*) FROM events WHERE shoe_id IN (%s, %s)", (other, stranger)) == [(0,)]
    assert q(rig, "SELECT count(*) FROM shoes WHERE shoe_id = %s", (stranger,)) == [(0,)]
    got = dict(q(rig, "SELECT kind, count FROM alerts WHERE kind IN ('wrong_pit', 'unknown_device')"))
    assert got == {"wrong_pit": 5, "unknown_device": 5}
    # a device the admin registers (`shoe central register`) before it deals is taken
    newcomer = "C1-P1-T98"
    simtable.make_keys(rig.keydir, [newcomer])
    assert cli.main(["central", "register", newcomer, "--casino", CASINO, "--pit", "P1",
                     "--table", "T3", "--dsn", rig.pg.dsn]) == 0
    path2 = str(tmp_path / "p1-new.db")
    deal(rig, path2, newcomer, 5)
    publish.drain(path2, rig.leaves["P1"].url, CASINO, "P1", {newcomer: "T3"},
                  domain=rig.domain("P1"), auth=pit_auth(rig, "P1"))
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM events WHERE shoe_id = %s",
                                            (newcomer,)).fetchone()[0] == 5)
    assert q(rig, "SELECT DISTINCT tbl FROM events WHERE shoe_id = %s", (newcomer,)) == [("T3",)]


def test_a_shoes_record_starts_at_seq_1_never_at_a_claimed_first_prev(rig, tmp_path):
    """An early publisher sends seqs 6.. of a shoe with the Shoe-First-Prev
    that makes seq 6's tag verify. The old consumer started the shoe's
    central chain there (and `shoe verify --central` passed); now the run
    waits for seq 1, and the record starts at 1 once it comes."""
    shoe = rig.shoes["P2"][0]
    path = str(tmp_path / "p2.db")
    deal(rig, path, shoe, 12)
    with db.open_existing(path) as st:
        rows = list(st.db.execute("SELECT seq, event, mac FROM events WHERE shoe_id = ? ORDER BY seq",
                                  (shoe,)))
    late = rows[5:]
    hdrs = wire.run_headers(shoe, 6, [r[2] for r in late], [time.time()] * len(late),
                            [len(r[1].encode()) for r in late], first_prev=rows[4][2])
    asyncio.run(publish_raw(rig, "P2", [(wire.subject(CASINO, "P2", "T1"), hdrs,
                                         b"".join(r[1].encode() for r in late))]))
    assert not consume(rig, lambda c: c.execute("SELECT count(*) FROM events WHERE shoe_id = %s",
                                                (shoe,)).fetchone()[0] > 0, timeout=4)
    assert q(rig, "SELECT count(*) FROM held WHERE shoe_id = %s", (shoe,)) == [(7,)]
    publish.drain(path, rig.leaves["P2"].url, CASINO, "P2", {shoe: "T1"}, domain=rig.domain("P2"),
                  auth=pit_auth(rig, "P2"))
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM events WHERE shoe_id = %s",
                                            (shoe,)).fetchone()[0] == 12)
    assert q(rig, "SELECT first_seq FROM shoes WHERE shoe_id = %s", (shoe,)) == [(1,)]


def test_verify_central_fails_a_record_that_starts_after_seq_1(rig, tmp_path, capsys):
    """What the old consumer could be led to store (a record from a late
    seq, with the PREV that makes it verify) now fails `shoe verify
    --central`, whoever wrote it."""
    shoe = "C1-P2-T97"
    simtable.make_keys(rig.keydir, [shoe])
    assert cli.main(["central", "register", shoe, "--casino", CASINO, "--pit", "P2",
                     "--table", "T7", "--dsn", rig.pg.dsn]) == 0
    path = str(tmp_path / "p2-late.db")
    deal(rig, path, shoe, 10)
    publish.drain(path, rig.leaves["P2"].url, CASINO, "P2", {shoe: "T7"}, domain=rig.domain("P2"),
                  auth=pit_auth(rig, "P2"))
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM events WHERE shoe_id = %s",
                                            (shoe,)).fetchone()[0] == 10)
    assert cli.main(["verify", "--central", rig.reader_dsn, "--key-dir", rig.keydir, "--mac-only",
                     "--shoe", shoe]) == 0
    with psycopg.connect(rig.pg.dsn) as c:   # the admin (an insider) cuts the head off
        mac5 = c.execute("SELECT mac FROM events WHERE shoe_id = %s AND seq = 5", (shoe,)).fetchone()[0]
        c.execute("DELETE FROM events WHERE shoe_id = %s AND seq <= 5", (shoe,))
        c.execute("UPDATE shoes SET first_seq = 6, first_prev = %s WHERE shoe_id = %s", (mac5, shoe))
    capsys.readouterr()
    assert cli.main(["verify", "--central", rig.reader_dsn, "--key-dir", rig.keydir, "--mac-only",
                     "--shoe", shoe]) == 1
    assert "starts at seq 6, not at its first event" in capsys.readouterr().out


@pytest.mark.parametrize("flood", [2000, pytest.param(10000, marks=pytest.mark.slow)])
def test_a_junk_flood_leaves_a_handful_of_merged_alerts(rig, flood):
    """2,000 refused messages (10,000 under ``pytest -m slow``) from one
    pit's credential: random unknown shoe ids, malformed headers, forged
    tags for a registered shoe. Each cause is one row per device with the
    count, not a row a message."""
    shoe = rig.shoes["P1"][1]
    rnd = random.Random(21)
    msgs = []
    subj = wire.subject(CASINO, "P1", "T2")
    for i in range(flood):
        kind = i % 3
        if kind == 0:   # a device nobody registered (a new id every time)
            h = wire.headers("X%08d" % rnd.randrange(10 ** 8), 1, "ab" * 16, time.time())
        elif kind == 1:  # not a pit's event at all
            h = {"Shoe-Id": shoe, "Shoe-Seq": "zero"}
        else:            # a registered shoe, a made-up tag
            h = wire.headers(shoe, 1, "%032x" % rnd.getrandbits(128), time.time())
        h.pop(wire.H_ID, None)
        msgs.append((subj, h, b'{"type":"result","round":1,"winner":"player"}'))
    before = q(rig, "SELECT count(*), coalesce(sum(count), 0) FROM alerts")[0]
    asyncio.run(publish_raw(rig, "P1", msgs))
    assert consume(rig, lambda c: c.execute("SELECT coalesce(sum(count), 0) FROM alerts").fetchone()[0]
                   >= before[1] + flood, timeout=120)
    rows, total = q(rig, "SELECT count(*), sum(count) FROM alerts")[0]
    assert total - before[1] == flood
    assert rows - before[0] <= 3, q(rig, "SELECT kind, shoe_id, count FROM alerts")
    first, last = q(rig, "SELECT time, last_time FROM alerts WHERE kind = 'unknown_device'")[0]
    assert last >= first
    assert q(rig, "SELECT count(*) FROM events WHERE shoe_id = %s", (shoe,)) == [(0,)]


def test_pit_alerts_and_audit_rows_reach_central_and_its_view(rig, tmp_path):
    from host_tools.central import view
    from host_tools.store import audit
    path = str(tmp_path / "p2-log.db")
    with db.Store(path) as st:
        audit.ensure(st.db)
        audit.record(st.db, "sam", "supervisor", "127.0.0.1", "T1", "ack-alert", "7", "ok")
        st.alert(rig.shoes["P2"][0], "critical", "reader_fault", "the reader stopped answering")
        st.db.commit()
    publish.drain(path, rig.leaves["P2"].url, CASINO, "P2", {}, domain=rig.domain("P2"),
                  auth=pit_auth(rig, "P2"))

    async def send_log():
        nc = await streams.connect(rig.leaves["P2"].url, auth=pit_auth(rig, "P2"))
        try:
            box = publish.Outbox(path)
            try:
                return await publish.publish_log(nc.jetstream(domain=rig.domain("P2")), box, CASINO, "P2")
            finally:
                box.close()
        finally:
            await nc.close()
    assert asyncio.run(send_log()) == 2
    # and a refusal tied to no registered device, which central keeps per pit
    asyncio.run(publish_raw(rig, "P2", [(wire.subject(CASINO, "P2", "T1"),
                                         wire.headers("NOBODY-2", 1, "ab" * 16, time.time()), b"{}")]))
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM pit_log WHERE pit = 'P2'")
                   .fetchone()[0] == 2 and c.execute(
                       "SELECT count(*) FROM alerts WHERE kind = 'unknown_device' AND pit = 'P2'")
                   .fetchone()[0] == 1)

    async def read_view():
        v = view.View(rig.reader_dsn)
        v.conn = await v.connect()
        try:
            return await v.pit_log()
        finally:
            await v.conn.close()
    got = asyncio.run(read_view())

    async def read_page():
        from aiohttp.test_utils import TestClient, TestServer
        async with TestClient(TestServer(view.make_app(rig.reader_dsn))) as c:
            r = await c.get("/pit-log")
            return r.status, await r.text()
    status, page = asyncio.run(read_page())
    assert status == 200 and "reader_fault" in page and "ack-alert" in page
    assert "unknown_device" in page
    kinds = {(r["pit"], r["kind"]): r["row"] for r in got["pits"]}
    assert kinds[("P2", "audit")]["action"] == "ack-alert"
    assert kinds[("P2", "alert")]["kind"] == "reader_fault"
    assert any(a["kind"] == "unknown_device" and a["pit"] == "P2" and a["count"] >= 1
               for a in got["central"])


def _pit_log_rows(path, kind):
    box = publish.Outbox(path)
    try:
        return box.log_pending(kind)[0]
    finally:
        box.close()


def test_pit_alert_chain_at_central_detects_a_forged_and_a_dropped_row(rig, tmp_path):
    """Pit P1's alert history reaches central on the pit's own hash chain
    (central/pitlog.py). An insider with P1's credential publishes a pit
    alert row made up on the way (its hash does not recompute) and another
    that claims the next id with a recomputed hash but over another head
    (a fork): both are refused with a critical ``pit_log_forged`` alert.
    Then a row of the pit's history is dropped on the way: the rows after
    it are held, a ``pit_log_gap`` alert is raised, and `shoe verify
    --central` fails on that pit's alert log until the row arrives."""
    from host_tools.store import audit
    path = str(tmp_path / "p1-log.db")
    with db.Store(path) as st:
        audit.ensure(st.db)
        for i in range(4):
            st.alert(rig.shoes["P1"][0], "warning", "reader_fault", "reader fault %d" % i)
        st.db.commit()
    rows = _pit_log_rows(path, "alert")
    assert [r["id"] for r in rows] == [1, 2, 3, 4]
    subj = wire.log_subject(CASINO, "P1", "alert")

    def send(batch):
        asyncio.run(publish_raw(rig, "P1", [(subj, {}, json.dumps(batch).encode())]))

    def forged_count(c):
        return c.execute("SELECT coalesce(sum(count), 0) FROM alerts WHERE kind = 'pit_log_forged'"
                         " AND pit = 'P1'").fetchone()[0]
    send([rows[0]])
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM pit_log WHERE pit = 'P1' AND"
                                            " kind = 'alert' AND linked").fetchone()[0] == 1)
    # made up on the way: another detail, the pit's hash left as it was
    state = json.loads(rows[1]["state"])
    state[5] = "all is well"
    edited = dict(rows[1], state=json.dumps(state, separators=(",", ":")))
    # a fork: recomputed, but over a head that is not central's
    other = dict(rows[1], prev_hash="ab" * 32)
    other["hash"] = audit.row_hash(other["prev_hash"], (other["alert_id"], other["state"]))
    send([edited, other])
    assert consume(rig, lambda c: forged_count(c) >= 2)
    assert forged_count_value(rig) == 2
    assert q(rig, "SELECT severity FROM alerts WHERE kind = 'pit_log_forged'") == [("critical",)]
    # the real row 2 is then taken; row 3 is dropped on the way, row 4 waits
    send([rows[1], rows[3]])
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM alerts WHERE kind = 'pit_log_gap'"
                                            " AND pit = 'P1'").fetchone()[0] == 1, timeout=30)
    assert q(rig, "SELECT pit_id, linked FROM pit_log WHERE pit = 'P1' AND kind = 'alert'"
                  " ORDER BY pit_id") == [(1, True), (2, True), (4, False)]
    argv = ["verify", "--central", rig.reader_dsn, "--key-dir", rig.keydir, "--mac-only"]
    r = _verify(argv)
    assert r[0] == 1 and "FAIL pit C1/P1 alert log: row 4 is held: row 3 never arrived" in r[1], r[1]
    assert "FAIL central: critical alert pit_log_forged x2" in r[1], r[1]
    # the dropped row arrives: the chain is whole, row 4 linked after it
    send([rows[2]])
    assert consume(rig, lambda c: c.execute("SELECT count(*) FROM pit_log WHERE pit = 'P1' AND"
                                            " kind = 'alert' AND linked").fetchone()[0] == 4)
    r = _verify(argv)
    assert "OK   pit C1/P1 alert log: 4 rows on the pit's chain" in r[1], r[1]
    # a row deleted at central breaks the chain verify walks
    with psycopg.connect(rig.pg.dsn) as c:
        c.execute("DELETE FROM pit_log WHERE pit = 'P1' AND kind = 'alert' AND pit_id = 2")
    r = _verify(argv)
    assert "FAIL pit C1/P1 alert log: row 2 missing" in r[1], r[1]


def forged_count_value(rig):
    return q(rig, "SELECT coalesce(sum(count), 0) FROM alerts WHERE kind = 'pit_log_forged'"
                  " AND pit = 'P1'")[0][0]


def _verify(argv):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "host_tools.cli"] + argv, capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout + r.stderr
