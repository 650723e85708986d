"""`shoe soak noise`: deal while the cable flips, drops, duplicates and
reorders bytes and a babbling device sends long garbage lines both ways,
then hold the store against `shoe deal`.

The emulated shoe's link goes through host_tools/sim/relay.py's Relay at
the given per-byte rates (per chunk for garbage lines) to a bridge
(ThreadedBridge, the real Bridge on a thread). The dealer deals for
``--seconds``, mostly line by line as a person does, and now and then a
burst of lines without waiting, so many events are in flight in go-back-N;
then it stops, the store must catch up with everything dealt (the link's
resends get it through the noise), and host_tools/qa/soak/record.py compares
it with `shoe deal` of exactly the lines dealt.
"""

import os
import random
import sys
import tempfile
import threading
import time
import traceback

from host_tools import argtypes
from host_tools.sim import dealer
from host_tools.sim.relay import Relay
from host_tools.sim.rigs.bridge import Feeder, Stalled, ThreadedBridge
from host_tools.sim.emulate import Emulator
from host_tools.qa.soak import record

SHOE_ID = "NOISE"


def add_arguments(parser):
    parser.add_argument("--seconds", type=argtypes.seconds(), default=120.0, help="how long to deal (default 120)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shoes and of the noise")
    parser.add_argument("--rate", type=float, default=0.0005,
                        help="per-byte chance of each of drop, flip, duplicate, reorder (default 0.0005)")
    parser.add_argument("--garbage", type=float, default=0.02,
                        help="per-chunk chance of a long garbage line (default 0.02)")
    parser.add_argument("--decks", type=argtypes.whole(1, 16), default=8)
    parser.add_argument("--dir", type=argtypes.directory, help="keep the flash and store here (default: a temp dir)")
    parser.add_argument("--stall", type=float, default=120.0,
                        help="seconds without progress before the soak gives up (default 120)")


def run(args):
    rng = random.Random(args.seed)
    work = args.dir or tempfile.mkdtemp(prefix="shoe-soak-noise-")
    os.makedirs(work, exist_ok=True)
    store = os.path.join(work, "noise.db")
    print("soak noise: %.0f s, per-byte rate %g each, garbage %g per chunk, seed %d, in %s"
          % (args.seconds, args.rate, args.garbage, args.seed, work), flush=True)
    crashed = []
    hook = threading.excepthook
    threading.excepthook = lambda a: crashed.append(
        "".join(traceback.format_exception(a.exc_type, a.exc_value, a.exc_traceback)))
    emu = Emulator(os.path.join(work, "flash"), SHOE_ID)
    os.chmod(emu.dir, 0o700)
    os.chmod(emu.key_path, 0o600)
    emu.start()
    relay = Relay(emu.host_path, seed=args.seed, drop=args.rate, corrupt=args.rate,
                  duplicate=args.rate, reorder=args.rate, garbage=args.garbage).start()
    bridge = ThreadedBridge(store, relay.path, emu.key)
    shoes = 1
    lines = dealer.script(args.seed * 1000, decks=args.decks, irregularity_rate=0.03)
    feeder = Feeder(emu, lines, _Alive(bridge, crashed), stall=args.stall)
    t0 = time.monotonic()
    stalled = None
    stats = {}
    try:
        while time.monotonic() - t0 < args.seconds and not crashed:
            if feeder.done():
                feeder.lines += dealer.script(args.seed * 1000 + shoes, decks=args.decks,
                                              irregularity_rate=0.03)
                shoes += 1
            if rng.random() < 0.2:
                feeder.blind(rng.randint(2, 12), interval=0.005)
            else:
                feeder.deal(1)
        if not crashed:
            feeder.wait_taken()
            time.sleep(1.0)
    except Stalled as e:
        stalled = str(e)
    finally:
        stats = dict(bridge.bridge.stats) if bridge.bridge is not None else {}
        bridge.close()
        relay.stop()
        emu.close()
        threading.excepthook = hook
    elapsed = time.monotonic() - t0
    dealt = feeder.lines[:feeder.written]
    result = record.compare(store, SHOE_ID, dealt, emu.key_path)
    rows = [("lines dealt", "%d (%d shoes begun)" % (len(dealt), shoes))]
    rows += [("relay " + k, v) for k, v in relay.faults.items()]
    rows += [("bridge " + k, stats.get(k, 0)) for k in ("bad_frames", "bad_tags", "duplicates",
                                                        "gaps", "reconnects")]
    rows += [("bridge crashes", len(crashed))]
    rows += record.record_rows(result)
    rows.append(("elapsed s", "%.0f" % elapsed))
    record.print_report("soak noise (seed %d):" % args.seed, rows)
    if stalled:
        print("soak noise: STALLED: %s" % stalled)
    for text in crashed:
        print("soak noise: the bridge thread died:\n%s" % text, file=sys.stderr)
    if not result["ok"]:
        print(result["verify"])
    ok = result["ok"] and not stalled and not crashed
    print("soak noise: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


class _Alive:
    """The bridge's counts for the Feeder, which stops at once (Stalled)
    when the bridge's thread has died instead of waiting out the stall."""

    def __init__(self, bridge, crashed):
        self.bridge = bridge
        self.crashed = crashed

    def progress(self):
        if self.crashed or not self.bridge.thread.is_alive():
            raise Stalled("the bridge thread died")
        return self.bridge.progress()

    def boots(self):
        return self.bridge.boots()

    def ended(self):
        return self.bridge.ended()
