"""Figures read back from other benches' printed reports, for `shoe bench all`.

The dashboard runs each bench as a person would (its command line, in a
process of its own) and reads the lines it prints. Everything that knows
the wording of another bench's report is here and only here: when a bench's
report changes, this module is what changes with it. Each reader returns a
dict of figures, or raises ReadingError naming the line it could not find.
"""

import re


class ReadingError(ValueError):
    pass


def _find(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        raise ReadingError("no %s line in the report" % what)
    return m


def _errors(text):
    return [line.strip() for line in text.splitlines() if "ERROR" in line]


def casino(text):
    """`shoe bench casino`: throughput median and live latency p99."""
    out = {}
    m = re.search(r"^throughput: median (\d+) events/s", text, re.M)
    if m:
        out["events_per_s"] = float(m.group(1))
        lost = re.findall(r"^throughput run \d+: .*\(lost (\d+), duplicated (\d+)\)", text, re.M)
        out["throughput_lost"] = sum(int(a) + int(b) for a, b in lost)
    m = re.search(r"^latency: (\d+) tables .*? p99 ([\d.]+) ms.*; lost (\d+), duplicated (\d+)", text, re.M)
    if m:
        out["live_tables"] = int(m.group(1))
        out["p99_ms"] = float(m.group(2))
        out["latency_lost"] = int(m.group(3)) + int(m.group(4))
        # The latency line's central stamp is taken when the consumer's batch
        # starts; the stage breakdown's end-to-end line ends at the commit.
        e2e = re.search(r"^\s*pit commit -> PostgreSQL commit\s+p50\s+[\d.]+ ms\s+p99\s+([\d.]+) ms", text, re.M)
        if e2e:
            out["p99_ms"] = float(e2e.group(1))
    if not out:
        raise ReadingError("no throughput or latency line in the report")
    return out


def pit(text, tables):
    """`shoe bench pit`: card->durable and page p99 at ``tables``, median over its runs."""
    runs = re.findall(r"^\s*N=%d run \d+: .*?durable p50 [\d.]+ p99 ([\d.]+) ms.*?page p50 [\d.]+ p99 ([\d.]+) ms;"
                      r" CPU pit (\d+)%%.*?lost (\d+), page missing (\d+)" % tables, text, re.M)
    if not runs:
        raise ReadingError("no N=%d run line in the report" % tables)
    durable = sorted(float(r[0]) for r in runs)
    page = sorted(float(r[1]) for r in runs)
    cpu = sorted(float(r[2]) for r in runs)
    mid = len(runs) // 2
    out = {"durable_p99_ms": durable[mid], "page_p99_ms": page[mid], "pit_cpu_pct": cpu[mid], "runs": len(runs),
           "lost": sum(int(r[3]) + int(r[4]) for r in runs), "errors": _errors(text)}
    # each run's commit stage (the pit's histogram), as a bucket bound: the median run's
    commits = sorted(float(v) for v in re.findall(r"^\s*N=%d run \d+: .*\n\s*commit stage \(.*?p99 <= ([\d.]+) ms"
                                                  % tables, text, re.M))
    if commits:
        out["commit_p99_ms"] = commits[len(commits) // 2]
    # each run's fsync baseline (the disk's floor under card->durable, measured beside it)
    floors = sorted(float(v) for v in re.findall(r"^\s*baseline, same window: one 4 KiB fsync on this disk "
                                                 r"p50 [\d.]+ / p99 ([\d.]+) ms", text, re.M))
    if floors and len(floors) == len(runs):
        out["fsync_p99_ms"] = floors[len(floors) // 2]
    return out


def link(text):
    """`shoe bench link`: per shoe count, p50/p99, the dealer lines it
    found lost, the disk's fsync p99 beside it, the stage that held most of
    the slowest 1 % of cards and the bridges' CPU per stored event; and the
    ERROR lines."""
    out = {"errors": _errors(text)}
    blocks = re.split(r"^(?=\s*\d+ shoes?\s*: latency)", text, flags=re.M)
    for block in blocks:
        m = re.match(r"^\s*(\d+) shoes?\s*: latency p50 ([\d.]+) ms, p99 ([\d.]+) ms", block)
        if not m:
            continue
        figures = {"p50_ms": float(m.group(2)), "p99_ms": float(m.group(3))}
        lost = re.search(r"^\s*dealer lines written (\d+), lost (\d+)", block, re.M)
        if lost:
            figures["written"], figures["lost"] = int(lost.group(1)), int(lost.group(2))
        slow = re.search(r"^\s*slowest 1% .*mean ms per stage: (.*)$", block, re.M)
        if slow:
            stages = re.findall(r"(\w+) ([\d.]+)", slow.group(1))
            figures["held_by"] = max(stages, key=lambda kv: float(kv[1]))[0] if stages else None
        floor = re.search(r"^\s*baseline, same windows: one 4 KiB fsync .* p99 ([\d.]+) ms", block, re.M)
        if floor:
            figures["fsync_p99_ms"] = float(floor.group(1))
        cpu = re.search(r"^\s*CPU per stored event .*: bridges (\d+)", block, re.M)
        if cpu:
            figures["bridge_us"] = int(cpu.group(1))
        out[int(m.group(1))] = figures
    if len(out) == 1:
        raise ReadingError("no latency line in the report")
    return out


def footprint(text):
    """`shoe bench footprint`: the worst board's peak heap share, per VM width."""
    out = {}
    for bits, rest in re.findall(r"^(\d+)-bit resident / peak % of heap: (.*)$", text, re.M):
        worst = None
        for board, _resident, peak in re.findall(r"(\S+) (\S+) / (\d+)%", rest):
            if worst is None or int(peak) > worst[1]:
                worst = (board, int(peak))
        if worst:
            out[int(bits)] = worst
    if not out:
        raise ReadingError("no 'resident / peak % of heap' line in the report")
    return out
