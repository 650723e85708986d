"""The casino record end to end on real servers (host_tools/casino):
nats-server from the pinned wheel, a throw-away PostgreSQL cluster, pit
stores written as the bridge writes them, `shoe central`'s consumer, and
`shoe verify --central`."""

import asyncio
import os
import time

import psycopg
import pytest

from host_tools import cli
from host_tools.central import consumer
from host_tools.casino import publish
from host_tools.sim.rigs import casino as rig, servers
from host_tools.sim import simtable
from host_tools.pit.config import Casino
from host_tools.store import db


@pytest.fixture(scope="module")
def pg():
    server = servers.Postgres(fsync=False).start()
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    server = servers.Nats(tmp_path_factory.mktemp("nats"), "hub").start()
    yield server
    server.stop()


_n = [0]


@pytest.fixture
def dsn(pg):
    """A fresh database per test, so each test's record is only its own."""
    _n[0] += 1
    name = "t%d_%d" % (os.getpid(), _n[0])
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        c.execute("CREATE DATABASE %s" % name)
    return pg.dsn.replace("dbname=casino", "dbname=" + name)


@pytest.fixture
def casino():
    _n[0] += 1
    return "C%d_%d" % (os.getpid(), _n[0])


def make_store(path, keydir, shoes, n):
    keys = simtable.make_keys(keydir, shoes)
    sims = {s: simtable.SimShoe(s, keys[s], seed=i) for i, s in enumerate(shoes)}
    with db.Store(path) as st:
        for sim in sims.values():
            sim.deal(st, n)
    return sims


def store_rows(path):
    with db.open_existing(path) as st:
        return {(s, q): (e, m) for s, q, e, m in st.db.execute("SELECT shoe_id, seq, event, mac FROM events")}


def central_rows(dsn):
    with psycopg.connect(dsn) as c:
        if c.execute("SELECT to_regclass('events')").fetchone()[0] is None:
            return {}  # no consumer has made the schema yet
        return {(s, q): (e, m) for s, q, e, m in c.execute("SELECT shoe_id, seq, event, mac FROM events")}


def alerts(dsn):
    with psycopg.connect(dsn) as c:
        # one row per cause and device with a count (merged, issue 21): one item per refusal
        return [tuple(r[:3]) for r in c.execute("SELECT shoe_id, severity, kind, count FROM alerts"
                                                " ORDER BY id") for _ in range(r[3])]


REGISTERED_TABLE = {"R2": "T2"}   # the device registry's table of each test shoe (else T1)


def register(dsn, keydir, casino, where=None):
    """Register every shoe with a key in ``keydir`` at pit P1, or where
    ``where`` ({shoe: (pit, table)}) puts it (central refuses an
    unregistered device, issue 21)."""
    from host_tools.central import ingest
    with psycopg.connect(dsn, autocommit=True) as c:
        ingest.create_schema(c)
        for name in os.listdir(keydir):
            shoe = name[:-len(".key")]
            pit, table = (where or {}).get(shoe, ("P1", REGISTERED_TABLE.get(shoe, "T1")))
            ingest.register(c, shoe, casino, pit, table)


def consume(url, dsn, keydir, casino, want, n=1, timeout=20.0, where=None):
    """Run ``n`` consumers until the record holds ``want`` events (or time
    runs out); return the consumers."""
    register(dsn, keydir, casino, where)

    async def main():
        stop = asyncio.Event()
        cs = [consumer.Consumer(url, dsn, keydir, casino) for _ in range(n)]
        tasks = [asyncio.create_task(c.run(stop)) for c in cs]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            if len(central_rows(dsn)) >= want and all(c.central for c in cs):
                await asyncio.sleep(0.3)  # let anything still in flight land (it must not add rows)
                break
        stop.set()
        await asyncio.gather(*tasks)
        return cs
    return asyncio.run(main())


def test_publish_and_consume_exactly_once(tmp_path, hub, dsn, casino):
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["A1", "A2"], 120)
    assert publish.drain(path, hub.url, casino, "P1", {"A1": "T1"}) == 240
    assert publish.drain(path, hub.url, casino, "P1") == 0   # the marks hold
    with db.Store(path) as st:                                # a lost mark: all of it again
        st.db.execute("DELETE FROM published")
    assert publish.drain(path, hub.url, casino, "P1") == 240  # the broker drops these (Nats-Msg-Id)
    cs = consume(hub.url, dsn, keydir, casino, 240)
    assert central_rows(dsn) == store_rows(path)
    assert alerts(dsn) == []
    assert cs[0].totals()["stored"] == 240
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT DISTINCT tbl FROM events WHERE shoe_id = 'A1'").fetchall() == [("T1",)]
        assert c.execute("SELECT last_seq FROM shoes ORDER BY 1").fetchall() == [(120,), (120,)]
        assert c.execute("SELECT count(*) FROM anchors").fetchone()[0] == 4  # checkpoints at 50, 100


def test_broker_down_then_back_catches_up(tmp_path, dsn, casino):
    """The pit keeps recording while the broker is away; its publisher
    catches up from the high-water mark when the broker returns."""
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    nats_srv = servers.Nats(tmp_path / "nats", "hub2").start()
    try:
        sims = make_store(path, keydir, ["B1"], 30)
        pub = publish.PitPublisher(path, Casino(nats_srv.url, casino, "P1", None), {"B1": "T1"})
        pub.start()
        wait_for(lambda: publish_mark(path, "B1") == 30, "first 30 published")
        nats_srv.kill()
        with db.Store(path) as st:
            sims["B1"].deal(st, 40)                  # dealt while the broker is down
        pub.on_message({"type": "event", "shoe": "B1", "table": "T1"})
        time.sleep(1.0)
        assert publish_mark(path, "B1") == 30 and not pub.connected
        nats_srv.start()
        wait_for(lambda: publish_mark(path, "B1") == 70, "catch-up after the broker returned")
        pub.close()
        consume(nats_srv.url, dsn, keydir, casino, 70)
        assert central_rows(dsn) == store_rows(path)
    finally:
        nats_srv.stop()


def publish_mark(path, shoe):
    box = publish.Outbox(path)
    try:
        return box.marks().get(shoe)
    finally:
        box.close()


def wait_for(cond, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for: %s" % what)


def test_two_consumers_split_the_work_without_duplicates(tmp_path, hub, dsn, casino):
    """Both consumers take part, every event lands once, and republished
    events without a message id (past the broker's dedupe) are dropped by
    the (shoe, seq) key."""
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    shoes = ["D%d" % i for i in range(6)]
    make_store(path, keydir, shoes, 150)
    publish.drain(path, hub.url, casino, "P1")

    async def republish_without_ids():
        import nats
        from host_tools.casino import wire
        nc = await nats.connect(hub.url)
        js = nc.jetstream()
        with db.open_existing(path) as st:
            for shoe, seq, event, mac in st.db.execute(
                    "SELECT shoe_id, seq, event, mac FROM events WHERE seq <= 40"):
                h = wire.headers(shoe, seq, mac, time.time(), db.ZERO_HEX if seq == 1 else None)
                del h[wire.H_ID]
                await js.publish(wire.subject(casino, "P1", "T1"), event.encode(), headers=h)
        await nc.close()
    asyncio.run(republish_without_ids())
    cs = consume(hub.url, dsn, keydir, casino, 900, n=2)
    assert central_rows(dsn) == store_rows(path)
    totals = [c.totals() for c in cs]
    assert sum(t["stored"] for t in totals) == 900
    # a copy that met its original while both waited in `held` is absorbed
    # there (same key), so this counts at most the 240 copies
    assert 0 < sum(t["duplicates"] for t in totals) <= 240
    assert all(t["batches"] > 0 for t in totals)
    assert alerts(dsn) == []


def test_forged_and_replayed_events_are_refused_and_alerted(tmp_path, hub, dsn, casino):
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["F1"], 60)
    publish.drain(path, hub.url, casino, "P1")
    consume(hub.url, dsn, keydir, casino, 60)
    assert asyncio.run(rig.inject(hub.url, casino, "P1", path, "F1")) == 2
    cs = consume(hub.url, dsn, keydir, casino, 60, timeout=3)
    kinds = sorted(k for _s, _sev, k in alerts(dsn))
    assert kinds == ["conflict", "conflict"]  # both hit stored seqs: neither verifies there
    assert cs[0].totals()["refused"] == 2
    assert central_rows(dsn) == store_rows(path)


def test_out_of_order_events_wait_for_their_predecessor(tmp_path, hub, dsn, casino):
    """A seq that arrives before the one it links to is held, not stored,
    and promoted (verified) the moment its predecessor is stored."""
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["O1"], 10)
    rows = store_rows(path)

    async def main():
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        from host_tools.central import ingest as central
        async with conn.transaction():
            await conn.execute(central.SCHEMA)
        register(dsn, keydir, casino)
        c = central.Central(conn, central.Keys(keydir))

        def msg(seq):
            event, mac = rows[("O1", seq)]
            return central.Msg(casino, "P1", "T1", "O1", seq, mac,
                               db.ZERO_HEX if seq == 1 else None, time.time(), event.encode())
        first = await c.process([msg(s) for s in (5, 6, 7, 8, 9, 10)])
        assert (first.stored, first.held) == (0, 6)
        second = await c.process([msg(s) for s in (1, 2, 3)])
        assert second.stored == 3
        third = await c.process([msg(4)])
        assert third.stored == 7 and third.alerts == []
        await conn.close()
    asyncio.run(main())
    assert central_rows(dsn) == rows
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT count(*) FROM held").fetchone()[0] == 0


def test_verify_central_passes_a_good_record_and_fails_an_edited_row(tmp_path, hub, dsn, casino, capsys):
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["V1", "V2"], 60)
    publish.drain(path, hub.url, casino, "P1")
    consume(hub.url, dsn, keydir, casino, 120)
    assert cli.main(["verify", "--central", dsn, "--key-dir", keydir]) == 0
    out = capsys.readouterr().out
    assert "OK   shoe V1: 60 events" in out and "anchor V1:50:" in out
    with psycopg.connect(dsn) as c:
        c.execute("UPDATE events SET event = replace(event, '\"card\":\"', '\"card\":\"X') "
                  "WHERE shoe_id = 'V2' AND seq = 7")
    assert cli.main(["verify", "--central", dsn, "--key-dir", keydir]) == 1
    out = capsys.readouterr().out
    assert "OK   shoe V1" in out
    assert "FAIL shoe V2: seq 7: tag does not verify" in out
    # without keys the central record cannot be checked: one line, exit 2
    assert cli.main(["verify", "--central", dsn]) == 2
    assert "--central needs --key-dir" in capsys.readouterr().err


def test_pit_config_casino_section(tmp_path):
    from host_tools.pit import config
    base = 'store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/null"\nkey_file = "k"\n'
    cfg = config.parse({**_toml(base), "casino": {"nats": "nats://127.0.0.1:4222", "casino": "C1",
                                                 "pit": "P1"}})
    assert (cfg.casino.casino, cfg.casino.pit, cfg.casino.domain) == ("C1", "P1", None)
    assert config.parse(_toml(base)).casino is None
    with pytest.raises(config.ConfigError, match=r"casino.pit: 'a.b'"):
        config.parse({**_toml(base), "casino": {"nats": "nats://x:1", "casino": "C1", "pit": "a.b"}})
    with pytest.raises(config.ConfigError, match="casino.nats: .*not a nats"):
        config.parse({**_toml(base), "casino": {"nats": "http://x", "casino": "C1", "pit": "P"}})


def _toml(text):
    import tomllib
    return tomllib.loads(text)


def test_publisher_thread_stops_cleanly_without_a_broker(tmp_path):
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["N1"], 3)
    pub = publish.PitPublisher(path, Casino("nats://127.0.0.1:%d" % servers.free_port(), "C", "P", None))
    pub.start()
    wait_for(lambda: pub.last_error, "the publisher to report the broker missing")
    assert not pub.connected
    t = time.monotonic()
    pub.close()
    assert time.monotonic() - t < 5 and not pub.thread.is_alive()


def test_runs_cut_at_holes_and_first_events():
    from host_tools.casino import wire
    rows = [("A", q, "e%d" % q, "t%d" % q, 1.0, 3, "p" * 32) for q in range(3, 3 + 70)]
    rows += [("B", q, "x", "u", 2.0, 1, None) for q in (1, 2, 4)]
    got = [(m[0], m[1], m[2], m[7]) for m in publish.runs(rows)]
    assert got == [("A", 3, 3 + wire.MAX_EVENTS - 1, "p" * 32), ("A", 3 + wire.MAX_EVENTS, 72, None),
                   ("B", 1, 2, db.ZERO_HEX), ("B", 4, 4, None)]


def test_a_run_is_verified_event_by_event(tmp_path, hub, dsn, casino):
    """Runs share a message, not trust: a tampered event inside a run is
    refused on its own (those before it stored, those after it held for the
    missing link), and a run whose lengths do not cut its payload is
    malformed, nothing of it stored. Published runs make few messages."""
    from host_tools.casino import streams, wire
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["R1"], 150)
    make_store(str(tmp_path / "other.db"), keydir, ["R2"], 10)
    assert publish.drain(path, hub.url, casino, "P1") == 150
    with db.open_existing(str(tmp_path / "other.db")) as st:
        rows = list(st.db.execute("SELECT seq, event, mac FROM events WHERE shoe_id = 'R2' ORDER BY seq"))

    async def publish_bad_runs():
        nc = await streams.connect(hub.url)
        js = nc.jetstream()
        info = await js.stream_info(wire.casino_stream(casino))
        bodies = [e.encode() for _q, e, _m in rows]
        bodies[4] = bodies[4].replace(b'"round":', b'"round":1')   # seq 5 tampered
        h = wire.run_headers("R2", 1, [m for _q, _e, m in rows], [time.time()] * 10,
                             [len(b) for b in bodies], db.ZERO_HEX)
        await js.publish(wire.subject(casino, "P1", "T2"), b"".join(bodies), headers=h)
        h[wire.H_LEN] = ",".join(["1"] * 10)
        del h[wire.H_ID]   # else the broker drops it as the same message
        await js.publish(wire.subject(casino, "P1", "T2"), b"".join(bodies), headers=h)
        await nc.close()
        return info.state.messages
    assert asyncio.run(publish_bad_runs()) == 3   # 150 events in runs of at most 64
    consume(hub.url, dsn, keydir, casino, 154, timeout=5)
    got = central_rows(dsn)
    assert {k: v for k, v in got.items() if k[0] == "R1"} == store_rows(path)
    assert sorted(q for s, q in got if s == "R2") == [1, 2, 3, 4]
    assert sorted(k for _s, _sev, k in alerts(dsn)) == ["forged_event", "malformed"]
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT count(*) FROM held WHERE shoe_id = 'R2'").fetchone()[0] == 5
