"""`shoe bench link --replay N`: what a stored card costs the bridge itself,
without the rig around it.

The latencies of `shoe bench link` swing with whatever else the machine
runs, and so does the CPU of a thread that sleeps between cards. Here one
shoe is dealt once through the emulator and the event frames its bridge
read are kept; each of N repetitions feeds them, one frame per read as a
live bridge mostly gets them, into a fresh HostLink on a fresh store (real
SQLite, synchronous=FULL) and reads the thread's CPU clock. It also counts,
once, the Python and C calls and the SQL statements per event (cProfile),
which no load moves at all.

With ``pit`` the link writes as a pit's table thread does: through a
TableStore to a group committer process of its own (host_tools/pit/
groupcommit.py). The thread's CPU is then the table thread's share of a
card in `shoe bench pit`; the committer's CPU is read from /proc and
reported beside it.

The replayed link is put in the state a verified hello leaves (the shoe's
chain starting at seq 1, a connection nonce for the acks): a hello cannot be
replayed, since it answers a fresh challenge.
"""

import cProfile
import os
import pstats
import shutil
import statistics
import tempfile
import time

from host_tools.pit.groupcommit import GroupCommit, TableStore
from host_tools.protocol.hostlink import HostLink
from host_tools.qa.bench import linkstages
from host_tools.store import db

from firmware.link import auth

NONCE = b"0123456789abcdef"


def capture(seed, table_class):
    """(key, shoe id, event frames) of one full shoe dealt in the emulator
    by ``table_class`` (bench/bridge.py's Table, which imports this module)."""
    workdir = tempfile.mkdtemp(prefix="shoe-bench-replay-")
    table = table_class(workdir, "R00", os.path.join(workdir, "pit.db"), seed)
    chunks = []
    link = table.bridge.bridge.link
    feed = link.feed

    def keep(data):
        chunks.append(bytes(data))
        return feed(data)

    link.feed = keep
    try:
        table.feeder.wait_boot()
        table.feeder.finish()
    finally:
        table.close()
        shutil.rmtree(workdir, ignore_errors=True)
    frames = [line + b"\n" for line in b"".join(chunks).split(b"\n") if line.startswith(b"$E")]
    return table.emu.key, table.emu.shoe_id, frames


def _replay(key, shoe_id, frames, directory, pit=False):
    """Feed ``frames`` into a fresh link and store; (the thread's CPU
    seconds, the committer's CPU seconds or None)."""
    path = os.path.join(directory, "replay.db")
    committer = GroupCommit(path) if pit else None
    store = TableStore(db.Store(path), committer) if pit else db.Store(path)
    committed = None
    try:
        link = HostLink(store, key, name="replay", shoe_id=shoe_id, send=lambda data: True)
        link.attached = True
        link.state = "up"
        link.hello = {"acked": 0, "chain": auth.ZERO_MAC.decode(), "nonce": NONCE}
        if pit:
            committed = linkstages._process_cpu(committer.proc)
        started = time.thread_time()
        for one in frames:
            link.feed(one)
        spent = time.thread_time() - started
        if pit:
            committed = linkstages._process_cpu(committer.proc) - committed
        if link.stats["stored"] + link.stats["duplicates"] != len(frames):
            raise RuntimeError("the replay stored %d of %d frames (%s)" % (link.stats["stored"], len(frames),
                                                                          link.stats))
        return spent, committed
    finally:
        store.close()
        if committer is not None:
            committer.close()
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))


def _counts(key, shoe_id, frames, directory, pit):
    """(calls, SQL statements) per frame, counted by cProfile (in this
    thread: with ``pit`` the committer's statements are not among them)."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        _replay(key, shoe_id, frames, directory, pit)
    finally:
        profile.disable()
    stats = pstats.Stats(profile).stats
    sql = sum(v[1] for k, v in stats.items() if k[2] == "<method 'execute' of 'sqlite3.Connection' objects>")
    calls = sum(v[1] for v in stats.values())
    return calls / len(frames), sql / len(frames)


def main(reps, seed, table_class, pit=False):
    key, shoe_id, frames = capture(seed, table_class)
    directory = tempfile.mkdtemp(prefix="shoe-bench-replay-")
    try:
        _replay(key, shoe_id, frames, directory, pit)   # imports and caches warm
        loads = [os.getloadavg()[0]]
        runs = [_replay(key, shoe_id, frames, directory, pit) for _ in range(reps)]
        loads.append(os.getloadavg()[0])
        calls, sql = _counts(key, shoe_id, frames, directory, pit)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    spent = [thread * 1e6 / len(frames) for thread, _ in runs]
    print("the %s own work per event, one shoe's %d event frames replayed %d times into a fresh "
          "link and store%s (seed %d):" % ("pit table thread's" if pit else "bridge's", len(frames), reps,
                                           " through the pit's group committer" if pit else "", seed))
    print("  CPU per event: median %.0f us, least %.0f us (load %.1f -> %.1f)"
          % (statistics.median(spent), min(spent), loads[0], loads[1]))
    if pit:
        print("  the committer process's CPU per event: %.0f us (all runs, /proc clock ticks)"
              % (sum(c for _, c in runs) * 1e6 / (len(frames) * reps)))
    print("  per event: %.0f Python and C calls, %.1f SQL statements" % (calls, sql), flush=True)
    return 0
