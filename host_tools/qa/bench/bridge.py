"""`shoe bench link`: how long a card takes to become part of the record.

Latency is measured from the moment the dealer's card leaves the shoe (the
simulated dealer writes its line to the emulated reader) to the moment its
event is committed in SQLite with synchronous=FULL — the instant after which
a power cut of the pit PC can no longer lose it. The dealer deals one card at
a time, the next when the last is stored, as a person does. Throughput is
measured separately with the dealer writing as fast as the shoe takes cards.

Both are measured for one shoe, then for 16 shoes on one bridge host sharing
one store file (16 VMs, 16 bridge threads, one SQLite WAL). Each figure is
the median over ``--runs`` full 8-deck shoes; machines are noisy, so rerun
and compare medians rather than trusting one run.
"""

import argparse
import os
import statistics
import tempfile
import threading
import time

from host_tools.sim import dealer
from host_tools.sim.rigs.bridge import Feeder, ThreadedBridge, dealt_type
from host_tools.sim.emulate import Emulator


def percentile(values, p):
    """Nearest-rank percentile (no interpolation: a reported p99 was observed)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def card_latencies(feeder, bridge):
    """Seconds from each card line's write to its card event's commit."""
    card_lines = [i for i, line in enumerate(feeder.lines) if dealt_type(line) == "card"]
    card_seqs = [seq for seq, event in bridge.events if event.get("type") == "card"]
    return [bridge.committed_at[seq] - feeder.written_at[i] for i, seq in zip(card_lines, card_seqs)]


class Table:
    """One emulated shoe with its bridge thread, writing into ``db_path``."""

    def __init__(self, workdir, shoe_id, db_path, seed):
        self.emu = Emulator(os.path.join(workdir, shoe_id), shoe_id)
        self.emu.start()
        self.bridge = ThreadedBridge(db_path, self.emu.host_path, self.emu.key)
        # patient: a burst waits in the shoe's journal and is late, never
        # lost; the bench fails only when the store stops moving for 120 s
        self.feeder = Feeder(self.emu, dealer.script(seed), self.bridge, stall=120, patient=True)
        self.error = None
        self.elapsed = None

    def play(self, burst):
        try:
            self.feeder.wait_boot()
            start = time.time()
            if burst:
                self.feeder.blind(interval=0)
            self.feeder.finish()
            self.elapsed = max(self.bridge.committed_at.values()) - start
        except Exception as e:  # reported with the figures, never hidden
            self.error = "%s: %s" % (self.emu.shoe_id, e)

    def close(self):
        self.bridge.close()
        self.emu.close()


def one_run(shoes, seed, burst):
    """Deal one full shoe at each of ``shoes`` tables at once; return
    (latencies, events, seconds, errors)."""
    workdir = tempfile.mkdtemp(prefix="shoe-bench-")
    db_path = os.path.join(workdir, "pit.db")
    tables = [Table(workdir, "B%02d" % i, db_path, seed + i) for i in range(shoes)]
    try:
        threads = [threading.Thread(target=t.play, args=(burst,)) for t in tables]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        for t in tables:
            t.close()
    errors = [t.error for t in tables if t.error]
    latencies = []
    events = 0
    for t in tables:
        if not t.error:
            latencies.extend(card_latencies(t.feeder, t.bridge))
            events += len(t.bridge.events)
    seconds = max((t.elapsed for t in tables if t.elapsed), default=0.0)
    return latencies, events, seconds, errors


def measure(shoes, runs, seed):
    p50s, p99s, rates, errors = [], [], [], []
    for r in range(runs):
        lat, _events, _secs, errs = one_run(shoes, seed + 100 * r, burst=False)
        errors += errs
        if lat:
            p50s.append(percentile(lat, 50))
            p99s.append(percentile(lat, 99))
        _lat, events, secs, errs = one_run(shoes, seed + 100 * r, burst=True)
        errors += errs
        if secs:
            rates.append(events / secs)
    return p50s, p99s, rates, errors


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shoe bench link", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="full shoes per figure (default 3)")
    parser.add_argument("--shoes", type=int, default=16, help="tables for the multi-shoe figure")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print("card leaving the shoe -> event durable in SQLite (synchronous=FULL); "
          "median of %d full 8-deck shoes per figure, %d CPUs" % (args.runs, os.cpu_count() or 0))
    rc = 0
    single = None
    for shoes in (1, args.shoes):
        p50s, p99s, rates, errors = measure(shoes, args.runs, args.seed)
        for e in errors:
            print("  ERROR %s" % e)
            rc = 1
        if not p50s or not rates:
            continue
        rate = statistics.median(rates)
        line = ("%2d shoe%s: latency p50 %.1f ms, p99 %.1f ms (runs: p50 %s); %.0f events/s"
                % (shoes, "s" if shoes > 1 else " ", 1000 * statistics.median(p50s),
                   1000 * statistics.median(p99s),
                   ", ".join("%.1f" % (1000 * v) for v in p50s), rate))
        if single is None:
            single = rate
        else:
            line += " (%.1fx one shoe)" % (rate / single)
        print(line, flush=True)
    return rc
