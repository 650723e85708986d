"""`shoe bench analysis`: exact analysis against plain recursion, and the monitor.

The robust figure is the ratio to the oracle (reference.py, plain recursive
dealing) timed in the same run: a loaded machine slows both alike. Every
timing is a median over repeats on fresh compositions (the result cache is
bypassed), wall clock and this thread's CPU time side by side; the load
average is printed with them.
"""

import argparse
import json
import os
import statistics
import time

from host_tools import argtypes
from host_tools.analysis import composition, exact, reference, returns
from host_tools.analysis.monitor import EdgeMonitor
from host_tools.settle.core import cards
from host_tools.sim import seeded_shoes as simulate

MONITOR_TABLE = {"designation": "ez"}  # its offer: the main bets, Dragon 7, Panda 8 and every optional wager
# A round at a stand-in's pace (host_tools/sim/standin.py: one dealer action
# every 0.5 s; bets, four to six cards and the result make about seven).
ROUND_S = 3.5


def _timed(fn, repeats):
    """(median wall s, median CPU s) of ``fn(i)`` over ``repeats`` calls."""
    wall, cpu = [], []
    for i in range(repeats):
        t, c = time.perf_counter(), time.thread_time()
        fn(i)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - t)
    return statistics.median(wall), statistics.median(cpu)


def load():
    return "load %.2f %.2f %.2f" % os.getloadavg()


def oracle_shoe(decks, by):
    """The full shoe as the oracle deals it: one card per rank (13 kinds) or,
    since the Ch 10 game reads nothing else, one per point value (10 kinds)."""
    counts = [0] * 52
    for c, k in enumerate(composition.full(decks)):
        if by == "ranks":
            counts[cards.make(cards.rank(c), 0)] += k
        else:
            counts[cards.make(cards.rank(c) if cards.points(c) else cards.TEN, 0)] += k
    return counts


def measure_oracle(decks=8, by="ranks", repeats=1):
    """The oracle's main game on a full shoe: {"wall", "cpu", "identical"}."""
    shoe = oracle_shoe(decks, by)
    wall, cpu = _timed(lambda i: reference.main_distribution(shoe), repeats)
    same = reference.main_distribution(shoe) == exact.main_distribution(composition.by_points(shoe))
    return {"wall": wall, "cpu": cpu, "identical": same, "by": by, "decks": decks, "repeats": repeats}


def measure_odds(decks=8, repeats=31):
    """Every key, uncached, on fresh compositions: {"wall", "cpu", "keys"}."""
    full = composition.full(decks)
    text = returns.settings_json(None)
    exact.price(tuple(full), text)  # the composition-independent plan, once

    def fresh(i):  # a different composition each time
        counts = list(full)
        counts[i % 52] -= 1
        counts[(7 * i + 3) % 52] -= 1
        exact.price(tuple(counts), text)

    wall, cpu = _timed(fresh, repeats)
    return {"wall": wall, "cpu": cpu, "keys": len(exact.price(tuple(full), text)["house_edge"]),
            "decks": decks, "repeats": repeats}


def measure_monitor(decks=8, shoes=3):
    """The edge monitor over whole seeded shoes: median per round {"wall", "cpu"}."""
    EdgeMonitor(decks, MONITOR_TABLE)  # the shared pricer of this table, once
    walls, cpus = [], []
    for seed in range(shoes):
        events = list(simulate.shoe_events(seed, decks))
        rounds = sum(1 for e in events if e["type"] == "result")
        t, c = time.perf_counter(), time.thread_time()
        monitor = EdgeMonitor(decks, MONITOR_TABLE)
        for e in events:
            monitor.observe(e)
        cpus.append((time.thread_time() - c) / rounds)
        walls.append((time.perf_counter() - t) / rounds)
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "shoes": shoes,
            "keys": len(set(monitor.keys.values()))}


class _Publisher:
    """The pit's publish, for EdgeWatch: counts what it would push."""

    def __init__(self):
        self.published = 0

    def publish(self, message):
        self.published += 1


def measure_pit_edges(tables=16, decks=8):
    """The pit's edge worker (host_tools/pit/edges.py) over ``tables`` seeded
    shoes interleaved round by round, as the pit hands it committed events,
    on a real store: CPU per round per table, and the rounds it saw."""
    import tempfile

    from host_tools.pit.edges import EdgeWatch
    from host_tools.store import db

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "edges.db")
        store = db.Store(path)
        store.db.execute("PRAGMA synchronous=OFF")  # the commits are not what is timed
        streams = [list(simulate.shoe_events(t, decks)) for t in range(tables)]
        watch = EdgeWatch(_Publisher(), path)
        EdgeMonitor(decks, MONITOR_TABLE)  # the shared pricer, built once per pit
        rounds = sum(1 for events in streams for e in events if e["type"] == "result")
        cpu = 0.0
        for step in range(max(len(events) for events in streams)):
            for t, events in enumerate(streams):
                if step < len(events):
                    # committed first, as the table thread does (its cost, not the worker's)
                    store.append("S%d" % t, step + 1, json.dumps(events[step]))
                    c = time.thread_time()
                    watch.handle(store, {"type": "event", "table": "T%d" % t, "shoe": "S%d" % t, "seq": step + 1,
                                         "event": events[step]})
                    cpu += time.thread_time() - c
        store.close()
    return {"cpu": cpu / rounds, "rounds": rounds, "tables": tables, "alerts": watch.pit.published}


def main(argv):
    parser = argparse.ArgumentParser(prog="shoe bench analysis")
    parser.add_argument("--decks", type=argtypes.whole(1, 16), default=8)
    parser.add_argument("--repeats", type=argtypes.whole(1), default=31, help="repeats of the fast paths")
    parser.add_argument("--reference-repeats", type=argtypes.whole(1), default=3,
                        help="repeats of the plain enumeration")
    parser.add_argument("--oracle-by", choices=("ranks", "points"), default="ranks",
                        help="the oracle deals one card per rank (default) or per point value (faster)")
    parser.add_argument("--shoes", type=argtypes.whole(1), default=3, help="seeded shoes for the monitor")
    parser.add_argument("--tables", type=argtypes.whole(1), default=16,
                        help="tables for the pit's edge worker (its share is given for this many)")
    args = parser.parse_args(argv)

    print(load(), flush=True)
    odds = measure_odds(args.decks, args.repeats)
    oracle = measure_oracle(args.decks, args.oracle_by, args.reference_repeats)
    print("every wager (%d keys), %d decks, fresh composition: %.3f ms median (CPU %.3f ms) over %d"
          % (odds["keys"], args.decks, odds["wall"] * 1e3, odds["cpu"] * 1e3, args.repeats))
    print("oracle, main game only (plain recursion over %s, %d decks): %.0f ms (CPU %.0f ms), median of %d;"
          " identical state counts: %s"
          % (args.oracle_by, args.decks, oracle["wall"] * 1e3, oracle["cpu"] * 1e3, args.reference_repeats,
             oracle["identical"]))
    print("ratio oracle / every wager: x%.0f wall, x%.0f CPU (goal: every wager <= 5 ms, x100)"
          % (oracle["wall"] / odds["wall"], oracle["cpu"] / odds["cpu"]))
    mon = measure_monitor(args.decks, args.shoes)
    print("edge monitor (%s table, %d keys) over %d seeded shoes: %.3f ms per round (CPU %.3f ms), medians"
          " (goal <= 5 ms)" % (MONITOR_TABLE["designation"], mon["keys"], args.shoes, mon["wall"] * 1e3,
                               mon["cpu"] * 1e3))
    pit = measure_pit_edges(args.tables, args.decks)
    share = pit["cpu"] * args.tables / ROUND_S
    print("pit edge worker (host_tools/pit/edges.py, real store) over %d tables, %d rounds: CPU %.3f ms per round;"
          " at %d tables dealing a round every %.1f s that is %.1f%% of one core"
          % (args.tables, pit["rounds"], pit["cpu"] * 1e3, args.tables, ROUND_S, 100 * share))
    print(load(), flush=True)
    return 0 if oracle["identical"] else 1
