"""What only an admin does: make the streams, the durable consumer, the
record's schema and its grants, and keep the device registry.

Why apart from the consumer: `shoe central` runs with a credential that can
pull and acknowledge its stream and nothing else, and with a PostgreSQL role
that writes rows but cannot create, alter or drop a table (access.py,
ingest.grant). Whatever creates or deletes is here, run with the admin's
credentials (`shoe central setup`, `shoe central register`).
"""

import asyncio

from host_tools.casino import streams
from host_tools.central import consumer, ingest


async def nats_setup(url, auth, casino, sources=(), partitions=(), replicas=1):
    """The hub's casino stream (sourcing ``sources``' pit streams) and the
    central durable consumer on it: the casino's, or with ``partitions``
    one per pit named there (and not the casino's: nobody would pull it).
    ``replicas``: copies of the stream on a clustered hub."""
    nc = await streams.connect(url, auth=auth)
    try:
        js = nc.jetstream()
        await streams.ensure_casino_stream(js, casino, sources, replicas)
        for pit in partitions or [None]:
            await streams.ensure_consumer(js, casino, consumer.consumer_config(casino, pit))
    finally:
        await nc.close()


async def pit_stream_setup(url, auth, casino, pit, domain):
    """A leaf-buffer pit's own stream on its leaf node (in ``domain``)."""
    nc = await streams.connect(url, auth=auth)
    try:
        await streams.ensure_pit_stream(nc.jetstream(domain=domain), casino, pit)
    finally:
        await nc.close()


def db_setup(admin_dsn, writer=None, reader=None):
    """The record's schema, and the writer's and reader's grants."""
    import psycopg
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        ingest.create_schema(conn)
        if writer and reader:
            ingest.grant(conn, writer, reader)


def register(admin_dsn, devices):
    """Register (device_id, casino, pit, table, kind[, public key PEM]) tuples."""
    import psycopg
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        with conn.transaction():
            for device in devices:
                ingest.register(conn, *device)


def run_nats(url, auth, casino, sources=(), partitions=(), replicas=1):
    asyncio.run(nats_setup(url, auth, casino, sources, partitions, replicas))
