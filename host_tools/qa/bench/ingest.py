"""`shoe bench ingest`: the central consumer's batch logic and its PostgreSQL
backend alone, in CPU per event.

`shoe bench casino` runs the whole path, and on a shared machine its
latencies and rates move with everyone else's load. This drives
``ingest.Central.process`` directly (no NATS, no TLS: PostgreSQL's
local-socket test rig, fsync on) with real signed events of ``--shoes``
simulated shoes, ``--per`` events of each shoe per batch (1: a real pace,
where a batch holds one event per shoe; 50: a backlog of runs), and prints
the CPU the consumer's process and its PostgreSQL backend spent per stored
event (/proc, user + system): figures the load moves little.
"""

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time

from host_tools.central import ingest
from host_tools.protocol.keys import Keys, read_key
from host_tools.sim import simtable
from host_tools.sim.rigs import servers


def _cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _events(workdir, shoes, events):
    """{shoe: [(seq, body, tag, prev)]}: each shoe's first ``events``, signed."""
    keydir = os.path.join(workdir, "keys")
    simtable.make_keys(keydir, shoes)
    out = {}
    for shoe in shoes:
        sim = simtable.SimShoe(shoe, read_key(os.path.join(keydir, shoe + ".key")),
                               seed=simtable.seed_of(shoe), workdir=workdir)
        try:
            out[shoe] = [sim.next() for _ in range(events)]
        finally:
            sim.close()
    return keydir, out


def _batches(dealt, per):
    table = {shoe: "T%d" % (i + 1) for i, shoe in enumerate(sorted(dealt))}
    n = len(next(iter(dealt.values())))
    out = []
    for at in range(0, n, per):
        msgs = []
        for shoe in sorted(dealt):
            for seq, body, tag, _prev in dealt[shoe][at:at + per]:
                body = body if isinstance(body, bytes) else body.encode()
                tag = tag.decode() if isinstance(tag, bytes) else tag
                msgs.append(ingest.Msg("C1", "P1", table[shoe], shoe, seq, tag, None, time.time(), body,
                                       text=body.decode()))
        out.append(msgs)
    return table, out


async def _run(dsn, keydir, table, batches):
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as c:
        ingest.create_schema(c)
        for shoe, tbl in table.items():
            ingest.register(c, shoe, "C1", "P1", tbl)
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:
        backend = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        central = ingest.Central(conn, Keys(keydir))
        await central.process(batches[0])     # the shoes' first events: not timed
        c0, b0, n = time.process_time(), _cpu(backend), 0
        for msgs in batches[1:]:
            out = await central.process(msgs)
            if out.stored != len(msgs):
                raise RuntimeError("stored %d of %d: %s" % (out.stored, len(msgs), out.alerts[:3]))
            n += len(msgs)
        return n, time.process_time() - c0, _cpu(backend) - b0
    finally:
        await conn.close()


def main(argv):
    p = argparse.ArgumentParser(prog="shoe bench ingest", description=__doc__.splitlines()[0])
    p.add_argument("--shoes", type=int, default=1500, help="simulated shoes (default 1500)")
    p.add_argument("--events", type=int, default=12, help="events per shoe (default 12)")
    p.add_argument("--per", type=int, default=1,
                   help="events of each shoe per batch (1: a real pace, default; 50: a backlog)")
    p.add_argument("--runs", type=int, default=3, help="runs, each on a fresh database (median)")
    args = p.parse_args(argv)
    if args.shoes < 1 or args.runs < 1 or not 1 <= args.per < args.events:
        p.error("--shoes and --runs are 1 or more, --per from 1 to below --events")
    work = tempfile.mkdtemp(prefix="shoe-bench-ingest-")
    try:
        keydir, dealt = _events(work, ["C1-P1-T%d" % (i + 1) for i in range(args.shoes)], args.events)
        table, batches = _batches(dealt, args.per)
        cons, back = [], []
        for i in range(args.runs):
            pg = servers.Postgres(fsync=True)
            pg.start()
            try:
                n, c, b = asyncio.run(_run(pg.dsn, keydir, table, batches))
            finally:
                pg.stop()
                pg.cleanup()
            cons.append(1e6 * c / n)
            back.append(1e6 * b / n)
            print("run %d: %d events in %d batches of %d: consumer %.1f us per event, its PostgreSQL"
                  " backend %.1f us per event" % (i + 1, n, len(batches) - 1, len(batches[1]), cons[-1],
                                                  back[-1]), flush=True)
        print("ingest: median consumer %.1f us per event, PostgreSQL backend %.1f us per event"
              " (%d shoes, %d events of each per batch; load average %.1f)" % (
                  statistics.median(cons), statistics.median(back), args.shoes, args.per,
                  os.getloadavg()[0]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0
