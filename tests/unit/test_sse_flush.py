"""view/sse.Broadcast: a quiet pit pushes a message as it comes; a busy one
flushes at most every FLUSH_S, so the messages of those milliseconds go to
each client as one chunk (one encode and one TLS write per client, not one
per card). Driven with a loop whose clock the test sets, so nothing here
depends on how fast the machine is."""

import asyncio
import json

from host_tools.view import roles, sse


class Loop:
    """What Broadcast asks of its event loop, run by hand."""

    def __init__(self):
        self.now = 100.0
        self.soon = []
        self.later = []

    def time(self):
        return self.now

    def call_soon_threadsafe(self, fn):
        self.soon.append(fn)

    def call_later(self, delay, fn):
        self.later.append((self.now + delay, fn))

    def run_soon(self):
        todo, self.soon = self.soon, []
        for fn in todo:
            fn()


def _message(seq):
    return {"type": "event", "table": "T1", "shoe": "S1", "seq": seq,
            "event": {"type": "card", "card": "AS", "up": True}, "live": None}


def _seqs(chunk):
    return [json.loads(line[6:])["seq"] for line in chunk.decode().splitlines() if line.startswith("data: ")]


def test_a_quiet_pit_pushes_at_once_and_a_busy_one_gathers_a_burst():
    loop = Loop()
    b = sse.Broadcast(loop)
    q = asyncio.Queue(sse.QUEUE)
    b.clients[roles.SURVEILLANCE].add(q)

    b.listener(_message(1))          # the first in a while: flushed on the loop's next turn
    loop.run_soon()
    assert not loop.later and _seqs(q.get_nowait()) == [1]

    loop.now += sse.FLUSH_S / 5      # busy: the next ones wait for FLUSH_S after that flush
    b.listener(_message(2))
    loop.run_soon()
    assert q.empty() and len(loop.later) == 1
    due, flush = loop.later.pop()
    assert due == 100.0 + sse.FLUSH_S
    b.listener(_message(3))          # joins the waiting burst: no second wake-up
    b.listener(_message(4))
    assert not loop.soon
    loop.now = due
    flush()
    assert _seqs(q.get_nowait()) == [2, 3, 4] and q.empty()

    loop.now += 10 * sse.FLUSH_S     # quiet again: at once
    b.listener(_message(5))
    loop.run_soon()
    assert not loop.later and _seqs(q.get_nowait()) == [5]


def test_each_role_gets_its_own_view_of_the_burst():
    loop = Loop()
    b = sse.Broadcast(loop)
    public, staff = asyncio.Queue(sse.QUEUE), asyncio.Queue(sse.QUEUE)
    b.clients[roles.PUBLIC].add(public)
    b.clients[roles.SURVEILLANCE].add(staff)
    b.listener(_message(1))
    loop.run_soon()
    assert _seqs(staff.get_nowait()) == [1]
    assert public.empty()  # a card is never pushed to the public
