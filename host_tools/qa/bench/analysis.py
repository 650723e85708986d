"""`shoe bench analysis`: exact analysis against plain recursion, and the monitor.

Timings are medians over repeats on fresh compositions (the result cache is
bypassed), so a rerun on the same machine gives comparable figures.
"""

import argparse
import statistics
import time

from host_tools import argtypes
from host_tools.analysis import composition, exact, reference
from host_tools.sim import seeded_shoes as simulate
from host_tools.analysis.monitor import EdgeMonitor


def _median_time(fn, repeats):
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv):
    parser = argparse.ArgumentParser(prog="shoe bench analysis")
    parser.add_argument("--decks", type=argtypes.whole(1, 16), default=8)
    parser.add_argument("--repeats", type=argtypes.whole(1), default=11, help="repeats of the fast paths")
    parser.add_argument("--reference-repeats", type=argtypes.whole(1), default=3, help="repeats of the plain enumeration")
    parser.add_argument("--shoes", type=argtypes.whole(1), default=3, help="seeded shoes for the monitor")
    args = parser.parse_args(argv)

    full = composition.full(args.decks)
    points = composition.by_points(full)
    by_rank = [0] * 52
    for c, k in enumerate(full):
        by_rank[(c >> 2) << 2] += k  # one clubs card stands for its rank

    fast = _median_time(lambda i: exact.main_distribution(points), args.repeats)
    plain = _median_time(lambda i: reference.main_distribution(by_rank), args.reference_repeats)
    same = exact.main_distribution(points) == reference.main_distribution(by_rank)
    print("main game, %d decks: exact %.2f ms, plain recursion over ranks %.0f ms, ratio %.0fx (identical: %s)"
          % (args.decks, fast * 1e3, plain * 1e3, plain / fast, same))

    def fresh(i):  # a different composition each time, so nothing is cached
        counts = list(full)
        counts[i % 52] -= 1
        counts[(7 * i + 3) % 52] -= 1
        exact._analyse.__wrapped__(tuple(counts), exact._settings_json(None))

    exact.analyse(full)  # build the composition-independent plan once
    every = _median_time(fresh, args.repeats)
    cached = _median_time(lambda i: exact.analyse(full), args.repeats)
    print("every wager (%d keys), fresh composition: %.2f ms median; cached: %.3f ms"
          % (len(exact.analyse(full)["house_edge"]), every * 1e3, cached * 1e3))

    per_shoe, per_round = [], []
    for seed in range(args.shoes):
        events = list(simulate.shoe_events(seed, args.decks))
        rounds = sum(1 for e in events if e["type"] == "result")
        monitor = EdgeMonitor(args.decks, {"designation": "ez"})
        t = time.perf_counter()
        for e in events:
            monitor.observe(e)
        dt = time.perf_counter() - t
        per_shoe.append(dt)
        per_round.append(dt / rounds)
    print("edge monitor over a full seeded shoe (%d shoes): %.2f s per shoe, %.1f ms per round (medians)"
          % (args.shoes, statistics.median(per_shoe), statistics.median(per_round) * 1e3))
    return 0
