"""`shoe bench pit`: how many tables one pit server keeps, card by card.

For each N, a real `shoe pit --config pit.toml` process serves N tables
whose shoes are light stand-ins (host_tools/sim/standin.py: the
firmware's own shoe session, game and link core under CPython, one per
table over a real pty, dealt seeded shoes at a dealer's pace of one card
every 0.5 s), and 8 page clients (another process) stay connected to its
/api/events, as the pit's screens are: over HTTPS (a self-signed pair, as
`shoe pit selfsigned` makes) and logged in as surveillance, the role that
is sent every card. Three processes, so the pit's own
cost is what the figures show; the CPU each one used is printed with them
(the pit's includes its store writer, a child process).

Measured per card dealt after a warm-up:

- card -> durable: from the moment the stand-in deals the card (its frame
  is written then, unless the shoe's window is full, which is counted) to
  the moment the pit's bridge saw its SQLite commit return (the ``time``
  the pit stamps on the event's SSE message, host_tools/pit/service.py);
- card -> ack: to the moment the stand-in holds a verified ack covering it
  (what the shoe waits for before it may forget the card);
- durable -> page: from that commit to the card's message arriving at each
  of the page clients.

card -> durable is also cut in two per card at the moment the pit's link
handed the verified card to its store writer (the store's ``received``):
dealt -> read (the stand-in's line, the pit's link loop reaching the port,
the frame's checks) and read -> durable (the group commit's round trip and
the loop reading its answer). The pit's own commit histogram (/metrics)
gives the commit stage again, as the pit sees it. Beside the pit, in the
same window, the bench times a 4 KiB write and fsync in the store's
directory every 50 ms: no card can be durable sooner than one fsync, and
the disk is shared, so that is each run's baseline (printed with the card
-> durable p99 as a multiple of it, and the load average).

After the dealing, the bench waits (``--drain``, bounded) until the pit's
store holds every card the stand-ins made and every page client has had
them: a card counts lost only when the store lacks it then (each such
table's shoe, its acked seq and link state are printed), a card stored but
never on a page counts in "page missing". If the stand-ins' own thread
falls a whole pace behind (a starved bench process), the missed dealer
actions are skipped and counted, never dealt in a burst.

A table passes when card -> durable p99 <= 20 ms and durable -> page p99 <=
250 ms with no card lost; the largest N that passes is printed. Every figure
is the median over ``--runs`` runs (per-run values in brackets): the
machine is shared and noisy, so rerun and compare medians.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from host_tools import vm
from host_tools.qa.bench import pitprofile
from host_tools.qa.bench.bridge import percentile
from host_tools.qa.bench.fsyncfloor import FsyncFloor
from host_tools.sim import standin

DURABLE_P99_MS = 20.0
PAGE_P99_MS = 250.0
DRAIN_MAX_S = 180.0  # after the dealing stops: the store, then the page, may take this long at most


# -- the page clients (their own process) ----------------------------------------

BENCH_USER = "bench"


def clients_main(argv):
    """``URL N OUT RUNDIR``: log in (the password and certificate in RUNDIR),
    keep N SSE clients on URL until SIGTERM, then write what arrived to OUT:
    the commit stamp of every card message, and per client when each card
    arrived."""
    url, n, out, rundir = argv[0], int(argv[1]), argv[2], argv[3]
    return asyncio.run(_clients(url, n, out, rundir))


async def _login(session, url, rundir, ssl_context):
    with open(os.path.join(rundir, "bench.password")) as f:
        password = f.read().strip()
    base = url.rsplit("/api/", 1)[0]
    async with session.post(base + "/api/login", json={"user": BENCH_USER, "password": password},
                            headers={"Origin": base}, ssl=ssl_context) as resp:
        if resp.status != 200:
            raise RuntimeError("bench login: %s %s" % (resp.status, await resp.text()))
        return (await resp.json())["token"]


async def _clients(url, n, out, rundir):
    import ssl

    import aiohttp

    ssl_context = ssl.create_default_context(cafile=os.path.join(rundir, "tls", "pit.crt"))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    commits = {}
    arrivals = [dict() for _ in range(n)]
    ended = []
    ready = []

    async def one(i, session, token):
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None), ssl=ssl_context,
                               headers={"Authorization": "Bearer " + token}) as resp:
            seen = arrivals[i]
            while True:
                line = await resp.content.readline()
                if not line:
                    ended.append(i)
                    return
                if line.startswith(b": connected"):
                    ready.append(i)
                    if len(ready) == n:
                        print("ready", flush=True)
                    continue
                if not line.startswith(b"data: {\"type\":\"event\""):  # view/sse.py's compact JSON
                    continue
                now = time.time()
                message = json.loads(line[6:])
                if message["event"].get("type") != "card":
                    continue
                key = "%s %d" % (message["table"], message["seq"])
                seen[key] = now
                commits[key] = message["time"]

    async def progress():
        """What the slowest client has seen, in OUT.seen, for the bench to
        wait on before it stops the clients (a count, rewritten)."""
        while True:
            with open(out + ".seen.tmp", "w") as f:
                f.write("%d" % min(len(a) for a in arrivals))
            os.replace(out + ".seen.tmp", out + ".seen")
            await asyncio.sleep(0.2)

    async with aiohttp.ClientSession() as session:
        token = await _login(session, url, rundir, ssl_context)
        tasks = [asyncio.create_task(one(i, session, token)) for i in range(n)]
        tasks.append(asyncio.create_task(progress()))
        await stop.wait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    with open(out, "w") as f:
        json.dump({"commits": commits, "arrivals": arrivals, "ended": ended}, f)
    return 0


# -- the pit's own commit histogram ------------------------------------------------------

COMMIT_METRIC = "shoe_commit_latency_seconds_bucket"


class CommitHistogram:
    """The pit's histogram of an event's append until durable (one group
    commit, host_tools/view/metrics.py), read from its /metrics page as the
    bench's surveillance login sees it. Two readings bracket the measured
    window; their difference is the commit stage of card -> durable, so the
    rest (the stand-in's line, the table thread's turn, its checks) is
    what the total adds to it."""

    def __init__(self, base, rundir):
        import ssl
        import urllib.request

        self.base = base
        self.context = ssl.create_default_context(cafile=os.path.join(rundir, "tls", "pit.crt"))
        with open(os.path.join(rundir, "bench.password")) as f:
            password = f.read().strip()
        request = urllib.request.Request(
            base + "api/login", data=json.dumps({"user": BENCH_USER, "password": password}).encode(),
            headers={"Content-Type": "application/json", "Origin": base.rstrip("/")})
        with urllib.request.urlopen(request, context=self.context, timeout=30) as resp:
            self.token = json.load(resp)["token"]

    def read(self):
        """{bucket bound in s (inf last): events at or under it} now."""
        import urllib.request

        request = urllib.request.Request(self.base + "metrics", headers={"Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(request, context=self.context, timeout=30) as resp:
            text = resp.read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith(COMMIT_METRIC + "{"):
                bound = line.split('le="', 1)[1].split('"', 1)[0]
                out[float("inf") if bound == "+Inf" else float(bound)] = float(line.rsplit(" ", 1)[1])
        return out


def bucket_percentile(before, after, p):
    """The smallest bucket bound holding ``p`` % of the events counted
    between two readings (seconds; inf past the last bound), or None."""
    bounds = sorted(after)
    total = after[bounds[-1]] - before.get(bounds[-1], 0) if bounds else 0
    if total <= 0:
        return None
    for bound in bounds:
        if after[bound] - before.get(bound, 0) >= total * p / 100.0:
            return bound
    return bounds[-1]


# -- one run ------------------------------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_s(pid):
    """User + system CPU seconds a process and its live children (the
    pit's store writer, host_tools/pit/groupcommit.py) have used so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0  # it has just exited
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for child in _children(pid):
        total += _cpu_s(child)
    return total


def _parts(pid):
    """{part of the pit: CPU seconds so far}: its own process, its store
    writer and its edge monitor (children named by their module)."""
    out = {"pit process": _cpu_s(pid) - sum(_cpu_s(c) for c in _children(pid))}
    for child in _children(pid):
        try:
            with open("/proc/%d/cmdline" % child, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        name = ("store writer" if b"groupcommit" in cmd else "edge monitor" if b"edgeproc" in cmd
                else "other children")
        out[name] = out.get(name, 0.0) + _cpu_s(child)
    return out


def _children(pid):
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    out = []
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _py_spy():
    """py-spy beside this Python (the venv), else on PATH: a profiler for
    `--profile` only, so not a dependency of the project."""
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return beside if os.path.exists(beside) else "py-spy"


def write_pit(rundir, tables, port):
    """pit.toml for the stand-ins, with their keys in 0600 files, a TLS pair
    and a surveillance login for the page clients (its password 0600 too)."""
    import secrets

    from host_tools.pit import tls
    from host_tools.pit import users as users_mod

    keys = os.path.join(rundir, "keys")
    os.makedirs(keys, mode=0o700)
    cert, tls_key = os.path.join(rundir, "tls", "pit.crt"), os.path.join(rundir, "tls", "pit.key")
    tls.selfsigned(cert, tls_key, ["127.0.0.1"])
    password = secrets.token_urlsafe(18)
    fd = os.open(os.path.join(rundir, "bench.password"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(password)
    users_mod.add(os.path.join(rundir, "users.json"), BENCH_USER, "surveillance", password)
    lines = ['store = "pit.db"', "[web]", 'host = "127.0.0.1"', "port = %d" % port,
             'cert = "%s"' % cert, 'key = "%s"' % tls_key]
    for i, t in enumerate(tables):
        key_file = os.path.join(keys, "%s.key" % t.shoe_id)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(t.key)
        lines += ["[[table]]", 'name = "T%03d"' % (i + 1), 'port = "%s"' % t.path,
                  'key_file = "%s"' % key_file, 'shoe = "%s"' % t.shoe_id]
    path = os.path.join(rundir, "pit.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _wait(predicate, timeout, what, procs=()):
    end = time.monotonic() + timeout
    while not predicate():
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError("%s exited with %s while waiting for %s" % (p.args[3], p.returncode, what))
        if time.monotonic() > end:
            raise RuntimeError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.05)


def _line(proc, timeout, what):
    """The first stdout line of ``proc``, or RuntimeError naming ``what``."""
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        raise RuntimeError("no line from %s within %.0f s" % (what, timeout))
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("%s exited (%s) without a line" % (what, proc.wait()))
    return line.strip()


def _stored_cards(store_path):
    """{(shoe, seq): when the pit handed it to its store writer} of every
    card event the pit's store holds now (``received``: the table's link
    had read and verified the frame then, host_tools/pit/groupcommit.py)."""
    import sqlite3
    try:
        con = sqlite3.connect("file:%s?mode=ro" % store_path, uri=True, timeout=5)
    except sqlite3.OperationalError:
        return {}
    try:
        return {(shoe, seq): received for shoe, seq, received in
                con.execute("SELECT shoe_id, seq, received FROM events WHERE type = 'card'")}
    except sqlite3.OperationalError:
        return {}
    finally:
        con.close()


def _stored_rounds(store_path, t_from, t_to):
    """How many rounds ended (a stored ``result``) in [t_from, t_to): what the
    edge monitor prices, once per round and table."""
    import sqlite3
    con = sqlite3.connect("file:%s?mode=ro" % store_path, uri=True, timeout=5)
    try:
        return con.execute("SELECT count(*) FROM events WHERE type = 'result' AND received >= ? AND received < ?",
                           (t_from, t_to)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _seen(out):
    try:
        with open(out + ".seen") as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


def _drain(tables, store_path, out, before, clients, bound=DRAIN_MAX_S):
    """After the dealing stops: wait (bounded) until the pit's store holds
    every card the stand-ins made, then until the slowest page client has
    had every card stored since the clients connected (``before``: the
    cards stored then). Under load a card can be late by seconds; the bench
    stops counting only when the pit has it or the bound is reached, so a
    card counted lost is one the store never took, not one still in
    flight. Returns the stored cards."""
    made = {(t.shoe_id, seq) for t in tables for seq, _at in t.card_seqs}
    end = time.monotonic() + bound
    while True:
        stored = _stored_cards(store_path)
        if made <= stored.keys() or time.monotonic() > end:
            break
        time.sleep(0.1)
    while (_seen(out) < len(stored) - before and time.monotonic() < end
           and clients.poll() is None):
        time.sleep(0.1)
    return stored


def one_run(n, seconds, nclients, warm, workdir, seed, profile=None, irregularities=0.03,
            drain=DRAIN_MAX_S):
    """Serve ``n`` stand-in tables for warm + ``seconds`` s; return the figures."""
    rundir = tempfile.mkdtemp(prefix="n%d-" % n, dir=workdir)
    standin.room_for(n)
    tables = [standin.StandIn("P%03d" % (i + 1), seed=seed + 100 * i, irregularities=irregularities,
                              workdir=rundir) for i in range(n)]
    floor = standin.Floor(tables, seed=seed)
    pit = clients = spy = None
    err = open(os.path.join(rundir, "pit.stderr"), "w")
    try:
        config = write_pit(rundir, tables, _free_port())
        floor.start()
        pit = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "pit", "--config", config],
                               stdout=subprocess.PIPE, stderr=err, text=True, cwd=vm.ROOT)
        url = _line(pit, 60, "shoe pit").rsplit(" ", 1)[1] + "api/events"
        out = os.path.join(rundir, "clients.json")
        clients = subprocess.Popen(
            [sys.executable, "-c", "import sys; from host_tools.qa.bench.pit import clients_main; "
             "sys.exit(clients_main(sys.argv[1:]))", url, str(nclients), out, rundir],
            stdout=subprocess.PIPE, stderr=err, text=True, cwd=vm.ROOT)
        _line(clients, 30, "the page clients")
        store_path = os.path.join(rundir, "pit.db")
        before = len(_stored_cards(store_path))
        _wait(floor.all_up, 30 + n / 4, "every stand-in's hello to be acked", (pit,))
        start = time.time()
        floor.start_dealing(until=start + warm + seconds)
        time.sleep(warm)
        try:
            histogram = CommitHistogram(url.rsplit("api/", 1)[0], rundir)
            commits0 = histogram.read()
        except (OSError, ValueError, KeyError) as e:
            histogram, commits0 = None, "the pit's /metrics: %s" % e
        cpu0 = {p: _cpu_s(p.pid) for p in (pit, clients)}
        parts0 = _parts(pit.pid)
        self0 = time.process_time()
        floor_fsync = FsyncFloor(rundir)
        load = os.getloadavg()[0]
        if profile:
            spy = subprocess.Popen([_py_spy(), "record", "--pid", str(pit.pid), "--duration",
                                    str(int(seconds)), "--rate", "100", "--format", "raw", "--threads", "--gil",
                                    "--output", os.path.join(profile, "pit-%d.txt" % n), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        fsyncs = floor_fsync.close()
        parts = {k: (v - parts0.get(k, 0.0)) / seconds for k, v in _parts(pit.pid).items()}
        cpu = {name: (_cpu_s(p.pid) - cpu0[p]) / seconds for name, p in (("pit", pit), ("clients", clients))}
        cpu["stand-ins"] = (time.process_time() - self0) / seconds
        commits = commits0
        if histogram is not None:
            try:
                commits = (commits0, histogram.read())
            except (OSError, ValueError) as e:
                commits = "the pit's /metrics: %s" % e
        floor.stop_dealing()
        drained = time.monotonic()
        stored = _drain(tables, store_path, out, before, clients, drain)
        drained = time.monotonic() - drained
        if clients.poll() is not None:
            raise RuntimeError("the page clients exited with %s" % clients.returncode)
        clients.send_signal(signal.SIGTERM)
        clients.wait(30)
        with open(out) as f:
            seen = json.load(f)
        figures = _figures(tables, seen, start + warm, start + warm + seconds, nclients, stored)
        figures["cpu"] = cpu
        figures["fsync"] = fsyncs
        figures["parts"] = parts
        figures["seconds"] = seconds
        figures["rounds"] = _stored_rounds(store_path, start + warm, start + warm + seconds)
        figures["load"] = (load + os.getloadavg()[0]) / 2
        figures["commits"] = commits
        figures["unstored"] = _unstored(tables, stored)
        figures["drain_s"] = drained
        figures["skipped"] = floor.skipped
        figures["stats"] = {k: sum(t.stats[k] for t in tables) for k in tables[0].stats}
        return figures
    finally:
        if spy is not None:
            try:   # py-spy writes its file after the pit's sampling; on a loaded machine it is slow
                spy.wait(60 + seconds)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
        for p in (clients, pit):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        floor.close()
        err.close()


def _commit_line(commits):
    """The commit stage of the run's window, from the pit's histogram."""
    if isinstance(commits, str):
        return "commit stage: not read (%s)" % commits
    p50, p99 = (bucket_percentile(commits[0], commits[1], p) for p in (50, 99))
    if p50 is None:
        return "commit stage: no commits in the window"
    return ("commit stage (append -> durable, the pit's histogram over the window): p50 <= %s, p99 <= %s; "
            "the rest of card -> durable is the line and the link loop's turn"
            % tuple("%.0f ms" % (1000 * b) if b != float("inf") else "over the last bucket" for b in (p50, p99)))


def _stage_line(fig):
    """card -> durable cut in two at the moment the pit handed the card to
    its store writer (the store's ``received``), per card; and the disk's
    fsync floor measured beside it (FsyncFloor), with the load average."""
    return ("stages per card, p50 / p99: dealt -> read and verified by the pit (the stand-in's line, "
            "the pit's link loop) %.1f / %.1f ms; -> durable (the commit round trip, the loop reading "
            "its answer) %.1f / %.1f ms\n"
            "    baseline, same window: one 4 KiB fsync on this disk p50 %.1f / p99 %.1f ms (%d); "
            "card->durable p99 = x%.1f the fsync p99; load average %.1f"
            % (_ms(fig["read"], 50), _ms(fig["read"], 99), _ms(fig["commit_stage"], 50),
               _ms(fig["commit_stage"], 99), _ms(fig["fsync"], 50), _ms(fig["fsync"], 99),
               len(fig["fsync"]), _ms(fig["durable"], 99) / _ms(fig["fsync"], 99)
               if fig["fsync"] and fig["durable"] else float("nan"), fig["load"]))


def _unstored(tables, stored):
    """Where the cards the store does not hold are, table by table: each
    shoe's newest event, what the pit acked, whether its link is up, how
    many events wait only in its journal (spilled past the outbox) and
    the store's newest seq of the shoe."""
    out = []
    for t in tables:
        missing = [seq for seq, _at in t.card_seqs if (t.shoe_id, seq) not in stored]
        if not missing:
            continue
        s = t.session
        newest = max((q for shoe, q in stored if shoe == t.shoe_id), default=0)
        out.append({"shoe": t.shoe_id, "missing": len(missing), "first": missing[0], "seq": s.seq,
                    "acked": s.acked, "up": bool(s.up), "spilled": bool(s.spilled),
                    "stored_card_max": newest, "hellos": t.stats["hellos"],
                    "resends": t.stats["resends"]})
    return out


def _figures(tables, seen, t_from, t_to, nclients, stored):
    """Latencies (seconds) of the cards dealt in [t_from, t_to). ``lost``:
    made by a stand-in, not in the pit's store after the drain (the
    product lost it); ``page_missing``: stored, but a page client never
    had it (each client counts)."""
    commits, arrivals = seen["commits"], seen["arrivals"]
    durable, acked, page, read, commit_stage = [], [], [], [], []
    cards = lost = late_page = 0
    for i, t in enumerate(tables):
        name = "T%03d" % (i + 1)
        for seq, dealt in t.card_seqs:
            if not t_from <= dealt < t_to:
                continue
            cards += 1
            if (t.shoe_id, seq) not in stored:
                lost += 1
                continue
            key = "%s %d" % (name, seq)
            commit = commits.get(key)
            if commit is None:
                late_page += nclients   # stored, yet no page client had it
                continue
            durable.append(commit - dealt)
            read.append(stored[(t.shoe_id, seq)] - dealt)
            commit_stage.append(commit - stored[(t.shoe_id, seq)])
            if seq in t.acked_at:
                acked.append(t.acked_at[seq] - dealt)
            for got in arrivals:
                if key in got:
                    page.append(got[key] - commit)
                else:
                    late_page += 1
    return {"cards": cards, "lost": lost, "page_missing": late_page, "ended": seen["ended"],
            "durable": durable, "acked": acked, "page": page, "read": read, "commit_stage": commit_stage}


# -- the report ---------------------------------------------------------------------

def _ms(values, p):
    return 1000 * percentile(values, p) if values else float("nan")


def summarize(runs):
    """Median over runs of each run's percentiles, and the runs' own values."""
    out = {}
    for what in ("durable", "acked", "page", "read", "commit_stage", "fsync"):
        for p in (50, 99):
            per_run = [_ms(r[what], p) for r in runs]
            out["%s_p%d" % (what, p)] = (statistics.median(per_run), per_run)
    out["load"] = [r["load"] for r in runs]
    out["cards"] = sum(r["cards"] for r in runs)
    out["lost"] = sum(r["lost"] for r in runs)
    out["page_missing"] = sum(r["page_missing"] for r in runs)
    out["ended"] = sum(len(r["ended"]) for r in runs)
    for name in ("pit", "stand-ins", "clients"):
        out["cpu_" + name] = statistics.median(r["cpu"][name] for r in runs)
    out["kcard"] = {part: statistics.median(_per_kcard(r["parts"].get(part, 0.0), r["seconds"], r["cards"])
                                            for r in runs)
                    for part in sorted({p for r in runs for p in r["parts"]})}
    out["held"] = sum(r["stats"]["held"] for r in runs)
    out["resends"] = sum(r["stats"]["resends"] for r in runs)
    out["bad_acks"] = sum(r["stats"]["bad_acks"] for r in runs)
    out["passes"] = (out["durable_p99"][0] <= DURABLE_P99_MS and out["page_p99"][0] <= PAGE_P99_MS
                     and out["lost"] == 0 and out["page_missing"] == 0 and out["ended"] == 0
                     and out["bad_acks"] == 0)
    return out


def _per_kcard(share, seconds, cards):
    """CPU seconds per 1,000 cards dealt, from a share of a core over the
    window: what the load moves least, so the figure to compare changes by."""
    return 1000.0 * share * seconds / cards if cards else float("nan")


def _runs(pair):
    return "%.1f [%s]" % (pair[0], " ".join("%.1f" % v for v in pair[1]))


def print_table(rows):
    print("\n%5s %6s  %-22s %-22s %-22s %-22s %s" % (
        "N", "cards", "card->durable p50", "card->durable p99", "card->ack p99", "durable->page p99",
        "pit CPU / lost / verdict"))
    for n, s in rows:
        print("%5d %6d  %-22s %-22s %-22s %-22s %3.0f%% / %d / %s" % (
            n, s["cards"], _runs(s["durable_p50"]), _runs(s["durable_p99"]), _runs(s["acked_p99"]),
            _runs(s["page_p99"]), 100 * s["cpu_pit"], s["lost"] + s["page_missing"],
            "ok" if s["passes"] else "MISSES"))
    print("\nstages of card->durable p99 (median of the runs' p99s, ms): dealt -> read and verified by the pit "
          "| -> durable | baseline: one fsync on this disk, same windows | load average")
    for n, s in rows:
        print("%5d  %-22s | %-22s | %-22s | %s" % (n, _runs(s["read_p99"]), _runs(s["commit_stage_p99"]),
                                              _runs(s["fsync_p99"]), " ".join("%.1f" % v for v in s["load"])))
    print("\npit CPU seconds per 1,000 cards by part (median of the runs)")
    for n, s in rows:
        print("%5d  %s" % (n, ", ".join("%s %.2f" % kv for kv in s["kcard"].items())))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shoe bench pit", description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default="16,64,128,256",
                        help="comma-separated table counts (default 16,64,128,256)")
    parser.add_argument("--seconds", type=float, default=15.0,
                        help="measured seconds per run, after the warm-up (default 15)")
    parser.add_argument("--warm", type=float, default=3.0, help="warm-up seconds, not measured (default 3)")
    parser.add_argument("--clients", type=int, default=8, help="page clients on /api/events (default 8)")
    parser.add_argument("--runs", type=int, default=3, help="runs per table count (default 3)")
    parser.add_argument("--seed", type=int, default=7, help="the dealer's first seed (default 7)")
    parser.add_argument("--profile", metavar="DIR",
                        help="also sample the pit with py-spy (pip install py-spy) into DIR/pit-N.txt, one "
                        "file per table count, and print the share of its Python time per stage")
    parser.add_argument("--drain", type=float, default=DRAIN_MAX_S,
                        help="after the dealing, wait at most this long for the store and the pages to "
                        "have every card; a card the store lacks then counts lost (default %.0f)" % DRAIN_MAX_S)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (stores, logs)")
    args = parser.parse_args(argv)
    try:
        counts = [int(x) for x in args.tables.split(",") if x.strip()]
    except ValueError:
        parser.error("--tables takes numbers separated by commas, not %r" % args.tables)
    if not counts or min(counts) < 1 or args.seconds <= 0 or args.runs < 1 or args.clients < 1:
        parser.error("--tables, --seconds, --runs and --clients must be positive")
    if args.profile:
        try:  # py-spy writes its file into DIR but does not make DIR: a missing one lost the whole profile
            os.makedirs(args.profile, exist_ok=True)
        except OSError as e:
            parser.error("--profile %s: %s" % (args.profile, e.strerror or e))
    workdir = tempfile.mkdtemp(prefix="shoe-bench-pit-")
    print("stand-in shoes: the firmware's shoe session under CPython per table (host_tools/sim/"
          "shoestream.py), seeded shoes from seed %d, one dealer action every %.1f s per table over ptys"
          % (args.seed, standin.PACE_S), flush=True)
    print("%d CPUs; %d page clients; %d run(s) of %.0f s (+%.0f s warm-up) per N; store %s"
          % (os.cpu_count() or 0, args.clients, args.runs, args.seconds, args.warm, workdir), flush=True)
    rows = []
    rc = 0
    for n in counts:
        runs = []
        for r in range(args.runs):
            try:
                fig = one_run(n, args.seconds, args.clients, args.warm, workdir, args.seed + r,
                              args.profile, drain=args.drain)
            except RuntimeError as e:
                print("  N=%d run %d: ERROR %s" % (n, r + 1, e), flush=True)
                rc = 1
                continue
            runs.append(fig)
            print("  N=%d run %d: %d cards, durable p50 %.1f p99 %.1f ms, ack p99 %.1f ms, page p50 %.1f "
                  "p99 %.1f ms; CPU pit %.0f%% stand-ins %.0f%% clients %.0f%%; lost %d, page missing %d"
                  % (n, r + 1, fig["cards"], _ms(fig["durable"], 50), _ms(fig["durable"], 99),
                     _ms(fig["acked"], 99), _ms(fig["page"], 50), _ms(fig["page"], 99),
                     100 * fig["cpu"]["pit"], 100 * fig["cpu"]["stand-ins"], 100 * fig["cpu"]["clients"],
                     fig["lost"], fig["page_missing"]), flush=True)
            print("    %s" % _commit_line(fig["commits"]), flush=True)
            print("    %s" % _stage_line(fig), flush=True)
            print("    pit CPU by part, share of a core (CPU seconds per 1,000 cards): %s" % ", ".join(
                "%s %.0f%% (%.2f s)" % (k, 100 * v, _per_kcard(v, args.seconds, fig["cards"]))
                for k, v in sorted(fig["parts"].items())), flush=True)
            edge, total = fig["parts"].get("edge monitor", 0.0), sum(fig["parts"].values())
            print("    edge monitor: %.2f ms of CPU per round (%d rounds ended in the window), %.0f%% of the pit's CPU"
                  % (1000.0 * edge * args.seconds / fig["rounds"] if fig["rounds"] else float("nan"),
                     fig["rounds"], 100.0 * edge / total if total else float("nan")), flush=True)
            print("    drain: %.1f s after the dealing stopped until the store and the pages had every card"
                  " (bound %.0f s); dealer actions skipped, the stand-ins' thread a pace behind: %d"
                  % (fig["drain_s"], args.drain, fig["skipped"]), flush=True)
            for u in fig["unstored"][:6]:
                print("    not in the store: %(shoe)s %(missing)d cards from seq %(first)d; the shoe at seq"
                      " %(seq)d, acked %(acked)d, link %(up)s, spilled %(spilled)s, %(hellos)d hellos,"
                      " %(resends)d resends; the store's newest card %(stored_card_max)d" % u, flush=True)
            if len(fig["unstored"]) > 6:
                print("    ... %d tables in all" % len(fig["unstored"]), flush=True)
            if args.profile:
                print("\n".join(pitprofile.report(os.path.join(args.profile, "pit-%d.txt" % n))), flush=True)
        if runs:
            rows.append((n, summarize(runs)))
    if not rows:
        return 1
    print_table(rows)
    good = [n for n, s in rows if s["passes"]]
    if good:
        print("largest N with card->durable p99 <= %.0f ms and page p99 <= %.0f ms: %d"
              % (DURABLE_P99_MS, PAGE_P99_MS, max(good)))
    else:
        print("no N met card->durable p99 <= %.0f ms and page p99 <= %.0f ms" % (DURABLE_P99_MS, PAGE_P99_MS))
    if not args.keep:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return rc
