"""`shoe bench all [--quick]`: every headline figure in one table.

Each row is one figure: what it is, its goal, the figure, the verdict, and
the full command that reproduces it. The benches run as a person runs them
(their own commands, each in a process of its own; readings.py reads their
reports), except the odds and the edge monitor, timed here in-process with
the very functions `shoe bench analysis` prints; those two are costs, so
they are judged on this thread's CPU time (the wall clock beside it counts
whatever else the machine runs).

The machine is shared and noisy, so every speed is also given against a
baseline timed in the same run: the oracle (host_tools/analysis/reference.py,
plain CPython dealing a full 8-deck shoe's main game one card per point
value, single-threaded), at the start and at the end. A duration d reads as
``B/d`` (how many fit in one baseline), a rate r as ``r*B`` (events per
baseline); a slower or busier machine moves figure and baseline together.
The odds and the monitor are given against the oracle's CPU time. Each
bench after the first also waits, bounded, for the CPUs to come to rest
(``settle``), and its rows say how idle they were as it began.

``--quick`` runs in minutes at reduced sizes (fewer runs, fewer tables,
shorter windows) and says so on each row; without it every bench runs at
the size its goal names (tens of minutes).
"""

import argparse
import os
import shlex
import subprocess
import sys
import time

from host_tools import argtypes

from . import analysis, readings

TIMEOUT_S = 1800  # one bench; a hung rig must not hang the table
# Before each bench after the first, the table waits (at most SETTLE_MAX_S)
# until the CPUs were at least SETTLE_IDLE idle over one second, so that a
# bench never starts while the last one's processes still wind down, and
# each row says how idle the CPUs were as its bench began: a figure far off
# its usual value can then be told apart from a machine that was busy.
SETTLE_IDLE = 0.8
SETTLE_MAX_S = 60


class Row:
    __slots__ = ("name", "goal", "figure", "verdict", "ratio", "size", "command", "load", "idle")

    def __init__(self, name, goal, size, command):
        self.name, self.goal, self.size, self.command = name, goal, size, command
        self.figure, self.verdict, self.ratio, self.load, self.idle = "-", "error", "-", "-", "-"


def _load():
    return "%.1f" % os.getloadavg()[0]


def _cpu_times():
    """(idle, total) jiffies of all CPUs from /proc/stat; iowait is not
    idle (a store's fsyncs still running are part of what a bench measures)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3], sum(v)


def idle_share(seconds=1.0):
    """The share of the CPUs' time spent idle over the next ``seconds``;
    None where /proc/stat cannot be read (not Linux)."""
    try:
        i0, t0 = _cpu_times()
        time.sleep(seconds)
        i1, t1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return None
    return (i1 - i0) / max(1, t1 - t0)


def settle():
    """Wait, bounded, for the machine to be at rest; (idle share or None, seconds waited)."""
    start = time.monotonic()
    while True:
        idle = idle_share()
        waited = time.monotonic() - start
        if idle is None or idle >= SETTLE_IDLE or waited >= SETTLE_MAX_S:
            return idle, waited


def _shoe(argv):
    return "shoe " + " ".join(shlex.quote(a) for a in argv)


def _bench(argv):
    """Run ``shoe bench ...`` as its own process: (stdout, problem or None,
    the last line it wrote to stderr or None)."""
    try:
        p = subprocess.run([sys.executable, "-m", "host_tools.cli"] + argv, capture_output=True, text=True,
                           timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "", "no report within %d s" % TIMEOUT_S, None
    said = (p.stderr.strip().splitlines() or [None])[-1]
    if p.returncode not in (0, 1):  # 1: the bench ran and reported a failure in its lines
        return p.stdout, "exit %d: %s" % (p.returncode, said or "no message"), said
    return p.stdout, None, said


def _read(argv, reader, rows):
    """Run a bench and read its report: (figures or None, problem or None).
    Rows the report leaves without a figure say why: the bench's own last
    word where it left one, since "no such line" alone sends a reader to
    rerun it to find out."""
    out, problem, said = _bench(argv)
    try:
        return reader(out), problem
    except readings.ReadingError as exc:
        _say(rows, problem or ("%s; it said: %s" % (exc, said) if said else str(exc)))
        return None, problem


def _say(rows, problem):
    for row in rows:
        if row.figure == "-":
            row.figure = problem or "not reported"


def _verdict(ok):
    return "meets" if ok else "MISSES"


def _per(base, ms):
    """A duration against the baseline: how many fit in it."""
    return "B/d x%.0f" % (base / (ms / 1e3)) if ms else "-"


# --- the rows -----------------------------------------------------------------------

def sizes(quick):
    """Each bench's options: at the goal's size, or reduced (--quick)."""
    if quick:
        return {
            "casino": ["--runs", "1", "--tables", "20", "--events", "500", "--live-tables", "500",
                       "--rate", "0.5", "--seconds", "10"],
            "casino_note": "quick: 1 run of 20 shoes x 500 events; 500 live tables for 10 s (goal: 6,000, 60 s)",
            "pit": ["--tables", "256", "--runs", "1", "--seconds", "5", "--warm", "2"],
            "pit_note": "quick: 1 run of 5 s (+2 s warm-up) (goal size: 3 runs of 15 s)",
            "link": ["--runs", "1", "--shoes", "16"],
            "link_note": "quick: 1 full shoe per figure (goal: median of 3)",
            "footprint": ["--runs", "1", "--vm", "wasm32", "--board", "pico", "--board", "esp32s3"],
            "footprint_note": "quick: 1 shoe per board, 32-bit VM only (goal size: 5, both VMs)",
            "odds": {"repeats": 11, "oracle_repeats": 1, "by": "points"},
            "odds_note": "quick: 11 compositions; oracle once, by point value",
            "monitor": 1,
            "monitor_note": "quick: 1 seeded shoe (goal: 3)",
            "pit_edges": 4,
            "pit_edges_note": "quick: 4 tables' seeded shoes on a real store (goal size: 16)",
            "baseline": 1,
        }
    return {
        "casino": ["--runs", "3", "--live-tables", "6000", "--rate", "0.5", "--seconds", "60"],
        "casino_note": "3 runs of 100 shoes x 2,000 events; 6,000 live tables for 60 s",
        "pit": ["--tables", "256", "--runs", "3", "--seconds", "15"],
        "pit_note": "3 runs of 15 s, median",
        "link": ["--runs", "3", "--shoes", "16"],
        "link_note": "3 full shoes per figure, median",
        "footprint": ["--runs", "5", "--board", "pico", "--board", "esp32s3"],
        "footprint_note": "5 shoes per board, both VMs (the 32-bit figures govern)",
        "odds": {"repeats": 31, "oracle_repeats": 3, "by": "points"},
        "odds_note": "31 compositions; oracle median of 3, by point value",
        "monitor": 3,
        "monitor_note": "3 seeded shoes, median",
        "pit_edges": 16,
        "pit_edges_note": "16 tables' seeded shoes on a real store, a round every %.1f s each" % analysis.ROUND_S,
        "baseline": 3,
    }


def casino_rows(size, base):
    argv = ["bench", "casino"] + size["casino"]
    rate = Row("casino events/s (TLS, NKEY, SCRAM)", ">= 20,000", size["casino_note"], _shoe(argv))
    p99 = Row("casino pit->central p99", "<= 250 ms at 6,000 tables", size["casino_note"], _shoe(argv))
    f, problem = _read(argv, readings.casino, [rate, p99])
    f = f or {}
    if "events_per_s" in f:
        rate.figure = "%.0f events/s, %d lost/dup" % (f["events_per_s"], f["throughput_lost"])
        rate.verdict = _verdict(f["events_per_s"] >= 20000 and not f["throughput_lost"])
        rate.ratio = "r*B %.0f events" % (f["events_per_s"] * base)
    if "p99_ms" in f:
        p99.figure = "%.1f ms at %d tables, %d lost/dup" % (f["p99_ms"], f["live_tables"], f["latency_lost"])
        p99.verdict = _verdict(f["p99_ms"] <= 250 and not f["latency_lost"] and f["live_tables"] >= 6000)
        if f["live_tables"] < 6000 and f["p99_ms"] <= 250 and not f["latency_lost"]:
            p99.verdict = "meets (reduced)"
        p99.ratio = _per(base, f["p99_ms"])
    _say([rate, p99], problem)
    return [rate, p99]


def pit_rows(size, base):
    argv = ["bench", "pit"] + size["pit"]
    durable = Row("pit card->durable p99, 256 tables", "<= 20 ms, 0 lost", size["pit_note"], _shoe(argv))
    page = Row("pit page p99, 256 tables", "<= 250 ms, 0 lost", size["pit_note"], _shoe(argv))
    f, _problem = _read(argv, lambda out: readings.pit(out, 256), [durable, page])
    if f is None:
        return [durable, page]
    durable.figure = "%.1f ms, %d lost, pit CPU %.0f%%%s%s" % (
        f["durable_p99_ms"], f["lost"], f["pit_cpu_pct"],
        ", commit stage p99 <= %.0f ms" % f["commit_p99_ms"] if "commit_p99_ms" in f else "",
        ", one fsync p99 %.1f ms beside it" % f["fsync_p99_ms"] if "fsync_p99_ms" in f else "")
    durable.verdict = _verdict(f["durable_p99_ms"] <= 20 and not f["lost"] and not f["errors"])
    durable.ratio = _per(base, f["durable_p99_ms"])
    page.figure = "%.1f ms, %d lost" % (f["page_p99_ms"], f["lost"])
    page.verdict = _verdict(f["page_p99_ms"] <= 250 and not f["lost"] and not f["errors"])
    page.ratio = _per(base, f["page_p99_ms"])
    return [durable, page]


def odds_rows(size, base, oracle):
    o = size["odds"]
    cmd = _shoe(["bench", "analysis", "--repeats", str(o["repeats"]), "--reference-repeats",
                 str(o["oracle_repeats"]), "--oracle-by", o["by"], "--shoes", str(size["monitor"]),
                 "--tables", str(size["pit_edges"])])
    odds = Row("odds: 36 keys, 8 decks, uncached", "<= 5 ms, x100 the oracle", size["odds_note"], cmd)
    f = analysis.measure_odds(8, o["repeats"])
    odds.figure = "CPU %.2f ms (wall %.2f), oracle same: %s" % (f["cpu"] * 1e3, f["wall"] * 1e3,
                                                              "yes" if oracle["identical"] else "NO")
    odds.ratio = "oracle x%.0f CPU" % (oracle["cpu"] / f["cpu"])
    odds.verdict = _verdict(f["cpu"] * 1e3 <= 5 and oracle["cpu"] / f["cpu"] >= 100 and oracle["identical"]
                            and f["keys"] == 36)
    mon = Row("edge monitor per round (ez table)", "<= 5 ms", size["monitor_note"], cmd)
    m = analysis.measure_monitor(8, size["monitor"])
    mon.figure = "CPU %.2f ms (wall %.2f), %d keys" % (m["cpu"] * 1e3, m["wall"] * 1e3, m["keys"])
    mon.ratio = "oracle x%.0f CPU" % (oracle["cpu"] / m["cpu"])
    mon.verdict = _verdict(m["cpu"] * 1e3 <= 5)
    pit = Row("pit edge worker per round", "<= 5 ms, small share", size["pit_edges_note"], cmd)
    p = analysis.measure_pit_edges(size["pit_edges"], 8)
    pit.figure = "CPU %.2f ms; 256 tables: %.0f%% of a core" % (p["cpu"] * 1e3,
                                                              100 * p["cpu"] * 256 / analysis.ROUND_S)
    pit.ratio = "oracle x%.0f CPU" % (oracle["cpu"] / p["cpu"])
    pit.verdict = _verdict(p["cpu"] * 1e3 <= 5)
    return [odds, mon, pit]


def link_rows(size, base):
    argv = ["bench", "link"] + size["link"]
    shoes = int(size["link"][size["link"].index("--shoes") + 1])
    one = Row("link card->durable p99, 1 shoe", "<= 5 ms", size["link_note"], _shoe(argv))
    many = Row("link card->durable p99, %d shoes" % shoes, "0 lost (p99 reported)", size["link_note"], _shoe(argv))
    f, problem = _read(argv, readings.link, [one, many])
    if f is None:
        return [one, many]
    if 1 in f:
        one.figure = "%.1f ms (p50 %.1f), %s" % (f[1]["p99_ms"], f[1]["p50_ms"], _held(f[1]))
        one.verdict = _verdict(f[1]["p99_ms"] <= 5 and not f[1].get("lost"))
        one.ratio = _per(base, f[1]["p99_ms"])
    if shoes in f:
        g = f[shoes]
        lost = "%d of %d lines lost" % (g["lost"], g["written"]) if "lost" in g else "lost not reported"
        errors = ", %d error line(s)" % len(f["errors"]) if f["errors"] else ""
        many.figure = "%.1f ms (p50 %.1f), %s%s, %s" % (g["p99_ms"], g["p50_ms"], lost, errors, _held(g))
        many.verdict = _verdict(not f["errors"] and g.get("lost") == 0)
        many.ratio = _per(base, g["p99_ms"])
    _say([one, many], problem)
    return [one, many]


def _held(figures):
    """Which stage of the link held most of the slowest cards' time, the
    disk's own fsync p99 in the same windows, and what the bridges spent
    per stored event."""
    held = "p99 held by %s" % figures["held_by"] if figures.get("held_by") else "no stages"
    return held + (", one fsync p99 %.1f ms beside it" % figures["fsync_p99_ms"] if "fsync_p99_ms" in figures
                   else "") + (", bridge CPU %d us/event" % figures["bridge_us"] if "bridge_us" in figures else "")


def footprint_rows(size, base):
    argv = ["bench", "footprint"] + size["footprint"]
    row = Row("footprint: peak heap, worst board", "<= 100% of the heap budget", size["footprint_note"], _shoe(argv))
    f, problem = _read(argv, readings.footprint, [row])
    if f is None:
        return [row]
    bits = 32 if 32 in f else max(f)
    board, peak = f[bits]
    row.figure = "%s %d%% (%d-bit VM)" % (board, peak, bits)
    row.verdict = _verdict(peak <= 100 and not problem)
    return [row]


# --- the table ----------------------------------------------------------------------

def baseline(repeats):
    """The oracle's wall seconds (median of ``repeats``) and its state counts."""
    return analysis.measure_oracle(8, "points", repeats)


def print_table(rows):
    names = ("figure", "goal", "measured", "verdict", "vs baseline", "load", "idle")
    cells = [(r.name, r.goal, r.figure, r.verdict, r.ratio, r.load, r.idle) for r in rows]
    # Each column as wide as its widest cell, so the rows stay aligned
    # whatever a figure's text says.
    widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    print(" | ".join("%-*s" % (w, n) for n, w in zip(names, widths)).rstrip())
    print("-+-".join("-" * w for w in widths))
    for c in cells:
        print(" | ".join("%-*s" % (w, v) for w, v in zip(widths, c)).rstrip())
    print("vs baseline: B/d = the baseline's wall time over the duration; r*B = the rate times the baseline;"
          " oracle xN CPU = the baseline's CPU time over the figure's\n"
          "load: the 1-minute load average as the row was read; idle: the CPUs' idle share over the second"
          " before its bench began\n")
    for i, r in enumerate(rows, 1):
        print("%2d. %s -- %s\n    %s" % (i, r.name, r.size, r.command))


def main(argv):
    parser = argparse.ArgumentParser(prog="shoe bench all", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes: a few minutes (each row says how)")
    parser.add_argument("--only", action="append", choices=("casino", "pit", "odds", "link", "footprint"),
                        help="only these benches (repeatable)")
    parser.add_argument("--baseline-repeats", type=argtypes.whole(1), help="oracle runs at each end (median)")
    args = parser.parse_args(argv)
    size = sizes(args.quick)
    reps = args.baseline_repeats or size["baseline"]
    started = time.time()
    print("shoe bench all%s: %d CPUs, load %s at the start" % (" --quick" if args.quick else "", os.cpu_count() or 0,
                                                              "%.2f %.2f %.2f" % os.getloadavg()), flush=True)
    first = baseline(reps)
    base = first["wall"]
    print("baseline B: the oracle (plain recursion, 8-deck main game by point value) %.0f ms wall, %.0f ms CPU"
          % (base * 1e3, first["cpu"] * 1e3), flush=True)
    steps = [("odds", lambda: odds_rows(size, base, first)), ("pit", lambda: pit_rows(size, base)),
             ("link", lambda: link_rows(size, base)), ("casino", lambda: casino_rows(size, base)),
             ("footprint", lambda: footprint_rows(size, base))]
    rows = []
    for name, step in steps:
        if args.only and name not in args.only:
            continue
        idle, waited = settle() if rows else (idle_share(), 0.0)
        at_rest = "-" if idle is None else "%.0f%%" % (100 * idle)
        print("... %s (CPUs %s idle%s)" % (name, at_rest, ", after %.0f s" % waited if waited >= 1.5 else ""),
              flush=True)
        for r in step():
            r.load = _load()
            r.idle = at_rest
            rows.append(r)
    last = baseline(reps)
    print("baseline B at the end: %.0f ms wall (at the start %.0f ms); %.0f s in all, load %s at the end\n"
          % (last["wall"] * 1e3, base * 1e3, time.time() - started, "%.2f %.2f %.2f" % os.getloadavg()))
    print_table(rows)
    if args.quick:
        print("\n--quick: reduced sizes, as each row says; `shoe bench all` runs them at their goals' sizes.")
    return 0 if rows and all(r.verdict.startswith("meets") for r in rows) else 1

