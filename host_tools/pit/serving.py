"""How the pit's page listens: the open-file budget and the connection caps.

A client's socket is an open file. Under systemd the soft limit is commonly
1,024, and about 1,000 idle event-stream clients once left a restarted
table unable to open its store ("unable to open database file") until they
left. So at start the pit raises its soft limit to the hard one, keeps a
reserve of files for its tables (store, WAL, shared memory, port, pipes) and
never lets clients hold more than the rest: a connection past the cap, in
all or from one address, is closed as soon as it is accepted, before it can
cost anything else. The requests and streams a connection makes are capped
again by guard.Caps (web.py).
"""

import asyncio
import collections
import resource

RESERVE_BASE = 64        # the process's own: logs, the committer, the casino link, Python itself
RESERVE_PER_TABLE = 12   # a table's store connection (3), its port, wake pipe, restarts overlapping
CONNECTIONS_PER_ADDRESS = 64
REQUESTS_IN_FLIGHT = 256  # web.REQUESTS


def raise_nofile():
    """Soft limit := hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def budget(tables, soft=None):
    """(connections, streams) clients may hold with ``tables`` tables."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0] if soft is None else soft
    connections = max(16, soft - RESERVE_BASE - RESERVE_PER_TABLE * tables)
    return connections, max(8, connections - REQUESTS_IN_FLIGHT // 4)


class Limited:
    """A protocol factory around aiohttp's: a connection past ``total``, or
    past ``per_address`` from one address, is aborted as soon as it is made."""

    def __init__(self, factory, total, per_address=CONNECTIONS_PER_ADDRESS):
        self.factory = factory
        self.total, self.per_address = total, per_address
        self.open = 0
        self.by_address = collections.Counter()
        self.refused = 0

    def __call__(self):
        return _Counted(self.factory(), self)


class _Counted(asyncio.Protocol):
    """aiohttp's protocol (slotted: it cannot be patched) behind a counter."""

    def __init__(self, inner, cap):
        self.inner, self.cap, self.address, self.live = inner, cap, None, False

    def connection_made(self, transport):
        peer = transport.get_extra_info("peername")
        cap, self.address = self.cap, (peer[0] if peer else "?")
        cap.open += 1
        cap.by_address[self.address] += 1
        if cap.open > cap.total or cap.by_address[self.address] > cap.per_address:
            cap.refused += 1
            transport.abort()  # its file is closed now, not when a handler would end
            return
        self.live = True
        self.inner.connection_made(transport)

    def connection_lost(self, exc):
        cap = self.cap
        cap.open -= 1
        cap.by_address[self.address] -= 1
        if cap.by_address[self.address] <= 0:
            del cap.by_address[self.address]
        if self.live:  # not one aborted before aiohttp saw it
            self.inner.connection_lost(exc)

    def data_received(self, data):
        self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received()

    def pause_writing(self):
        self.inner.pause_writing()

    def resume_writing(self):
        self.inner.resume_writing()


async def listen(runner, host, port, ssl_context=None, connections=None):
    """Serve ``runner`` (a set-up aiohttp AppRunner) at host:port; returns
    (asyncio server, bound port, the Limited factory)."""
    limited = Limited(runner.server, connections if connections is not None else budget(0)[0])
    server = await asyncio.get_running_loop().create_server(limited, host, port, ssl=ssl_context, backlog=512,
                                                            reuse_address=True)
    return server, server.sockets[0].getsockname()[1], limited
