"""Server-Sent Events and the page's vocabulary, shared by the pit's page
(host_tools/pit/web.py) and the central view (host_tools/central/view.py).

Table threads (or the central view's poller) hand messages to a
``Broadcast``; it wakes the event loop once per burst, encodes each message
once per role (host_tools/view/roles.py filters it) and puts the same bytes
in every client's queue, so one socket write per client per burst. A burst
is flushed at once when the last flush is ``FLUSH_S`` old, else when it
will be: at 256 tables a card came every 2 ms, every card was a burst of
its own, and each burst cost a JSON encode, a queue wake-up and a TLS
write per client (`shoe bench pit`); now a busy pit writes each client at
most 1 / FLUSH_S times a second, and a quiet one as soon as a message
comes. The page's goal is 250 ms; FLUSH_S adds at most its own length.
"""

import asyncio
import json
import threading

from aiohttp import web

from host_tools.protocol import alerts, tablestate
from host_tools.view import guard, roles

QUEUE = 1000          # bursts a client may fall behind before it is dropped
KEEPALIVE_S = 15.0
KEEPALIVE = b": keepalive\n\n"
FLUSH_S = 0.025       # a busy pit's flushes are at least this far apart (module docstring)


class Broadcast:
    """Messages from any thread to every SSE client, encoded once per burst.

    ``listener`` (a ``Pit.listeners`` entry, called on table threads) only
    appends to a list; the first message of a burst schedules ``flush`` on
    the loop (at once, or FLUSH_S after the last flush), which takes
    everything that arrived meanwhile, encodes each message once per role
    and puts the same bytes into every client's queue.
    """

    def __init__(self, loop):
        self.loop = loop
        self.lock = threading.Lock()
        self.pending = []
        self.scheduled = False
        self.flushed = float("-inf")  # loop.time() of the last flush
        self.clients = {role: set() for role in roles.ALL}  # each role is sent its own view
        self.answers = {}  # (table, command counter) -> Future of the shoe's accepted/error event
        self.early = {}    # answers that came before anyone waited for them

    def listener(self, message):  # runs on a table thread
        with self.lock:
            self.pending.append(message)
            if self.scheduled:
                return
            self.scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._due)
        except RuntimeError:
            pass  # the loop has closed: the pit is stopping

    def _due(self):  # runs on the event loop: flush now, or FLUSH_S after the last one
        wait = self.flushed + FLUSH_S - self.loop.time()
        if wait > 0:
            self.loop.call_later(wait, self.flush)
        else:
            self.flush()

    def flush(self):  # runs on the event loop
        self.flushed = self.loop.time()
        with self.lock:
            batch, self.pending, self.scheduled = self.pending, [], False
        for m in batch:
            if m.get("type") == "event" and (m.get("event") or {}).get("source") == "link":
                self._answer(m)
        for role, clients in self.clients.items():
            if not batch or not clients:
                continue
            view = [v for v in (roles.message_for(role, m) for m in batch) if v is not None]
            if view:
                self.send(encode(view), clients)

    def _answer(self, m):
        event = m.get("event") if m.get("type") == "event" else None
        if event and event.get("source") == "link" and event.get("type") in ("accepted", "error"):
            key = (m.get("table"), event.get("counter"))
            fut = self.answers.pop(key, None)
            if fut is not None and not fut.done():
                fut.set_result(event)
            else:  # came before its waiter (the loop ran this flush first)
                self.early[key] = event
                while len(self.early) > 256:
                    self.early.pop(next(iter(self.early)))

    def send(self, chunk, clients=None):
        for group in ([clients] if clients is not None else self.clients.values()):
            for q in list(group):
                try:
                    q.put_nowait(chunk)
                except asyncio.QueueFull:
                    group.discard(q)  # its handler ends at its next chunk

    def count(self):
        return sum(len(c) for c in self.clients.values())

    def close(self):
        """End every SSE stream (at shutdown, before aiohttp waits for handlers)."""
        for group in self.clients.values():
            for q in list(group):
                try:
                    q.put_nowait(None)
                except asyncio.QueueFull:
                    pass
            group.clear()


# Compact, and without the circular-reference walk (a message is built from
# parsed JSON and fresh dicts): a fifth less time per message and a seventh
# fewer bytes for every client's TLS than json.dumps' defaults.
_JSON = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def encode(messages):
    """Messages as one SSE chunk; each names its ``type`` as the event."""
    return b"".join(("event: %s\ndata: %s\n\n" % (m["type"], _JSON(m))).encode() for m in messages)


async def keepalive(broadcast):
    """A comment line to every client now and then, so proxies and the
    browser keep an idle stream open (one timer, not one per client).
    host_tools/central/view.py runs one for its Broadcast too."""
    while True:
        await asyncio.sleep(KEEPALIVE_S)
        broadcast.send(KEEPALIVE)


async def stream(request, clients, alive=None, queues=None):
    """One /api/events client: its queue joins ``clients`` (a Broadcast's)
    and every chunk put there is written, until it is hung up (None),
    dropped as too slow (no longer in ``clients``) or, with ``alive``, its
    login has ended (checked before each write, keepalives included, so
    within KEEPALIVE_S). ``queues``: a set the queue is kept in meanwhile
    (a logout hangs up its login's streams at once). Shared with the
    central view (host_tools/central/view.py)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                       "X-Accel-Buffering": "no"})
    guard.headers(resp, request.scheme == "https")
    await resp.prepare(request)
    q = asyncio.Queue(QUEUE)
    clients.add(q)
    if queues is not None:
        queues.add(q)
    try:
        await resp.write(b": connected\n\n")
        while True:
            chunk = await q.get()
            if chunk is None or q not in clients or (alive is not None and not alive()):
                break
            chunks, stop = [chunk], False
            while not q.empty():  # whatever else queued while this client was writing
                chunk = q.get_nowait()
                if chunk is None:
                    stop = True
                    break
                chunks.append(chunk)
            await resp.write(b"".join(chunks) if len(chunks) > 1 else chunks[0])
            if stop:
                break
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        clients.discard(q)
        if queues is not None:
            queues.discard(q)
    return resp


async def vocabulary(request):
    """The names the page draws with, defined once on the server
    (host_tools/protocol/tablestate.py, alerts.py)."""
    return web.json_response(dict(tablestate.VOCABULARY, alert_kinds=alerts.vocabulary(),
                                  critical_ack=sorted(roles.CRITICAL_ACK)))
