"""`shoe bench casino`: the casino record's two figures on this machine.

1. Throughput: pit stores filled beforehand (a backlog, as after a long
   outage), then the pits' publishers started with ``--consumers`` `shoe
   central` processes waiting: events per second from pit stores into
   PostgreSQL through JetStream, from the first publisher's start to the
   last central commit (the figure from the pits' process start, which
   also counts their Python start-up, beside it). PostgreSQL runs with
   fsync on; JetStream syncs every write (servers.py).
2. Latency: simulated tables dealing at a real pace (``--rate`` events per
   second per table, round robin over the tables), two pits, two consumers
   (each pulling one pit's partition unless ``--no-partition``):
   p50/p99 of central commit minus pit commit (both stamps in the rows).

Prints medians over ``--runs`` for the throughput (``--runs 0``: only the
latency), and for each measured stretch where the CPU went: the CPU
seconds of each part's process group (hub, leaves, PostgreSQL with its
backends, the simulated pits, the two consumers; Rig.cpu_seconds) and the
consumers' CPU per event. Timings are not pass/fail facts, so this is no
test.
"""

import argparse
import os
import shutil
import signal
import statistics
import tempfile
import time

from host_tools.qa.bench import casinotap
from host_tools.sim import simtable
from host_tools.sim.rigs.casino import Rig
from host_tools.store import db


def _fill(rig, events):
    """Deal ``events`` per shoe into every pit store (one fast transaction
    each: the bench is about the path after the store)."""
    from host_tools.protocol.keys import read_key
    for pit in rig.pits:
        with db.Store(rig.store_path(pit)) as st:
            st.db.execute("PRAGMA synchronous=OFF")
            for shoe in rig.shoes[pit]:
                # the seed the pit's own tables use, so the started pit
                # (simpit) carries on from this store's head
                sim = simtable.SimShoe(shoe, read_key(os.path.join(rig.keydir, shoe + ".key")),
                                       seed=simtable.seed_of(shoe), workdir=rig.dir)
                try:
                    sim.deal(st, events)
                finally:
                    sim.close()
    return sum(len(v) for v in rig.shoes.values()) * events


def _filled(rig, events, cache):
    """The pit stores filled as ``_fill`` does, dealt once per bench into
    ``cache`` (stores and the shoes' keys) and copied into each run's rig:
    dealing 200,000 simulated events took minutes of the bench's own time
    per run on a loaded machine, and none of it is timed."""
    if not os.path.exists(os.path.join(cache, "filled")):
        total = _fill(rig, events)
        os.makedirs(cache, exist_ok=True)
        for pit in rig.pits:
            shutil.copy2(rig.store_path(pit), os.path.join(cache, os.path.basename(rig.store_path(pit))))
        shutil.copytree(rig.keydir, os.path.join(cache, "keys"))
        open(os.path.join(cache, "filled"), "w").close()
        return total
    for pit in rig.pits:
        shutil.copy2(os.path.join(cache, os.path.basename(rig.store_path(pit))), rig.store_path(pit))
    shutil.copytree(os.path.join(cache, "keys"), rig.keydir, dirs_exist_ok=True)
    return sum(len(v) for v in rig.shoes.values()) * events


def _pits_alive(rig):
    """RuntimeError naming a simulated pit that exited (its log says why)."""
    for pit, proc in rig.pit_procs.items():
        if proc.poll() is not None:
            raise RuntimeError("simulated pit %s exited with %s (log: %s)" % (
                pit, proc.returncode, os.path.join(rig.dir, "pit-%s.log" % pit)))


def throughput(tables, events, consumers=2, partition=False, hub_nodes=1, replicas=1, cache=None):
    rig = Rig(tempfile.mkdtemp(prefix="shoe-bench-casino-"), pits=2, tables=tables, rate=1.0,
              events=events, domains=False, fsync=True, consumers=consumers, partition=partition,
              hub_nodes=hub_nodes, replicas=replicas)
    try:
        # the stores and keys first: the consumers read the keys
        total = _filled(rig, events, cache) if cache else _fill(rig, events)
        rig.start(pits=False)
        time.sleep(1.0)  # the consumers are up and bound
        t0 = time.monotonic()
        for pit in rig.pits:
            rig.start_pit(pit)
        cpu0 = rig.cpu_seconds()
        while rig.central_count() < total:
            _pits_alive(rig)
            if time.monotonic() - t0 > 600:
                raise RuntimeError("central did not reach %d events in 600 s" % total)
            time.sleep(0.05)
        started = time.monotonic() - t0
        cpu = _cpu_delta(cpu0, rig.cpu_seconds())
        # the path's time: from the first pit's publisher starting to the
        # last central commit (the pits' process start and this loop's
        # polling are not the path's)
        import psycopg
        with psycopg.connect(rig.pg.dsn) as conn:
            last = conn.execute("SELECT max(central_committed) FROM events").fetchone()[0]
        took = last - rig.dealing_since()
        c = rig.compare()
        return total, took, started, c, cpu
    finally:
        rig.close()
        shutil.rmtree(rig.dir, ignore_errors=True)


def latency(tables, rate, seconds, warmup=5.0, consumers=2, partition=False, hub_nodes=1, replicas=1):
    """(sorted latencies, compare counts, cpu, stages) of ``tables`` live
    tables; the pits take their events before the clock starts (simpit
    --pregen: a real pit's publisher reads its store, it does not
    simulate shoes), and the consumers log each message's stage stamps."""
    rig = Rig(tempfile.mkdtemp(prefix="shoe-bench-casino-"), pits=2, tables=tables // 2, rate=rate,
              domains=False, fsync=True, consumers=consumers, pregen=warmup + seconds + 30, stages=True,
              partition=partition, hub_nodes=hub_nodes, replicas=replicas)
    taps = None
    try:
        rig.start()
        taps = casinotap.Taps(rig).start()
        rig.wait_dealing()
        time.sleep(warmup)
        t0 = time.time()
        cpu0, pg0 = rig.cpu_seconds(), pg_counts(rig.pg.dsn)
        time.sleep(seconds)
        cpu, pg = _cpu_delta(cpu0, rig.cpu_seconds()), _cpu_delta(pg0, pg_counts(rig.pg.dsn))
        _pits_alive(rig)
        rig.stop_dealing()
        rig.converge(60)
        import psycopg
        with psycopg.connect(rig.pg.dsn) as c:
            d = [r[0] for r in c.execute(
                "SELECT central_committed - pit_committed FROM events WHERE pit_committed >= %s"
                " AND pit_committed < %s", (t0, t0 + seconds))]
        d.sort()
        taps.stop()
        return d, rig.compare(), cpu, read_stages(rig.stage_logs(), t0, t0 + seconds, taps.seen), pg
    finally:
        try:
            if taps is not None:
                taps.stop()
        finally:
            rig.close()
            shutil.rmtree(rig.dir, ignore_errors=True)


# (name, from stamp, to stamp) over an event's stamps: pit commit, publish,
# the leaf's tap, the hub's stream stamp (the stream leader's clock as it
# takes the message, before its fsync), consumer fetch, PostgreSQL commit,
# acked (the consumers' stage logs: host_tools/central/consumer.py,
# STAGE_LOG_ENV; the taps: casinotap.py)
STAGES = (("pit commit -> publish", 0, 1), ("publish -> leaf (tap)", 1, 2),
          ("leaf (tap) -> hub stream", 2, 3), ("hub stream -> consumer fetch (fsync, pull)", 3, 4),
          ("fetch -> PostgreSQL commit", 4, 5), ("PostgreSQL commit -> acked", 5, 6),
          ("pit commit -> PostgreSQL commit", 0, 5))


def read_stages(paths, t_from, t_to, seen=None):
    """{stage: sorted seconds} of every event the pits committed in
    [t_from, t_to), from the consumers' stage logs and the taps' stamps
    (``seen``: casinotap.Taps.seen; a message a tap missed leaves out the
    stages that need it)."""
    seen = seen or {"leaf": {}}
    out = {name: [] for name, _a, _b in STAGES}
    for path in paths:
        try:
            f = open(path)
        except FileNotFoundError:
            continue
        with f:
            for line in f:
                words = line.split()
                if len(words) != 7:
                    continue   # a line cut by a killed consumer
                published, stored, fetched, committed, acked = (float(w) for w in words[:5])
                leaf = seen["leaf"].get(words[6])
                for pc in words[5].split(","):
                    pc = float(pc)
                    if not t_from <= pc < t_to:
                        continue
                    ts = [pc, published, leaf, stored, fetched, committed, acked]
                    for name, a, b in STAGES:
                        if ts[a] is not None and ts[b] is not None:
                            out[name].append(ts[b] - ts[a])
    for v in out.values():
        v.sort()
    return out


def stage_lines(stages):
    """The breakdown: p50 and p99 of each stage (each its own distribution:
    the p99s do not add up to the end-to-end p99)."""
    width = max(len(name) for name in stages)
    return ["  %-*s  p50 %7.1f ms  p99 %7.1f ms  (%d events)" % (
        width, name, 1000 * _pct(v, 50), 1000 * _pct(v, 99), len(v)) for name, v in stages.items()]


def pg_counts(dsn):
    """PostgreSQL's own counters of the record's database: commits (one per
    consumer batch, plus the bench's and the view's few), events inserted,
    and the heads' updates (``shoes``), in all and HOT (no index entry)."""
    import psycopg
    with psycopg.connect(dsn) as c:
        commits = c.execute("SELECT xact_commit FROM pg_stat_database WHERE datname ="
                            " current_database()").fetchone()[0]
        got = dict((r[0], r[1:]) for r in c.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " WHERE relname IN ('events', 'shoes')"))
    return {"commits": float(commits), "events": float(got.get("events", (0, 0, 0))[0]),
            "heads": float(got.get("shoes", (0, 0, 0))[1]),
            "hot": float(got.get("shoes", (0, 0, 0))[2])}


def pg_line(pg, seconds):
    """What PostgreSQL did over ``seconds``: commits, events per commit
    (the consumers' batch size at this pace), heads updated HOT."""
    return "postgres: %.0f commits/s, %.1f events per commit, %.0f%% of the heads' updates HOT" % (
        pg["commits"] / seconds, pg["events"] / max(1.0, pg["commits"]),
        100.0 * pg["hot"] / max(1.0, pg["heads"]))


def _cpu_delta(before, after):
    return {k: after[k] - before.get(k, 0.0) for k in after}


def cpu_line(cpu, seconds, events):
    """Where the CPU went: each part's CPU seconds and share of the
    machine's cores over ``seconds``, and the consumers' CPU per event."""
    cores = os.cpu_count() or 1
    parts = ", ".join("%s %.1f s (%.0f%%)" % (k, v, 100.0 * v / (seconds * cores))
                      for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]))
    central = sum(v for k, v in cpu.items() if k.startswith("central"))
    return "cpu over %.1f s on %d cores: %s; the consumers %.0f us per event" % (
        seconds, cores, parts, 1e6 * central / events if events else float("nan"))


def _interrupted(*_):
    raise KeyboardInterrupt


def _pct(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def main(argv):
    p = argparse.ArgumentParser(prog="shoe bench casino", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3, help="throughput runs (median; 0: none)")
    p.add_argument("--tables", type=int, default=100, help="throughput: shoes over the two pits")
    p.add_argument("--events", type=int, default=2000, help="throughput: events per shoe")
    p.add_argument("--live-tables", type=int, default=500, help="latency: tables dealing (0: none)")
    p.add_argument("--rate", type=float, default=0.5, help="latency: events/s per table")
    p.add_argument("--seconds", type=float, default=30.0, help="latency: measured seconds")
    p.add_argument("--consumers", type=int, default=2, help="`shoe central` processes")
    p.add_argument("--partition", action=argparse.BooleanOptionalAction, default=True,
                   help="one durable consumer per pit, each `shoe central` pulling one pit's"
                   " (default; --no-partition: every consumer on one shared durable)")
    p.add_argument("--hub-nodes", type=int, default=1,
                   help="the hub as a NATS cluster of this many nodes on loopback (TLS routes)")
    p.add_argument("--replicas", type=int, default=1, help="copies of the casino stream (<= --hub-nodes)")
    p.add_argument("--fill-cache", metavar="DIR",
                   help="throughput: keep the dealt pit stores in DIR for later benches of the same"
                   " sizes (default: dealt once per bench, then removed)")
    args = p.parse_args(argv)
    if not 1 <= args.replicas <= max(1, args.hub_nodes) or args.hub_nodes < 1 or args.consumers < 1:
        p.error("--hub-nodes and --consumers are 1 or more, --replicas from 1 to --hub-nodes")
    # SIGTERM unwinds like Ctrl-C, so each rig's finally stops its servers
    signal.signal(signal.SIGTERM, _interrupted)
    print("bench casino: TLS on every connection, NKEY users with least privilege, SCRAM roles over"
          " TLS, every device registered (host_tools/sim/rigs/casino.py); %d consumers%s; hub: %s" % (
              args.consumers, ", partitioned by pit" if args.partition else " sharing one durable",
              "one server" if args.hub_nodes <= 1 else "a cluster of %d nodes, stream replicas %d" % (
                  args.hub_nodes, args.replicas)),
          flush=True)
    rates = []
    cache = args.fill_cache or tempfile.mkdtemp(prefix="shoe-bench-casino-fill-")
    try:
        for i in range(args.runs):
            total, took, started, c, cpu = throughput(
                args.tables // 2, args.events, args.consumers, args.partition, args.hub_nodes,
                args.replicas, os.path.join(cache, "stores-%dx%d" % (args.tables // 2 * 2, args.events)))
            rates.append(total / took)
            print("throughput run %d: %d events in %.2f s = %.0f events/s (lost %d, duplicated %d);"
                  " %.2f s = %.0f events/s counted from the pits' process start" % (
                      i + 1, total, took, total / took, c["lost"], c["duplicated"], started,
                      total / started), flush=True)
            print("  " + cpu_line(cpu, started, total), flush=True)
    finally:
        if not args.fill_cache:
            shutil.rmtree(cache, ignore_errors=True)
    if rates:
        print("throughput: median %.0f events/s over %d runs (goal >= 20000)" % (
            statistics.median(rates), len(rates)), flush=True)
    if args.live_tables <= 0:
        return 0
    d, c, cpu, stages, pg = latency(args.live_tables, args.rate, args.seconds, consumers=args.consumers,
                                partition=args.partition, hub_nodes=args.hub_nodes,
                                replicas=args.replicas)
    # The end to end figure is the consumers' own commit stamp minus the pit's
    # (the stage log); a row's central_committed is stamped when its batch
    # starts, before the checks and the commit, so it reads short.
    e2e = stages.get("pit commit -> PostgreSQL commit") or d
    print("latency: %d tables at %.2f events/s each, %d events in %.0f s: pit commit -> central commit"
          " p50 %.1f ms, p99 %.1f ms, max %.1f ms (goal p99 <= 250 ms); lost %d, duplicated %d" % (
              args.live_tables, args.rate, len(d), args.seconds, 1000 * _pct(e2e, 50),
              1000 * _pct(e2e, 99), 1000 * (e2e[-1] if e2e else float("nan")), c["lost"],
              c["duplicated"]), flush=True)
    print("  (the rows' central_committed, stamped as their batch starts: p50 %.1f ms, p99 %.1f ms)" % (
        1000 * _pct(d, 50), 1000 * _pct(d, 99)), flush=True)
    print("  " + cpu_line(cpu, args.seconds, len(d)), flush=True)
    print("  " + pg_line(pg, args.seconds), flush=True)
    print("  stages (each event's stamps: the pit's commit and publish, a tap on its leaf, the hub's"
          " stream, the consumer's fetch, commit and ack; each its own distribution; the tap's"
          " stamp carries its own delay, so the leaf hop reads long and the next one short):",
          flush=True)
    for line in stage_lines(stages):
        print(line, flush=True)
    return 0
