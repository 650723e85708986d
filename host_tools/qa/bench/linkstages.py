"""Where a card's time goes between the dealer and the record: the stages of
`shoe bench link`.

Each card event is stamped at five points, all on this process's wall clock
(every part of the rig is a thread of it, or a VM whose bytes it relays):

    dealer writes the line  -> the shoe's ACK byte says it took it  "dealer"
    (the dealer channel's pty, the VM's loop coming round to read it)
    line taken              -> the shoe's frame reaches the relay   "shoe"
    (the VM plays the card, journals the event, tags and sends it)
    relay has the frame     -> the bridge reads it                  "transit"
    (the cable: the relay's write to the host pty, the bridge's wake-up)
    bridge read             -> the store's append begins            "verify"
    (frame decoding, the tag check, the chain head read)
    append begins           -> the commit returned                  "commit"
    (SQLite insert, WAL commit, fsync)
    commit returned         -> the ack reaches the relay            "ack"
    (not part of card->durable: the shoe forgets the event only then)

The taps are wrappers around the rig's own objects (the emulator's relay
hook, the bridge's feed, its store's append and its send); the product's
code is unchanged by them.
"""

import os
import re
import statistics
import time

from host_tools.sim.emulate import Emulator

STAGES = ("dealer", "shoe", "transit", "verify", "commit")
_HEADER = re.compile(rb"\$([EA])(\d+) ")


class _Headers:
    """Frame headers seen in one direction of the relay: (kind, seq) -> the
    time the chunk holding the header passed. A header split across two
    chunks is caught by keeping the tail of the previous one."""

    def __init__(self):
        self.seen = {}
        self.tail = b""

    def note(self, data, now):
        buf = self.tail + data
        for m in _HEADER.finditer(buf):
            self.seen.setdefault((m.group(1), int(m.group(2))), now)
        self.tail = buf[-16:]


class TappedEmulator(Emulator):
    """An emulated shoe whose relay notes when each event frame leaves the
    VM and when each ack arrives for it."""

    def __init__(self, *args, **kwargs):
        self.out = _Headers()   # VM -> bridge
        self.back = _Headers()  # bridge -> VM
        self.taken_at = []      # per dealt line: when its ACK byte was read
        super().__init__(*args, **kwargs)

    def deal(self, line, timeout=10.0):
        super().deal(line, timeout)
        self.taken_at.append(time.time())

    def _passing(self, src, data):
        data = super()._passing(src, data)
        (self.out if src == self._dev_m else self.back).note(data, time.time())
        return data


class BridgeTaps:
    """Per-seq stamps taken inside one bridge thread: when the read that
    carried the event began, when its append began and when it returned."""

    def __init__(self, link):
        self.read_at = {}
        self.append_at = {}
        self.commit_at = {}
        self._reading = None
        feed, append = link.feed, link.store.append

        def tapped_feed(data):
            self._reading = time.time()
            return feed(data)

        def tapped_append(shoe_id, seq, *args, **kwargs):
            self.read_at[seq] = self._reading
            self.append_at[seq] = time.time()
            out = append(shoe_id, seq, *args, **kwargs)
            self.commit_at[seq] = time.time()
            return out

        link.feed = tapped_feed
        link.store.append = tapped_append


def card_stages(emu, taps, lines, written_at, seqs):
    """{stage: [seconds per card]} for the card events ``seqs`` of the dealer
    lines ``lines`` (indices, written at ``written_at``, same order); a card
    missing a stamp (its frame was resent, so its first pass is not the one
    stored) is left out of every stage."""
    out = {name: [] for name in STAGES + ("ack", "total")}
    for i, wrote, seq in zip(lines, written_at, seqs):
        taken = emu.taken_at[i] if i < len(emu.taken_at) else None
        frame = emu.out.seen.get((b"E", seq))
        read = taps.read_at.get(seq)
        begin = taps.append_at.get(seq)
        done = taps.commit_at.get(seq)
        if None in (taken, frame, read, begin, done) or not wrote <= frame <= read:
            continue
        taken = min(taken, frame)  # the dealer thread may read its ACK after the frame left
        acked = emu.back.seen.get((b"A", seq))
        for name, value in zip(STAGES + ("total",), (taken - wrote, frame - taken, read - frame,
                                                     begin - read, done - begin, done - wrote)):
            out[name].append(value)
        if acked is not None and acked >= done:
            out["ack"].append(acked - done)
    return out


def whereabouts(emu, threaded):
    """Where a table's missing lines are: how far the shoe sent and the
    acks came back (read at the relay), what the bridge stored and counted,
    and whether the VM still runs. A line the shoe never sent is in the shoe;
    one sent and not stored was refused or lost on the line (the counts say
    which); one stored but not counted would be the bench's own error."""
    sent = max((seq for kind, seq in emu.out.seen if kind == b"E"), default=0)
    acked = max((seq for kind, seq in emu.back.seen if kind == b"A"), default=0)
    link = threaded.bridge.link
    stats = ", ".join("%s %d" % kv for kv in sorted(link.stats.items()) if kv[1])
    alive = emu.proc is not None and emu.proc.poll() is None
    return ("the shoe sent events up to seq %d, acks reached it up to %d; the bridge stored through %s "
            "(%s), state %s; VM %s" % (sent, acked, link.last_stored, stats or "no counts", link.state,
                                       "running" if alive else "stopped (%s)" % emu.stderr_path))


def merge(into, more):
    for name, values in more.items():
        into.setdefault(name, []).extend(values)
    return into


def report(stages, percentile):
    """Lines: each stage's p50 and p99, then what the slowest 1 % of cards
    spent in each stage (the p99's make-up)."""
    total = stages.get("total") or []
    if not total:
        return ["  stages: no card with every stamp"]
    lines = []
    for name in STAGES + ("ack",):
        values = stages[name]
        if values:
            lines.append("  stage %-8s p50 %6.2f ms  p99 %6.2f ms" % (
                name, 1000 * percentile(values, 50), 1000 * percentile(values, 99)))
    cut = percentile(total, 99)
    slow = [i for i, t in enumerate(total) if t >= cut]
    share = ", ".join("%s %.2f" % (name, 1000 * sum(stages[name][i] for i in slow) / len(slow))
                      for name in STAGES)
    lines.append("  slowest 1%% of %d cards (>= %.2f ms), mean ms per stage: %s" % (len(total), 1000 * cut, share))
    return lines


def _thread_cpu(thread):
    """CPU seconds a live thread of this process has run (its own clock)."""
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _process_cpu(proc):
    """CPU seconds of a child process (user + system, its own, not its
    children's), from /proc; 0 for one that is gone or never started."""
    if proc is None:
        return 0.0
    try:
        with open("/proc/%d/stat" % proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Costs:
    """CPU of each part of a run between ``__init__`` and ``stop``: the
    bridge threads (their own clocks: decoding, checks, SQLite, acks), the
    shoes' VMs, the pit's store writer when the tables share one
    (host_tools/pit/groupcommit.py, a process), and the rest of this
    process (the relays that stand for the cables, the simulated dealers).
    Started once every table has booted, so boots are not counted."""

    def __init__(self, threaded_bridges, emulators, committer=None):
        self.bridges = threaded_bridges
        self.emus = emulators
        self.committer = committer
        self.start = self._read()

    def _read(self):
        writer = self.committer.proc if self.committer is not None else None
        return {"bridge": sum(_thread_cpu(b.thread) for b in self.bridges),
                "vm": sum(_process_cpu(e.proc) for e in self.emus),
                "writer": _process_cpu(writer),
                "process": time.process_time(),
                "events": sum(len(b.events) for b in self.bridges)}

    def stop(self):
        self.end = self._read()

    def per_event(self):
        """Microseconds of CPU per stored event of each part, or None when
        nothing was stored."""
        d = {k: self.end[k] - self.start[k] for k in self.start}
        if d["events"] <= 0:
            return None
        us = 1e6 / d["events"]
        return {"bridge": d["bridge"] * us, "vm": d["vm"] * us, "writer": d["writer"] * us,
                "rig": (d["process"] - d["bridge"]) * us, "events": d["events"]}


def cost_line(runs):
    """One line: the median over runs of each part's CPU per stored event."""
    if not runs:
        return "  CPU per stored event: not measured (no run dealt its whole shoe)"
    med = {k: statistics.median(r[k] for r in runs) for k in ("bridge", "vm", "writer", "rig")}
    writer = ", the store writer %.0f" % med["writer"] if any(r["writer"] for r in runs) else ""
    return ("  CPU per stored event (us, median of %d runs): bridges %.0f%s, shoe VMs %.0f, "
            "relays and dealers %.0f" % (len(runs), med["bridge"], writer, med["vm"], med["rig"]))
