"""Taps for `shoe bench casino`: when each message reached its pit's leaf
node, so the stage breakdown can split the hop between the publisher and
the hub's stream (whose own stamp is the message's store time).

A tap is a plain NATS subscription with the admin's credential (admin may
read every subject already; no role gains anything) on the pit's own
subjects at its leaf. It stamps each message with its Nats-Msg-Id when its
own event loop sees it: the stamp carries the tap's scheduling delay, so
on a loaded machine the leaf hop reads a little long and the hub hop after
it a little short (their sum is exact). Nothing of the record, the messages
or anyone's permissions changes; the taps run only in the bench's latency
stretch.
"""

import asyncio
import threading
import time

from host_tools.casino import streams, wire


class Taps:
    """Subscriptions on every leaf of a Rig, in a thread of their own;
    ``seen["leaf"][msg id]`` is the stamp."""

    def __init__(self, rig):
        self.rig = rig
        self.seen = {"leaf": {}}
        self.ready = threading.Event()
        self.error = None
        self._loop = None
        self._stop = None
        self._thread = None

    def start(self, timeout=30.0):
        self._thread = threading.Thread(target=self._main, name="casino-taps", daemon=True)
        self._thread.start()
        if not self.ready.wait(timeout):
            raise RuntimeError("the bench's NATS taps did not subscribe in %.0f s" % timeout)
        if self.error is not None:
            raise RuntimeError("the bench's NATS taps: %s" % self.error)
        return self

    def stop(self):
        """Unsubscribe and close (again: nothing)."""
        if self._thread is None or not self._thread.is_alive():
            return
        try:
            self._loop.call_soon_threadsafe(self._stop.set)
        except RuntimeError:
            pass   # its loop closed meanwhile
        self._thread.join(10)

    def _main(self):
        try:
            asyncio.run(self._run())
        except Exception as e:  # reported by start(), or the stages lack the taps' split
            self.error = "%s: %s" % (type(e).__name__, e)
            self.ready.set()

    async def _run(self):
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        casino = self.rig.casino
        conns = []
        try:
            for pit, leaf in self.rig.leaves.items():
                nc = await streams.connect(leaf.url, auth=self.rig.auth("admin"))
                conns.append(nc)
                await nc.subscribe(wire.pit_subjects(casino, pit), cb=self._stamper(self.seen["leaf"]))
                await nc.flush()
            self.ready.set()
            await self._stop.wait()
        finally:
            for nc in conns:
                await nc.close()

    @staticmethod
    def _stamper(into):
        async def cb(msg):
            ident = (msg.headers or {}).get(wire.H_ID)
            if ident is not None:
                into.setdefault(ident, time.time())
        return cb
