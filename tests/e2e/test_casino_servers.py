"""The servers the project starts for the casino record, and what keeps
accepting while the hub is down (the finding docs/casino.md reports)."""

import asyncio

import psycopg
import pytest

from host_tools.sim.rigs import servers
from host_tools.casino import streams


def test_leaf_with_a_domain_accepts_while_the_hub_is_down_and_a_plain_leaf_does_not(tmp_path):
    hub = servers.Nats(tmp_path, "hub", leaf_port=servers.free_port(), domain="hub").start()
    buffered = servers.Nats(tmp_path, "leafA", hub_leaf_url=hub.leaf_url, domain="pit-a").start()
    plain = servers.Nats(tmp_path, "leafB", hub_leaf_url=hub.leaf_url, jetstream=False).start()
    try:
        async def main():
            a = await streams.connect(buffered.url)
            b = await streams.connect(plain.url)
            ja, jb = a.jetstream(domain="pit-a"), b.jetstream()
            await streams.ensure_pit_stream(ja, "C", "PA")
            await ja.publish("shoe.C.PA.T1", b"{}")
            hub.kill()
            ack = await ja.publish("shoe.C.PA.T1", b"{}", timeout=3)   # the leaf's own stream
            assert ack.stream == "PIT_C_PA" and ack.seq == 2
            with pytest.raises(Exception):                               # nobody to store it
                await jb.publish("shoe.C.PB.T1", b"{}", timeout=1)
            await a.close()
            await b.close()
        asyncio.run(main())
    finally:
        for s in (plain, buffered, hub):
            s.stop()


def test_postgres_survives_sigkill_with_committed_rows():
    pg = servers.Postgres(fsync=False).start()
    try:
        with psycopg.connect(pg.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE t (x int)")
            c.execute("INSERT INTO t VALUES (1)")
        pg.kill()
        pg.start()
        with psycopg.connect(pg.dsn) as c:
            assert c.execute("SELECT x FROM t").fetchall() == [(1,)]
        if pg.owner is not None:  # root: postgres runs as an unprivileged user
            import os
            assert os.stat(pg.data).st_uid == pg.owner[0]
    finally:
        pg.cleanup()


def test_a_picked_port_another_program_took_is_picked_again(tmp_path):
    # Two test runs on one machine: a port free when the rig picked it was
    # bound by the other run before nats-server bound it (the leaf then
    # exited: "address already in use", and the demo failed).
    import socket
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        nats = servers.Nats(str(tmp_path), "leaf")
        nats.port = taken
        nats.start()
        try:
            assert nats.port != taken and nats.healthy()
        finally:
            nats.stop()
