"""view/sse.Broadcast: a quiet pit pushes a message as it comes; a busy one
flushes at most every FLUSH_S, so the messages of those milliseconds go to
each client as one chunk (one encode and one TLS write per client, not one
per card). Driven with a loop whose clock the test sets, so nothing here
depends on how fast the machine is."""

import asyncio
import json
import threading

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


def test_a_message_that_comes_while_a_flush_runs_goes_out_with_the_next():
    """The edge of a flush: a table thread's message lands after the flush
    took its batch but before it has sent it. It is not in that chunk, so
    it must have scheduled a flush of its own, or it would wait, unsent,
    for whatever the table says next (a page one card behind)."""
    loop = Loop()
    b = sse.Broadcast(loop)
    q = asyncio.Queue(sse.QUEUE)
    b.clients[roles.SURVEILLANCE].add(q)
    send = b.send

    def send_while_a_card_lands(chunk, clients=None):
        b.listener(_message(2))  # as if on a table thread, mid-flush
        send(chunk, clients)

    b.send = send_while_a_card_lands
    b.listener(_message(1))
    loop.run_soon()
    b.send = send
    assert _seqs(q.get_nowait()) == [1] and q.empty()
    assert len(loop.soon) == 1  # the mid-flush message woke the loop again
    loop.run_soon()             # within FLUSH_S of the last flush: it waits for its time
    (due, flush), = loop.later
    assert due == 100.0 + sse.FLUSH_S
    loop.now = due
    flush()
    assert _seqs(q.get_nowait()) == [2]


def test_every_message_from_racing_table_threads_is_sent_once_in_order():
    """Real threads and a real loop: four table threads publish at once
    while the loop flushes; each client gets every message exactly once,
    each table's in its order. Bounded by what arrives, not by a sleep."""
    tables, per_table = 4, 500
    loop = asyncio.new_event_loop()
    try:
        b = sse.Broadcast(loop)
        q = asyncio.Queue(sse.QUEUE)
        b.clients[roles.SURVEILLANCE].add(q)

        def table(t):
            for i in range(per_table):
                b.listener(dict(_message(i), table="T%d" % t))

        threads = [threading.Thread(target=table, args=(t,)) for t in range(tables)]

        async def gather():
            for th in threads:
                th.start()
            got = []
            while len(got) < tables * per_table:
                chunk = await asyncio.wait_for(q.get(), 30)
                got += [json.loads(line[6:]) for line in chunk.decode().splitlines() if line.startswith("data: ")]
            return got

        got = loop.run_until_complete(gather())
        for th in threads:
            th.join(10)
    finally:
        loop.close()
    assert len(got) == tables * per_table
    for t in range(tables):
        assert [m["seq"] for m in got if m["table"] == "T%d" % t] == list(range(per_table))
