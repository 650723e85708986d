"""`shoe bench link`: how long a card takes to become part of the record.

Latency is measured from the moment the dealer's card leaves the shoe (the
simulated dealer writes its line to the emulated reader) to the moment its
event is committed in SQLite with synchronous=FULL — the instant after which
a power cut of the pit PC can no longer lose it. The dealer deals one card at
a time, the next when the last is stored, as a person does. Throughput is
measured separately with the dealer writing as fast as the shoe takes cards.

Both are measured for one shoe (a bridge committing on its own connection,
as `shoe bridge` does), then for 16 shoes on one host sharing one store
file as a pit's tables do (16 VMs, 16 bridge threads, the pit's group
commit: host_tools/pit/groupcommit.py). Each figure is the median over
``--runs`` full 8-deck shoes; machines are noisy, so rerun and compare
medians rather than trusting one run. Beside each timed dealing, one
fsync of 4 KiB in the store's directory every 50 ms gives the disk's own
floor in the same window (fsyncfloor.py): no card is durable sooner.

Each card's path is also cut into stages (linkstages.py: the dealer
channel, the shoe's VM, the cable, the bridge's checks, the commit, the
ack back), with what the slowest 1 % of cards spent in each, and every
figure says how many dealer lines the store lacks at the end; a table
that stalls says how far its shoe sent and what was stored and acked.
What each part costs in CPU per stored event is measured over the same
dealing (linkstages.Costs: the bridge threads' own clocks, the VMs' and
the store writer's /proc counts): unlike the latencies, those figures
move little with what else the machine runs.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

from host_tools import argtypes
from host_tools.sim import dealer
from host_tools.pit import service
from host_tools.pit.groupcommit import GroupCommit
from host_tools.qa.bench import linkreplay, linkstages
from host_tools.qa.bench.fsyncfloor import FsyncFloor
from host_tools.sim.rigs.bridge import Feeder, ThreadedBridge, dealt_type


def percentile(values, p):
    """Nearest-rank percentile (no interpolation: a reported p99 was observed)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def card_lines(feeder, bridge):
    """(each card line's index, when it was written, the seq of its card event)."""
    lines = [i for i, line in enumerate(feeder.lines) if dealt_type(line) == "card"]
    seqs = [seq for seq, event in bridge.events if event.get("type") == "card"]
    pairs = list(zip(lines, seqs))
    return [i for i, _ in pairs], [feeder.written_at[i] for i, _ in pairs], [seq for _, seq in pairs]


def card_latencies(feeder, bridge):
    """Seconds from each card line's write to its card event's commit."""
    _lines, written, seqs = card_lines(feeder, bridge)
    return [bridge.committed_at[seq] - w for w, seq in zip(written, seqs)]


class Table:
    """One emulated shoe with its bridge thread, writing into ``db_path``."""

    def __init__(self, workdir, shoe_id, db_path, seed, committer=None):
        self.emu = linkstages.TappedEmulator(os.path.join(workdir, shoe_id), shoe_id)
        self.emu.start()
        self.bridge = ThreadedBridge(db_path, self.emu.host_path, self.emu.key, committer=committer)
        self.taps = linkstages.BridgeTaps(self.bridge.bridge.link)
        # patient: a burst waits in the shoe's journal and is late, never
        # lost; the bench fails only when the store stops moving for 120 s
        self.feeder = Feeder(self.emu, dealer.script(seed), self.bridge, stall=120, patient=True)
        self.error = None
        self.elapsed = None

    def play(self, burst, ready):
        try:
            self.feeder.wait_boot()
        except Exception as e:  # reported with the figures, never hidden
            self._failed(e)
            ready.abort()
            return
        try:
            ready.wait()   # every table booted: the CPU counts start here
        except threading.BrokenBarrierError:
            self.error = "%s: not dealt: another table did not boot" % self.emu.shoe_id
            return
        try:
            start = time.time()
            if burst:
                self.feeder.blind(interval=0)
            self.feeder.finish()
            self.elapsed = max(self.bridge.committed_at.values()) - start
        except Exception as e:  # reported with the figures, never hidden
            self._failed(e)

    def _failed(self, e):
        self.error = "%s: %s; %s" % (self.emu.shoe_id, e, linkstages.whereabouts(self.emu, self.bridge))

    def lost(self):
        """Dealer lines written whose events the store does not hold."""
        return max(0, self.feeder.written - self.bridge.taken)

    def stages(self):
        return linkstages.card_stages(self.emu, self.taps, *card_lines(self.feeder, self.bridge))

    def close(self):
        self.bridge.close()
        self.emu.close()


def one_run(shoes, seed, burst):
    """Deal one full shoe at each of ``shoes`` tables at once; return a dict
    of the card latencies, their stages, the events stored, the seconds the
    dealing took, the dealer lines written and lost, and the errors."""
    workdir = tempfile.mkdtemp(prefix="shoe-bench-")
    db_path = os.path.join(workdir, "pit.db")
    # Several tables on one store are a pit: they share its group commit
    # (host_tools/pit/groupcommit.py) and its GIL switch interval, as
    # `shoe pit`'s tables do.
    committer = GroupCommit(db_path) if shoes > 1 else None
    switch = sys.getswitchinterval()
    if shoes > 1:
        sys.setswitchinterval(service.SWITCH_S)
    tables = []
    costs = floor = None
    try:
        for i in range(shoes):
            tables.append(Table(workdir, "B%02d" % i, db_path, seed + i, committer))
        ready = threading.Barrier(shoes + 1)
        threads = [threading.Thread(target=t.play, args=(burst, ready)) for t in tables]
        for th in threads:
            th.start()
        try:
            ready.wait()
            costs = linkstages.Costs([t.bridge for t in tables], [t.emu for t in tables], committer)
            if not burst:   # the floor beside the timed dealing only; the throughput pass goes undisturbed
                floor = FsyncFloor(workdir)
        except threading.BrokenBarrierError:
            pass   # a table did not boot: its error says why
        for th in threads:
            th.join()
        if costs is not None:
            costs.stop()
    finally:
        fsyncs = floor.close() if floor is not None else []
        sys.setswitchinterval(switch)
        for t in tables:
            t.close()
        if committer is not None:
            committer.close()
    out = {"latencies": [], "stages": {}, "events": 0, "errors": [t.error for t in tables if t.error],
           "costs": costs.per_event() if costs is not None else None,
           "written": sum(t.feeder.written for t in tables), "lost": sum(t.lost() for t in tables),
           "fsync": fsyncs,
           "seconds": max((t.elapsed for t in tables if t.elapsed), default=0.0)}
    for t in tables:
        if not t.error:
            out["latencies"].extend(card_latencies(t.feeder, t.bridge))
            linkstages.merge(out["stages"], t.stages())
            out["events"] += len(t.bridge.events)
    if out["errors"]:
        out["errors"].append("the run's stores and VM logs are kept in %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def measure(shoes, runs, seed):
    """Each run's p50 and p99, the stages of every run's cards, each
    lockstep run's CPU per stored event, the burst rates, the lines written
    and lost, and the errors."""
    got = {"p50s": [], "p99s": [], "stages": {}, "rates": [], "errors": [], "written": 0, "lost": 0,
           "costs": [], "fsync_p50s": [], "fsync_p99s": []}
    for r in range(runs):
        for burst in (False, True):
            run = one_run(shoes, seed + 100 * r, burst=burst)
            got["errors"] += run["errors"]
            got["written"] += run["written"]
            got["lost"] += run["lost"]
            if burst:
                if run["seconds"]:
                    got["rates"].append(run["events"] / run["seconds"])
                continue
            linkstages.merge(got["stages"], run["stages"])
            if run["costs"]:
                got["costs"].append(run["costs"])
            if run["latencies"]:
                got["p50s"].append(percentile(run["latencies"], 50))
                got["p99s"].append(percentile(run["latencies"], 99))
            if run["fsync"]:
                got["fsync_p50s"].append(percentile(run["fsync"], 50))
                got["fsync_p99s"].append(percentile(run["fsync"], 99))
    return got


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shoe bench link", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="full shoes per figure (default 3)")
    parser.add_argument("--shoes", type=int, default=16, help="tables for the multi-shoe figure")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--replay", type=argtypes.whole(1), metavar="N",
                        help="instead: the bridge's own CPU, calls and SQL statements per event, one "
                             "shoe's frames replayed N times into a fresh link and store (linkreplay.py)")
    parser.add_argument("--pit", action="store_true",
                        help="with --replay: write as a pit's table thread does, through the pit's "
                             "group committer process")
    args = parser.parse_args(argv)
    if args.pit and not args.replay:
        parser.error("--pit goes with --replay N")
    if args.replay:
        return linkreplay.main(args.replay, args.seed, Table, args.pit)
    print("card leaving the shoe -> event durable in SQLite (synchronous=FULL); "
          "median of %d full 8-deck shoes per figure, %d CPUs" % (args.runs, os.cpu_count() or 0))
    rc = 0
    single = None
    for shoes in sorted({1, args.shoes}):
        got = measure(shoes, args.runs, args.seed)
        for e in got["errors"]:
            print("  ERROR %s" % e)
            rc = 1
        if got["lost"]:
            rc = 1
        if not got["p50s"] or not got["rates"]:
            continue
        rate = statistics.median(got["rates"])
        line = ("%2d shoe%s: latency p50 %.1f ms, p99 %.1f ms (runs: p50 %s, p99 %s); %.0f events/s"
                % (shoes, "s" if shoes > 1 else " ", 1000 * statistics.median(got["p50s"]),
                   1000 * statistics.median(got["p99s"]),
                   ", ".join("%.1f" % (1000 * v) for v in got["p50s"]),
                   ", ".join("%.1f" % (1000 * v) for v in got["p99s"]), rate))
        if single is None:
            single = rate
        else:
            line += " (%.1fx one shoe)" % (rate / single)
        print(line)
        print("  dealer lines written %d, lost %d (not in the store at the end)" % (got["written"], got["lost"]))
        if got["fsync_p99s"]:
            floor = statistics.median(got["fsync_p99s"])
            print("  baseline, same windows: one 4 KiB fsync beside the store every 50 ms, p50 %.1f / p99 %.1f ms;"
                  " card->durable p99 = x%.1f the fsync p99"
                  % (1000 * statistics.median(got["fsync_p50s"]), 1000 * floor,
                     statistics.median(got["p99s"]) / floor if floor else float("nan")))
        print("\n".join(linkstages.report(got["stages"], percentile)))
        print(linkstages.cost_line(got["costs"]), flush=True)
    return rc
