"""The central record as the casino tests read it, and `shoe central`'s
consumer run until the record holds what the test published. The servers
themselves are fixtures (tests/e2e/conftest.py)."""

import asyncio
import os
import time

import psycopg

from host_tools.central import consumer


def central_rows(dsn):
    with psycopg.connect(dsn) as c:
        if c.execute("SELECT to_regclass('events')").fetchone()[0] is None:
            return {}  # no consumer has made the schema yet
        return {(s, q): (e, m) for s, q, e, m in c.execute("SELECT shoe_id, seq, event, mac FROM events")}


REGISTERED_TABLE = {"R2": "T2"}   # the device registry's table of each test shoe (else T1)


def register(dsn, keydir, casino, where=None):
    """Register every shoe with a key in ``keydir`` at pit P1, or where
    ``where`` ({shoe: (pit, table)}) puts it (central refuses an
    unregistered device)."""
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
