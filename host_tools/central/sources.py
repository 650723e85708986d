"""`shoe central watch` (admin): keep the hub's sourcing of every pit's
stream moving in the leaf-buffer layout.

Why this exists: the hub's stream sources each pit's stream through the
pit's leaf link. While a pit is cut off, every try of nats-server to set up
the sourcing waits 30 s for an answer that cannot come and then backs off
(5 s x 2 x failures, up to 2 minutes, nats-server's stream.go). So after a
long cut the link is back but the hub may not look again for up to two and
a half minutes: `shoe soak casino --cut 180` measured 47 s of nothing after
a 60 s cut, and the record did not catch up within 180 s after 180 s cuts.

The watcher looks every ``POLL_S``: a source that has been silent for
``STALE_S`` (a live one hears a heartbeat every second) is restarted, at
most every ``MIN_GAP_S``, by taking it out of the hub stream's
configuration and putting it back: a fresh source asks at once, with no
backoff. While the pit is still cut off that ask goes nowhere (harmless);
once its link is back the next one is answered, so the hub resumes within
``MIN_GAP_S`` of the link's return, from the last message it holds from
that source (it finds it in its own stream): nothing is copied twice. (It
cannot ask the pit's stream first whether the link is back: the link
carries no replies to the admin's inbox, access.leaf_permissions.) Only the
admin credential may update a stream, so this runs with it, on the central
host, beside `shoe central`.
"""

import asyncio
import logging
import time

from host_tools.casino import wire

log = logging.getLogger("shoe.casino.sources")

POLL_S = 2.0
STALE_S = 5.0
API_TIMEOUT_S = 5.0
MIN_GAP_S = 8.0       # between two restarts of one source


class Watcher:
    def __init__(self, js, casino, sources):
        self.js = js
        self.casino = casino
        self.sources = dict(sources)      # pit -> domain
        self.restarted = {}               # pit stream name -> monotonic time of the last restart
        self.restarts = 0

    async def silent(self):
        """{pit: seconds} of each source silent for STALE_S or longer."""
        info = await self.js.stream_info(wire.casino_stream(self.casino))
        by_name = {s.name: s for s in info.sources or []}
        out = {}
        for pit in self.sources:
            s = by_name.get(wire.pit_stream(self.casino, pit))
            active = None if s is None or s.active is None else s.active / 1e9
            if active is None or active < 0 or active >= STALE_S:
                out[pit] = active
        return out

    async def restart(self, pit):
        """Take the pit's source out of the hub stream and put it back."""
        name = wire.casino_stream(self.casino)
        cfg = (await self.js.stream_info(name)).config
        mine = [s for s in cfg.sources if s.name == wire.pit_stream(self.casino, pit)]
        if not mine:
            return False
        others = [s for s in cfg.sources if s.name != wire.pit_stream(self.casino, pit)]
        subjects = cfg.subjects
        cfg.sources = others
        await self.js.update_stream(cfg)
        cfg.sources = others + mine
        cfg.subjects = subjects
        await self.js.update_stream(cfg)
        self.restarts += 1
        return True

    async def step(self):
        """One look; returns the pits whose source was restarted."""
        done = []
        now = time.monotonic()
        for pit, silent_s in sorted((await self.silent()).items()):
            name = wire.pit_stream(self.casino, pit)
            if now - self.restarted.get(name, -MIN_GAP_S) < MIN_GAP_S:
                continue
            if await self.restart(pit):
                self.restarted[name] = now
                print("central watch: the hub's source of %s was silent for %s s: restarted" % (
                    name, "?" if silent_s is None else "%.0f" % silent_s), flush=True)
                done.append(pit)
        return done

    async def run(self, stop):
        while not stop.is_set():
            try:
                await self.step()
            except Exception as e:   # the hub away, a timeout: look again
                log.warning("watch: %s: %s", type(e).__name__, e)
            try:
                await asyncio.wait_for(stop.wait(), POLL_S)
            except asyncio.TimeoutError:
                pass


async def watch(url, auth, casino, sources, stop):
    from host_tools.casino import streams
    while not stop.is_set():
        try:
            nc = await streams.connect(url, reconnect=True, auth=auth)
        except Exception as e:
            log.warning("watch: %s: %s", type(e).__name__, e)
            try:
                await asyncio.wait_for(stop.wait(), POLL_S)
            except asyncio.TimeoutError:
                pass
            continue
        try:
            w = Watcher(nc.jetstream(timeout=API_TIMEOUT_S), casino, sources)
            await w.run(stop)
        finally:
            await nc.close()
