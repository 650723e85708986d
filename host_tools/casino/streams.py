"""Create the JetStream streams of the casino record, idempotently.

Two layouts (docs/casino.md):

- hub capture: ``SHOE_<casino>`` on the hub captures ``shoe.<casino>.>``;
  pits publish to the hub, directly or through a leaf node without a
  JetStream domain of its own. When the hub is away nothing accepts, and the
  pit's SQLite store is the buffer (its outbox catches up).
- leaf buffer: each pit's leaf node has a JetStream domain and a stream
  ``PIT_<casino>_<pit>`` capturing that pit's subjects, and the hub's
  ``SHOE_<casino>`` sources every pit stream. The leaf keeps accepting while
  the hub is away; the hub catches up when its sourcing resumes.
"""

import logging

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from host_tools.casino import access, wire

log = logging.getLogger("shoe.casino.nats")


class _TlsEofNoise(logging.Filter):
    """asyncio warns once per closed TLS connection that nats-py's protocol
    returned True from eof_received (harmless over TLS: the transport
    closes anyway); the line would fill every log of a TLS deployment."""

    def filter(self, record):
        return "eof_received()" not in record.getMessage()


logging.getLogger("asyncio").addFilter(_TlsEofNoise())


async def _quiet(exc):
    # nats-py's default error callback logs a traceback per failed connect;
    # our loops already report a broker that is away, once, in one line.
    log.debug("nats: %s: %s", type(exc).__name__, exc)


async def connect(url, reconnect=False, auth=None):
    """A NATS connection. ``reconnect=False``: fail fast (NoServersError)
    when the server is away, for loops that retry on their own terms;
    True: nats-py keeps reconnecting in the background for as long as it
    takes (the consumer, whose durable state lives on the server).
    ``auth``: a secrets.NatsAuth (NKEY seed, CA for TLS, inbox prefix), or
    None for an open broker."""
    opts = auth.connect_options() if auth is not None else {}
    return await nats.connect(url, connect_timeout=2, reconnect_time_wait=0.25,
                              allow_reconnect=reconnect,
                              max_reconnect_attempts=-1 if reconnect else 1,
                              pending_size=256 * 1024 * 1024, error_cb=_quiet, **opts)


async def ensure_consumer(js, casino, config):
    """A central durable consumer of the casino stream (admin's to make):
    the whole casino's, or a pit's partition (its ``filter_subject``)."""
    try:
        await js.consumer_info(wire.casino_stream(casino), config.durable_name)
        return False
    except nats.js.errors.NotFoundError:
        config.filter_subject = config.filter_subject or wire.casino_subjects(casino)
        await js.add_consumer(wire.casino_stream(casino), config)
        return True


async def _ensure(js, config):
    try:
        await js.stream_info(config.name)
        return False
    except nats.js.errors.NotFoundError:
        await js.add_stream(config)
        return True


async def ensure_casino_stream(js, casino, sources=(), replicas=1):
    """The hub's stream. ``sources``: (pit, domain) pairs of leaf-buffer
    pits; without any, the stream captures the casino's subjects itself.
    ``replicas``: its copies on a clustered hub (1 on a single server)."""
    cfg = api.StreamConfig(name=wire.casino_stream(casino), storage=api.StorageType.FILE,
                           duplicate_window=wire.DUPLICATE_WINDOW_S, num_replicas=replicas)
    if sources:
        # each source's deliveries on a prefix of its own pit, so a pit's leaf
        # link may carry that pit's and no other's (access.leaf_permissions)
        cfg.sources = [api.StreamSource(name=wire.pit_stream(casino, pit),
                                        external=api.ExternalStream(
                                            api="$JS.%s.API" % domain,
                                            deliver=access.source_deliver(casino, pit)))
                       for pit, domain in sources]
    else:
        cfg.subjects = [wire.casino_subjects(casino)]
    return await _ensure(js, cfg)


async def ensure_pit_stream(js, casino, pit):
    """A pit's stream on its own leaf node (``js`` bound to the leaf's domain)."""
    cfg = api.StreamConfig(name=wire.pit_stream(casino, pit), storage=api.StorageType.FILE,
                           subjects=[wire.pit_subjects(casino, pit)],
                           duplicate_window=wire.DUPLICATE_WINDOW_S)
    return await _ensure(js, cfg)


async def ensure_for_pit(js, casino, pit, domain):
    """What a pit's publisher makes before it publishes: its own stream on
    a leaf with a domain; otherwise the hub's stream if the hub answers. A
    plain leaf node does not pass the JetStream API on (it answers 503
    itself), so there the stream is `shoe central`'s to make, and a publish
    before it exists fails and is retried like any broker outage."""
    if domain:
        return await ensure_pit_stream(js, casino, pit)
    try:
        return await ensure_casino_stream(js, casino)
    except (nats.js.errors.ServiceUnavailableError, nats.errors.TimeoutError,
            nats.errors.NoRespondersError):
        return False
