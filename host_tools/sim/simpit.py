"""One simulated pit as its own process: tables dealing signed events into
the pit's SQLite store at a table's pace, and the pit's real publisher
(publish.PitPublisher, as `shoe pit` runs it) sending the store to NATS.

A process, not a thread, so the soak can SIGKILL a pit server as the
machine would lose it: the store and its high-water marks are whatever was
committed, and a restarted pit carries on from there. SIGTERM instead stops
dealing and exits once the broker has every stored event (or after
``--drain`` seconds).

    python -m host_tools.sim.simpit --store S --keys DIR --shoes A,B --nats URL
        --casino C --pit P [--domain D] [--nats-seed FILE --nats-ca FILE] [--rate EV_PER_S_PER_TABLE] [--events N]
"""

import argparse
import collections
import math
import os
import signal
import sys
import threading
import time

from host_tools.protocol import keys as keys_mod
from host_tools.sim import simtable
from host_tools.casino import secrets
from host_tools.casino.publish import Outbox, PitPublisher
from host_tools.pit.config import Casino
from host_tools.store import db

GROUP_MAX = 500   # events in one commit at most
DEALING = "simpit: dealing"   # the log line that says the pre-generated events are ready
# ... followed by " at <epoch seconds>": when the pit's publisher starts (a
# bench times the path from there, not from the process's start)


class Pregenerated:
    """A SimShoe whose next events were taken before the clock started
    (``--pregen``): a real pit's publisher reads events its bridges stored,
    it does not compute them, so a timed run should not charge the shoes'
    simulation to the pit's process. Past the prepared events it deals
    live."""

    def __init__(self, sim, n):
        self.sim = sim
        self.shoe_id = sim.shoe_id
        self.ready = collections.deque(sim.next() for _ in range(max(0, n)))

    @property
    def seq(self):
        return self.ready[0][0] - 1 if self.ready else self.sim.seq

    def deal_write(self, store):
        if not self.ready:
            return self.sim.deal_write(store)
        seq, body, tag, prev = self.ready.popleft()
        return store.append_write(self.shoe_id, seq, body, mac=tag,
                                  first_seq=1 if seq == 1 else None,
                                  first_prev=prev if seq == 1 else None)

    def close(self):
        self.sim.close()


def main(argv=None):
    p = argparse.ArgumentParser(prog="simpit")
    p.add_argument("--store", required=True)
    p.add_argument("--keys", required=True)
    p.add_argument("--shoes", required=True, help="comma-separated shoe ids, one per table")
    p.add_argument("--nats", required=True)
    p.add_argument("--casino", required=True)
    p.add_argument("--pit", required=True)
    p.add_argument("--domain")
    p.add_argument("--nats-seed", help="the pit's NKEY seed file (0600); never the seed itself")
    p.add_argument("--nats-ca", help="the CA of the broker's certificate (TLS)")
    p.add_argument("--rate", type=float, default=2.0, help="events per second per table")
    p.add_argument("--events", type=int, default=0, help="stop dealing at this seq per shoe (0: never)")
    p.add_argument("--chips", help="a directory of provisioned simulated secure elements, one per "
                   "shoe (sim/tablechips.py): the shoes sign their checkpoints")
    p.add_argument("--pregen", type=float, default=0.0, metavar="SECONDS",
                   help="take each shoe's events for this many seconds of dealing before the "
                   "clock starts (then it logs %r)" % DEALING)
    p.add_argument("--drain", type=float, default=20.0,
                   help="on SIGTERM, wait at most this long for the broker to have every event")
    args = p.parse_args(argv)
    shoes = args.shoes.split(",")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    store = db.Store(args.store)
    tables = {s: "T%d" % (i + 1) for i, s in enumerate(shoes)}
    # Each shoe's journal beside the store (a SIGKILLed pit leaves it for
    # the rig to remove with its directory); a restarted pit deals its
    # shoes on from what the store holds.
    journals = os.path.dirname(os.path.abspath(args.store))
    board = lambda s: {}   # noqa: E731
    if args.chips:
        from host_tools.sim import tablechips
        board = lambda s: {"secure": tablechips.fresh(args.chips, s),   # noqa: E731
                           "manifest": tablechips.MANIFEST}
    # A shoe whose store already holds ``--events`` has nothing left to
    # deal: it is not replayed at all (`shoe bench casino` fills the stores
    # first; replaying 100 shoes x 2,000 events took most of the pits' CPU
    # while the bench measured their publishers).
    def dealt_out(s):
        info = store.shoe(s)
        return bool(args.events and info and (info["last_seq"] or 0) >= args.events)
    sims = [simtable.SimShoe(s, keys_mod.read_key(os.path.join(args.keys, s + ".key")),
                             seed=simtable.seed_of(s), workdir=journals, **board(s)).resume(store)
            for s in shoes if not dealt_out(s)]
    if args.pregen > 0 and args.rate > 0:
        want = int(math.ceil(args.rate * args.pregen)) + 1
        sims = [Pregenerated(sim, min(want, args.events - sim.seq) if args.events else want)
                for sim in sims]
    print("%s at %.6f" % (DEALING, time.time()), flush=True)
    auth = secrets.NatsAuth.load(args.nats_seed, args.nats_ca)
    pub = PitPublisher(args.store, Casino(args.nats, args.casino, args.pit, args.domain, auth), tables)
    pub.start()
    # Round robin, one table at a time: each table deals at ``rate``, the
    # tables spread evenly over the period as a real pit's would be. What
    # fell due while the last commit ran is committed in one group (one
    # fsync), as the pit server's group commit does (pit/groupcommit.py):
    # a commit per event would cap a pit at a few hundred events/s.
    step = 1.0 / (args.rate * max(1, len(sims))) if args.rate > 0 else 0.0
    nxt = time.monotonic()
    i = 0
    try:
        while not stop.is_set():
            if args.events and all(s.seq >= args.events for s in sims):
                stop.wait(0.2)
                continue
            now = time.monotonic()
            group = []
            while nxt <= now and len(group) < GROUP_MAX:
                sim = sims[i % len(sims)]
                i += 1
                if args.events and sim.seq >= args.events:
                    continue
                group.append(sim)
                nxt += step
            if group:
                for out in store.write_many([sim.deal_write(store) for sim in group]):
                    if isinstance(out, BaseException):
                        raise out
                for sim in group:
                    pub.on_message({"type": "event", "shoe": sim.shoe_id, "table": tables[sim.shoe_id]})
            delay = nxt - time.monotonic()
            if delay > 0:
                stop.wait(delay)
            elif delay < -1.0:
                nxt = time.monotonic()  # fell behind (a stall): do not burst to catch up
        # SIGTERM: stop dealing, then leave once the broker has everything
        # (bounded): a pit told to stop is not a pit that died, and a
        # broker path that has only just come back may need a few seconds.
        box = Outbox(args.store)
        try:
            deadline = time.monotonic() + args.drain
            while box.behind() and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            box.close()
    finally:
        pub.close()
        store.close()
        for sim in sims:
            sim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
