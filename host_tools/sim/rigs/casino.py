"""A whole casino on one machine: a hub, one leaf node per pit, simulated
pits (host_tools/sim/simpit.py, one process each), two `shoe central`
processes and PostgreSQL. `shoe central demo`, `shoe soak casino` and the
tests drive it; every part can be killed and restarted by itself.

Everything runs with least privilege (docs/casino.md): the trial's
certificates (TLS on the client ports, the leaf links and PostgreSQL), an
NKEY per NATS identity with the permissions of host_tools/casino/access.py,
streams and the consumer made by the admin credential, SCRAM roles in
PostgreSQL (the consumers write, the view and verify read), and every
device registered. No secret is an argument of any process started here:
seeds and passwords are files (0600) that the argv names.

``domains=True`` is the leaf-buffer layout (each leaf has a JetStream
domain and its pit's stream; the hub's stream sources them), False the
hub-capture layout (plain leaves; the pit stores buffer). docs/casino.md
says what each does when the hub is away.
"""

import asyncio
import os
import signal
import subprocess
import sys
import time

from host_tools.sim.rigs import servers
from host_tools.sim import simtable
from host_tools.casino import access, secrets, trial as trial_mod, wire
from host_tools.central import setup
from host_tools.store import db


class Rig:
    def __init__(self, workdir, pits=2, tables=3, rate=5.0, events=0, domains=True,
                 casino="C1", consumers=2, fsync=False, chips=False, watch=True, pregen=0.0,
                 stages=False, partition=False, hub_nodes=1, replicas=1):
        self.dir = os.path.abspath(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.casino = casino
        self.domains = domains
        self.rate = rate
        self.events = events
        self.pits = ["P%d" % (i + 1) for i in range(pits)]
        self.shoes = {p: ["%s-%s-T%d" % (casino, p, t + 1) for t in range(tables)] for p in self.pits}
        self.keydir = os.path.join(self.dir, "keys")
        simtable.make_keys(self.keydir, [s for p in self.pits for s in self.shoes[p]])
        # chips: every shoe signs its checkpoints with a simulated secure
        # element whose public key is registered (sim/tablechips.py), and
        # verify_central checks them (no --mac-only)
        self.chipdir = os.path.join(self.dir, "chips") if chips else None
        self.public_keys = {}
        if chips:
            from host_tools.sim import tablechips
            self.public_keys = tablechips.provision(
                self.chipdir, [s for p in self.pits for s in self.shoes[p]])
        # partition: one durable consumer per pit (access.durable), consumer
        # i pulling pit i's (round robin when there are more consumers)
        self.partition = partition
        self.trial = trial_mod.make(os.path.join(self.dir, "trial"), casino, self.pits)
        t = self.trial
        tls = (t.cert, t.key, t.ca)
        # each leaf link authenticates with its own NKEY and may carry its
        # pit's traffic only (access.leaf_permissions)
        durables = [access.durable(p) for p in self.pits] if partition else [access.durable()]
        hub_users = [(t.nkeys["admin"], None),
                     (t.nkeys["central"], access.consumer_permissions(casino, durables))]
        hub_users += [(t.nkeys["leaf-" + p], access.leaf_permissions(casino, p, self.domain(p)))
                      for p in self.pits]
        # hub_nodes > 1: the hub is a NATS cluster of that many nodes on
        # loopback (routes over mutual TLS), pit i's leaf and consumer i on
        # node i (round robin); the casino stream keeps ``replicas`` copies
        routes = [servers.free_port() for _ in range(hub_nodes)] if hub_nodes > 1 else []
        self.hubs = [servers.Nats(self.dir, "hub" if n == 0 else "hub-%d" % (n + 1),
                                  leaf_port=servers.free_port(), domain="hub" if domains else None,
                                  tls=tls, authorization=access.authorization_block(hub_users),
                                  cluster=("hub", routes[n], routes[:n] + routes[n + 1:])
                                  if routes else None)
                     for n in range(hub_nodes)]
        self.hub = self.hubs[0]
        self.replicas = replicas
        self.leaves = {p: servers.Nats(
            self.dir, "leaf-" + p, hub_leaf_url=self.hubs[i % hub_nodes].leaf_url,
            domain=self.domain(p),
            jetstream=domains, tls=tls, remote_seed=secrets.read_secret(t.seed_file("leaf-" + p)),
            authorization=access.authorization_block([
                (t.nkeys["admin"], None), (t.nkeys["pit-" + p], access.pit_permissions(casino, p))]))
            for i, p in enumerate(self.pits)}
        # A plain leaf must not run JetStream: with JetStream and no domain
        # of its own it answers the pit's stream API itself and captures the
        # pit's events in a stream nobody consumes.
        self.pg = servers.Postgres(fsync=fsync, trial=t)
        self.pit_procs = {}
        self.consumer_procs = {}
        self.watch = watch
        self.watcher_proc = None
        self.n_consumers = consumers
        # each consumer's Prometheus /metrics (loopback; `shoe central --metrics-port`)
        self.metrics_ports = {i: servers.free_port() for i in range(consumers)}
        # pregen: the simulated pits take this many seconds of their shoes'
        # events before they deal (simpit --pregen); stages: each consumer
        # logs every message's stage stamps (consumer.STAGE_LOG_ENV)
        self.pregen = pregen
        self.stages = stages

    def domain(self, pit):
        return ("pit-%s" % pit).lower() if self.domains else None

    def store_path(self, pit):
        return os.path.join(self.dir, "%s.db" % pit)

    # -- processes -----------------------------------------------------------

    def auth(self, name, inbox=None):
        """A NATS credential of the trial (``admin``, ``central``, ``pit-P1``...)."""
        return secrets.NatsAuth(secrets.read_secret(self.trial.seed_file(name), "NATS seed"),
                                self.trial.ca, inbox)

    @property
    def writer_dsn(self):
        return self.pg.dsn_for(trial_mod.PG_WRITER)

    @property
    def reader_dsn(self):
        return self.pg.dsn_for(trial_mod.PG_READER)

    def setup(self):
        """The admin's part: pit streams, the casino stream and its
        consumer, the schema, the grants and every device in the registry."""
        admin = self.auth("admin")
        setup.db_setup(self.pg.dsn, trial_mod.PG_WRITER, trial_mod.PG_READER)
        setup.register(self.pg.dsn, [(shoe, self.casino, p, "T%d" % (i + 1), "shoe",
                                      self.public_keys[shoe].decode("ascii")
                                      if shoe in self.public_keys else None)
                                     for p in self.pits for i, shoe in enumerate(self.shoes[p])])
        sources = []
        if self.domains:
            for p in self.pits:
                asyncio.run(setup.pit_stream_setup(self.leaves[p].url, admin, self.casino, p,
                                                   self.domain(p)))
                sources.append((p, self.domain(p)))
        deadline = time.monotonic() + 20
        while True:   # the hub's stream API answers once it is up; retry a moment
            try:
                setup.run_nats(self.hub.url, admin, self.casino, sources,
                               self.pits if self.partition else (), self.replicas)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def start(self, pits=True):
        for hub in self.hubs:
            hub.start()
        for leaf in self.leaves.values():
            leaf.start()
        self.pg.start()
        self.setup()
        for pit in self.pits if pits else ():
            self.start_pit(pit)
        for i in range(self.n_consumers):
            self.start_consumer(i)
        if self.domains and self.watch:
            self.start_watcher()
        return self

    def start_watcher(self):
        """`shoe central watch` with the admin credential (leaf-buffer
        layout): the hub's sourcing of a pit restarts as soon as its link is
        back (central/sources.py)."""
        argv = [sys.executable, "-m", "host_tools.cli", "central", "watch", "--nats", self.hub.url,
                "--nats-seed", self.trial.seed_file("admin"), "--nats-ca", self.trial.ca,
                "--casino", self.casino]
        for pit in self.pits:
            argv += ["--source", "%s@%s" % (pit, self.domain(pit))]
        self.watcher_proc = self._spawn(argv, "watch.log")

    def start_pit(self, pit):
        argv = [sys.executable, "-m", "host_tools.sim.simpit", "--store", self.store_path(pit),
                "--keys", self.keydir, "--shoes", ",".join(self.shoes[pit]),
                "--nats", self.leaves[pit].url, "--nats-seed", self.trial.seed_file("pit-" + pit),
                "--nats-ca", self.trial.ca, "--casino", self.casino, "--pit", pit,
                "--rate", str(self.rate), "--events", str(self.events)]
        if self.domains:
            argv += ["--domain", self.domain(pit)]
        if self.chipdir:
            argv += ["--chips", self.chipdir]
        if self.pregen:
            argv += ["--pregen", str(self.pregen)]
        self.pit_procs[pit] = self._spawn(argv, "pit-%s.log" % pit)

    def wait_dealing(self, timeout=600.0):
        """Block until every simulated pit has logged that it deals (after
        its pre-generation); RuntimeError if one exits or the time runs out."""
        from host_tools.sim import simpit
        deadline = time.monotonic() + timeout
        waiting = set(self.pit_procs)
        while waiting:
            for pit in list(waiting):
                proc = self.pit_procs[pit]
                with open(os.path.join(self.dir, "pit-%s.log" % pit), "rb") as f:
                    if simpit.DEALING.encode() in f.read():
                        waiting.discard(pit)
                        continue
                if proc.poll() is not None:
                    raise RuntimeError("simulated pit %s exited with %s" % (pit, proc.returncode))
            if waiting and time.monotonic() > deadline:
                raise RuntimeError("pits %s not dealing after %.0f s" % (sorted(waiting), timeout))
            time.sleep(0.1)

    def dealing_since(self):
        """The earliest time a simulated pit logged that it deals (its
        publisher starts then), or None before any has."""
        from host_tools.sim import simpit
        marks = []
        for pit in self.pit_procs:
            with open(os.path.join(self.dir, "pit-%s.log" % pit), "rb") as f:
                for line in f.read().decode(errors="replace").splitlines():
                    if line.startswith(simpit.DEALING + " at "):
                        marks.append(float(line.rsplit(" ", 1)[1]))
        return min(marks) if marks else None

    def stage_logs(self):
        """The consumers' stage-stamp files (``stages=True``)."""
        return [os.path.join(self.dir, "stages-%d.log" % i) for i in range(self.n_consumers)]

    def consumer_argv(self, i=None):
        node = self.hubs[(i or 0) % len(self.hubs)]
        argv = [sys.executable, "-m", "host_tools.cli", "central", "--nats", node.url,
                "--nats-seed", self.trial.seed_file("central"), "--nats-ca", self.trial.ca,
                "--dsn", self.writer_dsn, "--keys", self.keydir, "--casino", self.casino]
        if i in self.metrics_ports:
            argv += ["--metrics-port", str(self.metrics_ports[i])]
        if self.partition and i is not None:
            argv += ["--partition", self.pits[i % len(self.pits)]]
        if self.domains:
            for pit in self.pits:
                argv += ["--source", "%s@%s" % (pit, self.domain(pit))]
        return argv

    def start_consumer(self, i):
        env = None
        if self.stages:
            from host_tools.central import consumer
            env = dict(os.environ, **{consumer.STAGE_LOG_ENV: self.stage_logs()[i]})
        self.consumer_procs[i] = self._spawn(self.consumer_argv(i), "central-%d.log" % i, env)

    def _spawn(self, argv, logname, env=None):
        with open(os.path.join(self.dir, logname), "ab") as log:
            return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    stdin=subprocess.DEVNULL, start_new_session=True)

    @staticmethod
    def kill_proc(proc):
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def kill_pit(self, pit):
        self.kill_proc(self.pit_procs.get(pit))

    def kill_consumer(self, i):
        self.kill_proc(self.consumer_procs.get(i))

    def stop_dealing(self):
        """SIGTERM the pits: they stop dealing and exit after publishing
        (simpit's --drain, 20 s at most)."""
        for proc in self.pit_procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.pit_procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill_proc(proc)

    def close(self):
        others = [self.watcher_proc] if self.watcher_proc is not None else []
        for proc in list(self.pit_procs.values()) + list(self.consumer_procs.values()) + others:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in list(self.pit_procs.values()) + list(self.consumer_procs.values()) + others:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill_proc(proc)
        for leaf in self.leaves.values():
            leaf.stop()
        for hub in self.hubs:
            hub.stop()
        self.pg.cleanup()

    # -- where the CPU goes -------------------------------------------------------

    def groups(self):
        """{part: process-group leader pid} of every part running now (each
        part is started in a session of its own, so its group holds its
        children too: PostgreSQL's backends, for one)."""
        out = {hub.name: hub.proc for hub in self.hubs}
        out["postgres"] = self.pg.proc
        out.update(("leaf-" + p, leaf.proc) for p, leaf in self.leaves.items())
        out.update(("pit-" + p, proc) for p, proc in self.pit_procs.items())
        out.update(("central-%d" % i, proc) for i, proc in self.consumer_procs.items())
        out["watch"] = self.watcher_proc
        return {k: v.pid for k, v in out.items() if v is not None and v.poll() is None}

    def cpu_seconds(self):
        """{part: CPU seconds (user + system) its process group has used so
        far, its reaped children included}: read twice around a run, the
        difference is where that run's CPU went."""
        return group_cpu(self.groups())

    # -- the record ------------------------------------------------------------

    def pit_events(self):
        """{(shoe, seq): (event, mac)} of every pit store."""
        out = {}
        for pit in self.pits:
            if not os.path.exists(self.store_path(pit)):
                continue
            with db.open_existing(self.store_path(pit)) as st:
                for shoe, seq, event, mac in st.db.execute(
                        "SELECT shoe_id, seq, event, mac FROM events"):
                    out[(shoe, seq)] = (event, mac)
        return out

    def central_count(self):
        import psycopg
        try:
            with psycopg.connect(self.pg.dsn) as c:
                return c.execute("SELECT count(*) FROM events").fetchone()[0]
        except psycopg.Error:
            return -1

    def converge(self, timeout=120.0):
        """Wait until the central record holds as many events as the pit
        stores; returns the seconds it took, or None on timeout."""
        t0 = time.monotonic()
        want = len(self.pit_events())
        while time.monotonic() - t0 < timeout:
            if self.central_count() >= want:
                return time.monotonic() - t0
            time.sleep(0.25)
        return None

    def compare(self):
        """Counts of the pit stores against the central record: events,
        lost (in a pit, not central), duplicated (a (shoe, seq) twice),
        extra (central, in no pit store), different (same place, other bytes)."""
        import psycopg
        pits = self.pit_events()
        with psycopg.connect(self.pg.dsn) as c:
            rows = c.execute("SELECT shoe_id, seq, event, mac FROM events").fetchall()
            dup = c.execute("SELECT count(*) FROM (SELECT shoe_id, seq FROM events GROUP BY 1, 2"
                            " HAVING count(*) > 1) d").fetchone()[0]
            # refusals per cause (an alert row counts every refusal merged into it)
            alerts = dict(c.execute("SELECT kind, sum(count)::bigint FROM alerts GROUP BY 1").fetchall())
        central = {(s, q): (e, m) for s, q, e, m in rows}
        return {"events": len(pits), "central": len(rows),
                "lost": sum(1 for k in pits if k not in central),
                "duplicated": dup + (len(rows) - len(central)),
                "extra": sum(1 for k in central if k not in pits),
                "different": sum(1 for k, v in pits.items() if k in central and central[k] != v),
                "alerts": alerts}

    def verify_central(self):
        """(exit code, output) of `shoe verify --central`."""
        argv = [sys.executable, "-m", "host_tools.cli", "verify", "--central", self.reader_dsn,
                "--key-dir", self.keydir]
        if not self.chipdir:
            argv.append("--mac-only")   # no chips: the MAC chain is all there is to check
        r = subprocess.run(argv, capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    # -- forgeries ---------------------------------------------------------------

    def inject(self, pit, kinds=("forged", "replayed")):
        """Publish forged and replayed events at a pit's leaf node, as an
        insider holding the pit's credential could: returns how many were sent."""
        return asyncio.run(inject(self.leaves[pit].url, self.casino, pit, self.store_path(pit),
                                  self.shoes[pit][0], kinds,
                                  self.auth("pit-" + pit, access.pit_inbox(self.casino, pit))))


def group_cpu(groups):
    """{name: CPU seconds} of each process group ({name: pgid}), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    by_pgid = {pgid: name for name, pgid in groups.items()}
    out = {name: 0.0 for name in groups}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue   # gone meanwhile
        # after the ")": state ppid pgrp ... utime(12) stime(13) cutime(14) cstime(15);
        # by group, or by parent: PostgreSQL's backends each call setsid()
        name = by_pgid.get(int(fields[2])) or by_pgid.get(int(fields[1]))
        if name is not None:
            out[name] += sum(int(x) for x in fields[11:15]) / tick
    return out


async def inject(url, casino, pit, store_path, shoe, kinds=("forged", "replayed"), auth=None):
    """``forged``: the pit's newest seq with another body and a made-up
    tag (refused at whichever side of the real one it arrives); ``replayed``: a stored
    event's seq reused with another stored event's body and tag. Each goes
    out without a Nats-Msg-Id (an intruder does not help the broker dedupe)."""
    from host_tools.casino import streams
    with db.open_existing(store_path) as st:
        rows = list(st.db.execute("SELECT seq, event, mac FROM events WHERE shoe_id = ?"
                                  " ORDER BY seq", (shoe,)))
    if len(rows) < 3:
        return 0
    nc = await streams.connect(url, auth=auth)
    sent = 0
    try:
        js = nc.jetstream()
        subj = wire.subject(casino, pit, "T1")
        last = rows[-1][0]
        for kind in kinds:
            if kind == "forged":
                seq, body, mac = last, b'{"type":"result","round":1,"winner":"player"}', "f" * 32
            else:
                seq, body, mac = rows[1][0], rows[2][1].encode(), rows[2][2]
            h = wire.headers(shoe, seq, mac, time.time())
            del h[wire.H_ID]
            await js.publish(subj, body, headers=h, timeout=5)
            sent += 1
    finally:
        await nc.close()
    return sent
