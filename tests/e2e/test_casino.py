"""The casino record end to end on real servers (host_tools/casino):
nats-server from the pinned wheel, a throw-away PostgreSQL cluster, pit
stores written as the bridge writes them, `shoe central`'s consumer, and
`shoe verify --central`."""

import asyncio
import os
import time

import psycopg

from host_tools import cli
from host_tools.casino import publish
from host_tools.sim.rigs import casino as rig, servers
from host_tools.sim import simtable
from host_tools.pit.config import Casino
from host_tools.protocol import chain
from host_tools.protocol.keys import Keys
from host_tools.store import db
from support.casino import central_rows, consume, register


def make_store(path, keydir, shoes, n):
    """``n`` events of each shoe (one-deck shoes, so a few end and leave a
    checkpoint) into a pit store, as the bridge writes them."""
    keys = simtable.make_keys(keydir, shoes)
    sims = {s: simtable.SimShoe(s, keys[s], seed=i, decks=1, workdir=os.path.dirname(path))
            for i, s in enumerate(shoes)}
    with db.Store(path) as st:
        for sim in sims.values():
            sim.deal(st, n)
    return sims


def seqs_of(path, shoe, kind):
    """The seqs of a shoe's events of one type in a pit store, read with
    plain JSON (not the code under test)."""
    import json
    with db.open_existing(path) as st:
        return [q for q, e in st.db.execute("SELECT seq, event FROM events WHERE shoe_id = ?"
                                            " ORDER BY seq", (shoe,)) if json.loads(e)["type"] == kind]


def store_rows(path):
    with db.open_existing(path) as st:
        return {(s, q): (e, m) for s, q, e, m in st.db.execute("SELECT shoe_id, seq, event, mac FROM events")}


def alerts(dsn):
    with psycopg.connect(dsn) as c:
        # one row per cause and device with a count (merged): one item per refusal
        return [tuple(r[:3]) for r in c.execute("SELECT shoe_id, severity, kind, count FROM alerts"
                                                " ORDER BY id") for _ in range(r[3])]


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
        checkpoints = len(seqs_of(path, "A1", "checkpoint")) + len(seqs_of(path, "A2", "checkpoint"))
        assert checkpoints >= 2  # each one-deck shoe's end
        assert c.execute("SELECT count(*) FROM anchors").fetchone()[0] == checkpoints


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
    assert kinds == ["forged_event", "forged_event"]  # both hit stored seqs: neither verifies there
    assert cs[0].totals()["refused"] == 2
    assert central_rows(dsn) == store_rows(path)


async def direct_central(dsn, keydir, casino, rows, shoe):
    """(connection, central.Central, msg) for feeding a store's events to the
    batch logic straight (no NATS): ``msg(seq)`` is the Msg of ``shoe``'s
    stored event ``seq`` as the pit publishes it."""
    from host_tools.central import ingest as central
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    async with conn.transaction():
        await conn.execute(central.SCHEMA)
    register(dsn, keydir, casino)

    def msg(seq):
        event, mac = rows[(shoe, seq)]
        return central.Msg(casino, "P1", "T1", shoe, seq, mac, db.ZERO_HEX if seq == 1 else None,
                           time.time(), event.encode())
    return conn, central.Central(conn, Keys(keydir)), msg


def test_out_of_order_events_wait_for_their_predecessor(tmp_path, hub, dsn, casino):
    """A seq that arrives before the one it links to is held, not stored,
    and promoted (verified) the moment its predecessor is stored."""
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["O1"], 10)
    rows = store_rows(path)

    async def main():
        conn, c, msg = await direct_central(dsn, keydir, casino, rows, "O1")
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


def test_a_verified_event_meeting_a_row_written_behind_the_heads_back_keeps_the_row(
        tmp_path, hub, dsn, casino):
    """The verified rows go into ``events`` by COPY, which cannot skip a
    collision: someone who wrote seq 4 into the record behind the chain head
    (an edit with write access) must not stop the consumer, and their row
    must not be overwritten. The batch goes again through the staging
    table: seq 4 stays as it was, the rest are stored, and a critical
    ``lost_race`` alert says so."""
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["W1"], 6)
    rows = store_rows(path)

    async def main():
        conn, c, msg = await direct_central(dsn, keydir, casino, rows, "W1")
        assert (await c.process([msg(s) for s in (1, 2, 3)])).stored == 3
        await conn.execute("INSERT INTO events (shoe_id, seq, casino, pit, tbl, event, mac,"
                           " central_committed) VALUES ('W1', 4, %s, 'P1', 'T1', '{}', 'planted', 0)",
                           (casino,))
        out = await c.process([msg(s) for s in (4, 5, 6)])
        assert out.stored == 3   # verified; one of them met the planted row
        assert [(a[1], a[2]) for a in out.alerts] == [("critical", "lost_race")]
        await conn.close()
    asyncio.run(main())
    got = central_rows(dsn)
    assert got[("W1", 4)] == ("{}", "planted")
    assert {k: v for k, v in got.items() if k[1] != 4} == {k: v for k, v in rows.items() if k[1] != 4}
    assert [k for _s, _sev, k in alerts(dsn)] == ["lost_race"]


def test_verify_central_passes_a_good_record_and_fails_an_edited_row(tmp_path, hub, dsn, casino, capsys):
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    make_store(path, keydir, ["V1", "V2"], 120)
    publish.drain(path, hub.url, casino, "P1")
    consume(hub.url, dsn, keydir, casino, 240)
    # These shoes have no secure element: no public key is registered, so
    # verify says so and fails unless asked for the MAC chain alone.
    assert cli.main(["verify", "--central", dsn, "--key-dir", keydir]) == 1
    out = capsys.readouterr().out
    assert "FAIL shoe V1: no public key (the central device registry)" in out
    assert cli.main(["verify", "--central", dsn, "--key-dir", keydir, "--mac-only"]) == 0
    out = capsys.readouterr().out
    anchor = seqs_of(path, "V1", "checkpoint")[-1]
    assert "OK   shoe V1: 120 events" in out and "anchor V1:%d:" % anchor in out
    card = seqs_of(path, "V2", "card")[3]
    with psycopg.connect(dsn) as c:
        c.execute("UPDATE events SET event = replace(event, '\"card\":\"', '\"card\":\"X') "
                  "WHERE shoe_id = 'V2' AND seq = %s", (card,))
    assert cli.main(["verify", "--central", dsn, "--key-dir", keydir, "--mac-only"]) == 1
    out = capsys.readouterr().out
    assert "OK   shoe V1" in out
    assert "FAIL shoe V2: seq %d: tag does not verify" % card in out
    # without keys the central record cannot be checked: one line, exit 2
    assert cli.main(["verify", "--central", dsn]) == 2
    assert "--central needs --key-dir" in capsys.readouterr().err


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


def test_central_refuses_a_signed_event_that_fails_the_schema(tmp_path, hub, dsn, casino):
    """The shoe's key signed it, the chain links it, but its shape is not an
    event the shoe can send (the checkpoint the old simulated tables wrote:
    `at` for `through`): `shoe central` alerts and never stores it, and the
    shoe's record stops there (what follows waits in `held`, unverified)."""
    from firmware.link import auth, host_frames, proto
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    sims = make_store(path, keydir, ["I1"], 10)
    fkey = auth.frames_key(open_key(keydir, "I1"))
    bad = b'{"source":"link","type":"checkpoint","at":11}'
    head = sims["I1"].prev                              # the tag of stored seq 10
    bad_tag = host_frames.frame_mac(fkey, "I1", proto.EVENT, 11, head.encode(), bad)
    _seq, good, _tag, _prev = sims["I1"].next()          # a real event, re-signed as seq 12
    good_tag = host_frames.frame_mac(fkey, "I1", proto.EVENT, 12, bad_tag, good)
    with db.Store(path) as st:                          # the pit's store has no schema check
        st.append("I1", 11, bad, mac=bad_tag.decode())
        st.append("I1", 12, good, mac=good_tag.decode())
    assert chain.tag_link(fkey, "I1", 11, head, bad, bad_tag.decode())  # correctly tagged
    assert publish.drain(path, hub.url, casino, "P1") == 12
    consume(hub.url, dsn, keydir, casino, 10, timeout=3)
    rows = central_rows(dsn)
    assert sorted(q for _s, q in rows) == list(range(1, 11))
    assert [k for _s, _sev, k in alerts(dsn)] == ["invalid_event"]
    with psycopg.connect(dsn) as c:
        detail = c.execute("SELECT detail FROM alerts").fetchone()[0]
        assert "seq 11" in detail and "'through' is missing" in detail and "\n" not in detail
        assert c.execute("SELECT seq FROM held").fetchall() == [(12,)]
        assert c.execute("SELECT last_seq FROM shoes").fetchall() == [(10,)]


def open_key(keydir, shoe):
    from host_tools.protocol.keys import read_key
    return read_key(os.path.join(keydir, shoe + ".key"))


def test_a_held_event_that_fails_the_schema_is_refused_when_its_turn_comes(tmp_path, hub, dsn, casino):
    """Out of order: the signed, schema-failing seq 11 waits in `held` for
    seq 10, and when 10 is stored it is refused (an alert, out of `held`),
    never promoted; seq 12 after it keeps waiting."""
    from host_tools.central import ingest as central
    from firmware.link import auth, host_frames, proto
    path, keydir = str(tmp_path / "pit.db"), str(tmp_path / "keys")
    sims = make_store(path, keydir, ["H1"], 10)
    rows = store_rows(path)
    fkey = auth.frames_key(open_key(keydir, "H1"))
    bad = b'{"type":"card","round":1,"pos":"P1","card":"9H"}'   # no up, next, simulated, left
    bad_tag = host_frames.frame_mac(fkey, "H1", proto.EVENT, 11, sims["H1"].prev.encode(), bad)
    good = sims["H1"].next()[1]
    good_tag = host_frames.frame_mac(fkey, "H1", proto.EVENT, 12, bad_tag, good)

    def msg(seq, body, mac):
        return central.Msg(casino, "P1", "T1", "H1", seq, mac, db.ZERO_HEX if seq == 1 else None,
                           time.time(), body)

    register(dsn, keydir, casino)  # central refuses a device the registry does not hold

    async def main():
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        async with conn.transaction():
            await conn.execute(central.SCHEMA)
        c = central.Central(conn, Keys(keydir))
        first = await c.process([msg(11, bad, bad_tag.decode()), msg(12, good, good_tag.decode())])
        assert (first.stored, first.held) == (0, 2)
        second = await c.process([msg(q, rows[("H1", q)][0].encode(), rows[("H1", q)][1])
                                  for q in range(1, 11)])
        assert second.stored == 10 and [a[2] for a in second.alerts] == ["invalid_event"]
        await conn.close()
    asyncio.run(main())
    assert central_rows(dsn) == rows
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT seq FROM held").fetchall() == [(12,)]


def test_verify_central_checks_signed_checkpoints_with_the_registered_public_key(tmp_path, hub, dsn, casino,
                                                                               capsys):
    """The forged-record test on the central record: a database
    administrator who also holds the consumer's MAC keys changes one result
    and recomputes every later tag (and the shoe's head and anchors); the
    MAC chain holds, the public key registered from `shoe deploy`'s
    SHOE-ID.pub does not."""
    import json

    from firmware.drivers.atecc608 import ATECC608
    from firmware.drivers.atecc608_setup import provision
    from host_tools.protocol import pubkeys
    from host_tools.sim.atecc608 import ADDRESS, Chip
    from host_tools.sim.i2cbus import Bus, DirectI2C
    from firmware.link import auth, host_frames, proto

    path, keydir = str(tmp_path / "pit.db"), tmp_path / "keys"
    keys = simtable.make_keys(str(keydir), ["SIG1"])
    se = ATECC608(DirectI2C(Bus({ADDRESS: Chip(str(tmp_path / "chip.json"), timing=0.02)})))
    public = bytearray(64)
    provision(se, public)
    pubkeys.write_public(keydir / "SIG1.pub", public)
    sim = simtable.SimShoe("SIG1", keys["SIG1"], seed=5, decks=1, workdir=str(tmp_path), secure=se,
                           manifest="cd" * 32)
    with db.Store(path) as st:
        sim.deal(st, 160)
    sim.close()
    publish.drain(path, hub.url, casino, "P1")
    consume(hub.url, dsn, str(keydir), casino, 160)
    assert cli.main(["central", "register", "SIG1", "--dsn", dsn, "--casino", casino, "--pit", "P1",
                     "--table", "T1", "--pubkey", str(keydir / "SIG1.pub")]) == 0
    assert "public key registered" in capsys.readouterr().out
    argv = ["verify", "--central", dsn, "--key-dir", str(keydir), "--shoe", "SIG1"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "OK   shoe SIG1: 160 events" in out and "its chip signed" in out, out
    # The administrator's forgery.
    fkey = auth.frames_key(keys["SIG1"])
    with psycopg.connect(dsn) as c:
        rows = c.execute("SELECT seq, event, mac FROM events WHERE shoe_id = 'SIG1' ORDER BY seq").fetchall()
        changed = None
        prev = None
        for seq, text, mac in rows:
            event = json.loads(text)
            if changed is None and event["type"] == "result" and event["winner"] in ("banker", "player"):
                event["winner"] = "player" if event["winner"] == "banker" else "banker"
                text = json.dumps(event, separators=(",", ":"))
                changed = seq
            if changed is not None:
                mac = host_frames.frame_mac(fkey, "SIG1", proto.EVENT, seq, prev.encode(), text.encode())
                mac = mac.decode() if isinstance(mac, bytes) else mac
                c.execute("UPDATE events SET event = %s, mac = %s WHERE shoe_id = 'SIG1' AND seq = %s",
                          (text, mac, seq))
                c.execute("UPDATE anchors SET mac = %s WHERE shoe_id = 'SIG1' AND seq = %s", (mac, seq))
            prev = mac
        c.execute("UPDATE shoes SET last_mac = %s WHERE shoe_id = 'SIG1'", (prev,))
    assert changed is not None
    assert cli.main(argv + ["--mac-only"]) == 0      # the MAC chain alone is fooled
    capsys.readouterr()
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    first_cp = [s for s, t, _m in rows if s > changed and '"checkpoint"' in t][0]
    assert "FAIL shoe SIG1: seq %d: the chain head the shoe signed" % first_cp in out, out
