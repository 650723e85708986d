"""The casino path tried as an attacker on the casino network would try it,
on the real servers of the rig (host_tools/sim/rigs/casino.py): nats-server
with TLS and NKEY users, PostgreSQL with SCRAM roles over TLS.

Each test would pass for the attacker on an open broker and a trust-auth
cluster."""

import asyncio
import os
import ssl
import subprocess
import sys
import time

import nats
import nats.errors
import psycopg
import pytest

from host_tools.casino import access, secrets, streams, wire
from host_tools.sim.rigs import casino as casino_rig

CASINO = "C1"


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """Hub, two leaf-buffer leaves, PostgreSQL; streams, consumer and the
    registry made by the admin; no pit and no consumer process."""
    r = casino_rig.Rig(str(tmp_path_factory.mktemp("casino")), pits=2, tables=1, consumers=0,
                       casino=CASINO)
    r.start(pits=False)
    yield r
    r.close()


def connect(url, auth, errors):
    """A connection that records the server's asynchronous errors (how a
    permissions violation on a publish or a subscribe is reported)."""
    async def on_error(e):
        errors.append(str(e).lower())   # nats-py lower-cases the server's -ERR text
    opts = auth.connect_options() if auth is not None else {}
    return nats.connect(url, connect_timeout=3, allow_reconnect=False, max_reconnect_attempts=1,
                        error_cb=on_error, **opts)


async def stream_state(rig, name, domain=None, url=None):
    nc = await streams.connect(url or rig.hub.url, auth=rig.auth("admin"))
    try:
        info = await nc.jetstream(domain=domain).stream_info(name)
        return info.state.messages, info.config.name
    finally:
        await nc.close()


async def unanswered(*requests):
    """Requests the servers must refuse, made at once: each still waits its
    client's full timeout for an answer, but they wait together. Each one's
    exception (a timeout, or no responders) is returned; an answer fails."""
    results = await asyncio.gather(*requests, return_exceptions=True)
    for r in results:
        assert isinstance(r, (nats.errors.TimeoutError, nats.errors.NoRespondersError)), r
    return results


def test_an_anonymous_client_cannot_connect(rig):
    async def main():
        ca = secrets.NatsAuth(None, rig.trial.ca)
        for url in [rig.hub.url] + [leaf.url for leaf in rig.leaves.values()]:
            with pytest.raises(Exception) as exc:
                nc = await connect(url, ca, [])
                await nc.close()
            assert "Authorization Violation" in str(exc.value), str(exc.value)
            # and without TLS nothing is spoken at all
            plain = url.replace("tls://", "nats://")
            with pytest.raises(Exception):
                nc = await nats.connect(plain, connect_timeout=2, allow_reconnect=False,
                                        max_reconnect_attempts=1)
                await nc.close()
    asyncio.run(main())


def test_a_client_refuses_a_server_whose_certificate_is_not_the_casinos(rig, tmp_path):
    """TLS is checked, not just on: a client given another CA does not connect."""
    from host_tools.casino import trial
    other = trial.make(str(tmp_path / "other"), CASINO, ["P1"])

    async def main():
        auth = secrets.NatsAuth(secrets.read_secret(rig.trial.seed_file("admin")), other.ca)
        with pytest.raises(Exception) as exc:
            nc = await connect(rig.hub.url, auth, [])
            await nc.close()
        assert "CERTIFICATE_VERIFY_FAILED" in repr(exc.value) or isinstance(
            exc.value, (ssl.SSLError, nats.errors.NoServersError)), repr(exc.value)
    asyncio.run(main())


def test_a_pits_credential_publishes_only_its_own_subjects(rig):
    async def main():
        errors = []
        auth = rig.auth("pit-P1", access.pit_inbox(CASINO, "P1"))
        nc = await connect(rig.leaves["P1"].url, auth, errors)
        js = nc.jetstream(domain=rig.domain("P1"))
        ack = await js.publish(wire.subject(CASINO, "P1", "T1"), b"own", timeout=5)
        assert ack.stream == wire.pit_stream(CASINO, "P1")
        with pytest.raises(nats.errors.TimeoutError):
            await js.publish(wire.subject(CASINO, "P2", "T1"), b"not mine", timeout=2)
        await nc.flush()
        await nc.close()
        assert any("permissions violation for publish" in e and ".p2." in e for e in errors), errors
        # the other pit's stream got nothing; this pit's got its one message
        n1, _ = await stream_state(rig, wire.pit_stream(CASINO, "P1"), rig.domain("P1"),
                                   rig.leaves["P1"].url)
        n2, _ = await stream_state(rig, wire.pit_stream(CASINO, "P2"), rig.domain("P2"),
                                   rig.leaves["P2"].url)
        return n1, n2
    n1, n2 = asyncio.run(main())
    assert n1 >= 1 and n2 == 0


def test_a_pits_credential_cannot_read_or_delete_a_stream(rig):
    async def main():
        errors = []
        auth = rig.auth("pit-P1", access.pit_inbox(CASINO, "P1"))
        nc = await connect(rig.leaves["P1"].url, auth, errors)
        got = []

        async def cb(msg):
            got.append(msg)
        await nc.subscribe("shoe.>", cb=cb)
        await nc.flush()
        leaf_js = nc.jetstream(domain=rig.domain("P1"))
        hub_js = nc.jetstream(domain="hub")
        attempts = []
        for js, stream in ((leaf_js, wire.pit_stream(CASINO, "P1")),
                           (hub_js, wire.casino_stream(CASINO))):
            attempts += [js.delete_stream(stream),
                         js.pull_subscribe(wire.casino_subjects(CASINO), durable="spy", stream=stream)]
        await unanswered(*attempts)
        # publishing more of its own must still work; nothing comes back to the spy
        await leaf_js.publish(wire.subject(CASINO, "P1", "T1"), b"own", timeout=5)
        await asyncio.sleep(0.3)
        await nc.close()
        assert got == []
        assert any("permissions violation for subscription" in e for e in errors), errors
        assert any("permissions violation for publish" in e and "delete" in e for e in errors), errors
        # both streams are still there (the admin can see them)
        await stream_state(rig, wire.pit_stream(CASINO, "P1"), rig.domain("P1"), rig.leaves["P1"].url)
        await stream_state(rig, wire.casino_stream(CASINO))
    asyncio.run(main())


def test_an_insider_with_full_rights_on_a_pits_leaf_stays_in_that_pit(rig):
    """Whoever owns the pit PC owns its leaf node (its configuration, any
    user on it: here the leaf's admin). Across the leaf link the hub lets
    through only that pit's traffic: the casino stream cannot be deleted,
    and another pit's subjects do not reach its stream."""
    async def main():
        before, _ = await stream_state(rig, wire.pit_stream(CASINO, "P2"), rig.domain("P2"),
                                       rig.leaves["P2"].url)
        nc = await connect(rig.leaves["P1"].url, rig.auth("admin"), [])
        try:
            for js in (nc.jetstream(domain="hub"), nc.jetstream()):
                with pytest.raises((nats.errors.Error, asyncio.TimeoutError)):
                    await js.delete_stream(wire.casino_stream(CASINO))
            with pytest.raises((nats.errors.Error, asyncio.TimeoutError)):
                await nc.jetstream().publish(wire.subject(CASINO, "P2", "T1"), b"as P2", timeout=2)
            with pytest.raises((nats.errors.Error, asyncio.TimeoutError)):
                await nc.jetstream(domain="hub").add_stream(name="SPY", subjects=["spy.>"])
        finally:
            await nc.close()
        after, _ = await stream_state(rig, wire.pit_stream(CASINO, "P2"), rig.domain("P2"),
                                      rig.leaves["P2"].url)
        await stream_state(rig, wire.casino_stream(CASINO))   # still there
        return before, after
    before, after = asyncio.run(main())
    assert after == before


def test_a_leaf_link_carries_its_own_pits_sourcing_and_nothing_else(rig, tmp_path):
    """Each pit's leaf link (access.leaf_permissions) carries exactly the
    hub's sourcing of that pit's stream. Whoever owns P1's leaf (its admin
    here) publishes on it to P2's delivery prefix, to the generic
    ``$JS.S``/``_INBOX`` subjects the link once allowed, and to P2's and its
    own event subjects: none reaches a listener on the hub, while the same
    delivery subject published on P2's own leaf does. Neither can a leaf
    ask another pit's domain anything, nor can the hub side reach past the
    sourcing on P1's leaf (delete its stream). And the narrowed link still
    carries P1's events into the casino stream."""
    from host_tools.casino import publish
    from host_tools.sim import simtable
    from host_tools.protocol import keys as keys_mod
    from host_tools.store import db
    p2_deliver = access.source_deliver(CASINO, "P2") + ".S.forged"
    probes = [p2_deliver, "$JS.S.forged", "_INBOX.forged", wire.subject(CASINO, "P2", "T1"),
              wire.subject(CASINO, "P1", "T1"), "$JS.ACK.%s.central.1.1.1.1.0" % wire.casino_stream(CASINO)]

    async def main():
        got = []

        async def heard(m):
            got.append(m.subject)
        hub = await streams.connect(rig.hub.url, auth=rig.auth("admin"))
        for subj in ("_SRC_C1_P2.>", "$JS.S.>", "_INBOX.>", "shoe.>", "$JS.ACK.>"):
            await hub.subscribe(subj, cb=heard)
        await hub.flush()
        await asyncio.sleep(1.0)      # interest reaches the leaves
        p1 = await connect(rig.leaves["P1"].url, rig.auth("admin"), [])
        p2 = await connect(rig.leaves["P2"].url, rig.auth("admin"), [])
        try:
            for subj in probes:
                await p1.publish(subj, b"from the P1 insider")
            await p1.flush()
            await p2.publish(p2_deliver, b"on P2's own link")
            await p2.flush()
            for domain in (rig.domain("P2"), "hub"):
                with pytest.raises((nats.errors.Error, asyncio.TimeoutError)):
                    await p1.jetstream(domain=domain).stream_info(wire.pit_stream(CASINO, "P2"))
            with pytest.raises((nats.errors.Error, asyncio.TimeoutError)):
                await hub.jetstream(domain=rig.domain("P1")).delete_stream(wire.pit_stream(CASINO, "P1"))
            await asyncio.sleep(1.0)
        finally:
            await p1.close()
            await p2.close()
            await hub.close()
        return got
    got = asyncio.run(main())
    # the hub's own traffic is heard too (P2's real deliveries, replies):
    # of the probes, only P2's own, once, on its own link
    assert [g for g in got if g in probes] == [p2_deliver], got
    # P1's stream is still there, and its events still cross
    before, _ = asyncio.run(stream_state(rig, wire.casino_stream(CASINO)))
    path = str(tmp_path / "p1.db")
    shoe = rig.shoes["P1"][0]
    sim = simtable.SimShoe(shoe, keys_mod.read_key(os.path.join(rig.keydir, shoe + ".key")), seed=3)
    with db.Store(path) as st:
        sim.deal(st, 5)
    sim.close()
    assert publish.drain(path, rig.leaves["P1"].url, CASINO, "P1", {}, domain=rig.domain("P1"),
                         auth=rig.auth("pit-P1")) == 5
    deadline = time.monotonic() + 30
    after = before
    while after < before + 1 and time.monotonic() < deadline:
        time.sleep(0.3)
        after, _ = asyncio.run(stream_state(rig, wire.casino_stream(CASINO)))
    assert after >= before + 1


def test_the_consumers_credential_can_pull_but_not_publish_or_delete(rig):
    async def main():
        before, _ = await stream_state(rig, wire.casino_stream(CASINO))
        errors = []
        auth = rig.auth("central", access.consumer_inbox(CASINO))
        nc = await connect(rig.hub.url, auth, errors)
        js = nc.jetstream()
        publish, delete = await unanswered(
            js.publish(wire.subject(CASINO, "P1", "T1"), b"forged by central", timeout=2),
            js.delete_stream(wire.casino_stream(CASINO)))
        assert isinstance(publish, nats.errors.TimeoutError), publish
        # what it may do: pull from its durable consumer (an empty fetch times out quietly)
        psub = await js.pull_subscribe_bind(durable=access.DURABLE, stream=wire.casino_stream(CASINO),
                                            inbox_prefix=(access.consumer_inbox(CASINO) + ".").encode())
        try:
            await psub.fetch(1, 0.5)
        except nats.errors.TimeoutError:
            pass
        await nc.flush()
        await nc.close()
        after, _ = await stream_state(rig, wire.casino_stream(CASINO))
        assert any("permissions violation for publish" in e and "shoe." in e for e in errors), errors
        assert not any("msg.next" in e for e in errors), errors
        return before, after
    before, after = asyncio.run(main())
    assert after >= before   # the stream still exists, and the forged message is not in it


def test_postgres_roles_read_only_view_and_no_ddl_writer(rig):
    with psycopg.connect(rig.reader_dsn, autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM events").fetchone()[0] >= 0
        for sql in ("INSERT INTO alerts (time, severity, kind, detail) VALUES (0, 'info', 'x', 'y')",
                    "UPDATE events SET event = 'x'", "DELETE FROM events",
                    "INSERT INTO devices (device_id, casino, pit, tbl, registered)"
                    " VALUES ('X', 'C1', 'P1', 'T1', 0)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
    with psycopg.connect(rig.writer_dsn, autocommit=True) as c:
        for sql in ("DROP TABLE events", "INSERT INTO devices (device_id, casino, pit, tbl, registered)"
                    " VALUES ('X', 'C1', 'P1', 'T1', 0)", "UPDATE devices SET tbl = 'T9'",
                    "CREATE TABLE spy (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)


def test_postgres_wants_scram_over_tls_and_trusts_nobody(rig):
    with open(os.path.join(rig.pg.data, "pg_hba.conf")) as f:
        lines = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
    assert lines and all(ln[-1] == "scram-sha-256" for ln in lines), lines
    assert not any(ln[0] == "host" for ln in lines)   # TCP only as hostssl
    plain = rig.reader_dsn.replace("sslmode=verify-full", "sslmode=disable")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(plain).close()
    no_password = " ".join(kv for kv in rig.reader_dsn.split() if not kv.startswith("passfile="))
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(no_password, passfile="/dev/null").close()
    with psycopg.connect(rig.reader_dsn) as c:
        assert c.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()[0]


def _descendants(pids):
    """Every live process under ``pids`` (postgres's backends, ...)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = set(), list(pids)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(children.get(p, []))
    return out


def test_no_process_carries_a_secret_on_its_command_line_and_no_output_shows_one(tmp_path):
    """The whole casino running (servers, pits, consumers, the view):
    /proc/PID/cmdline of every process it started holds no seed and no
    password; nor does any log or start-up line."""
    r = casino_rig.Rig(str(tmp_path / "casino"), pits=2, tables=1, rate=20.0, consumers=1)
    viewer = None
    try:
        r.start()
        viewer = r._spawn([sys.executable, "-m", "host_tools.cli", "central", "view", "--dsn",
                           r.reader_dsn, "--port", "0"], "view.log")
        deadline = time.monotonic() + 60
        while r.central_count() < 10 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert r.central_count() >= 10   # events flowed pit -> leaf -> hub -> central
        # the consumer's own /metrics (loopback only, no secret in it either)
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % r.metrics_ports[0], timeout=10) as m:
            metrics_text = m.read().decode()
        stored = [float(line.split()[-1]) for line in metrics_text.splitlines()
                  if line.startswith("shoe_central_stored_total ")]
        assert stored and stored[0] >= 10, metrics_text
        assert "shoe_central_batch_seconds_count" in metrics_text
        assert "shoe_central_connected 1.0" in metrics_text
        roots = [r.hub.proc.pid, r.pg.proc.pid, viewer.pid] + [
            leaf.proc.pid for leaf in r.leaves.values()] + [
            p.pid for p in list(r.pit_procs.values()) + list(r.consumer_procs.values())]
        pids = _descendants(roots)
        assert len(pids) >= len(roots) + 3   # postgres's own processes are in it too
        secret_texts = r.trial.secret_texts()
        assert len(secret_texts) >= 9
        for pid in pids:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv = f.read().decode("utf-8", "replace")
            except OSError:
                continue   # a backend that ended meanwhile
            for s in secret_texts:
                assert s not in argv, "pid %d carries a secret on its command line" % pid
        r.stop_dealing()
    finally:
        if viewer is not None:
            viewer.terminate()
            viewer.wait(10)
        r.close()
    logs = [f for f in os.listdir(r.dir) if f.endswith(".log")]
    assert {"central-0.log", "view.log", "pit-P1.log", "hub.log"} <= set(logs)
    for name in logs:
        with open(os.path.join(r.dir, name), errors="replace") as f:
            text = f.read()
        for s in secret_texts:
            assert s not in text, "%s shows a secret" % name
    with open(os.path.join(r.dir, "central-0.log")) as f:
        first = f.readline()
    assert "127.0.0.1:%d/casino" % r.pg.port in first and "passfile" not in first
    for s in secret_texts:
        assert s not in metrics_text


def test_the_demo_prints_no_password(tmp_path):
    out = subprocess.run([sys.executable, "-m", "host_tools.cli", "central", "demo", "--seconds", "3",
                          "--tables", "1", "--port", "0"], capture_output=True, text=True,
                         timeout=240)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    trial_dir = [ln.split(": ", 1)[1].strip() for ln in text.splitlines()
                 if ln.strip().startswith("certificates and credentials")][0]
    from host_tools.casino import trial
    t = trial.Trial(trial_dir, "C1", ["P1", "P2"]).load()
    secret_texts = t.secret_texts()
    for s in secret_texts:
        assert s not in text
    # The demo's shoes sign with their simulated chips; the command it printed
    # checks them (no --mac-only), and the demo ran it: exit 0.
    command = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("shoe verify --central ")]
    assert len(command) == 1 and "--key-dir" in command[0] and "--mac-only" not in command[0], text
    assert "the central record is every shoe's own: exit 0" in text, text


# Loaded at the start of the command's interpreter (PYTHONPATH): the simulated
# ATECC608B acknowledges no read, as a chip that stopped answering.
SILENT_CHIP = """
from host_tools.sim import atecc608
atecc608.Chip.i2c_read = lambda self, n: None
"""


def test_a_table_chip_that_does_not_answer_is_one_line_not_an_internal_error(tmp_path):
    """`shoe central demo` as the README writes it, with the tables' simulated
    secure elements silent: the demo stops before it starts anything, says
    in one line which chip failed and how, and exits with the device status
    (the driver's SecureElementFault is the firmware's, not the tools')."""
    from host_tools.exits import EXIT_DEVICE, EXIT_INTERNAL
    (tmp_path / "sitecustomize.py").write_text(SILENT_CHIP)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), TMPDIR=str(tmp_path))
    shoe = os.path.join(os.path.dirname(sys.executable), "shoe")
    out = subprocess.run([shoe, "central", "demo", "--seconds", "20", "--port", "0"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != EXIT_INTERNAL, out.stderr
    assert out.returncode == EXIT_DEVICE, (out.returncode, out.stdout, out.stderr)
    assert out.stderr.splitlines() == [
        "shoe central: the simulated secure element of shoe C1-P1-T1 (provisioning) failed: "
        "ATECC608 did not acknowledge a read (wake) at 0x60 in time"], out.stderr


def test_only_the_admin_credential_sets_up_streams(rig, capsys):
    """`shoe central setup` with the admin's seed makes a stream and its
    consumer; with the consumer's seed it is refused, in one line."""
    from host_tools import cli
    from host_tools.casino import trial
    base = ["central", "setup", "--nats", rig.hub.url, "--nats-ca", rig.trial.ca, "--casino", "C9",
            "--writer", trial.PG_WRITER, "--reader", trial.PG_READER, "--dsn", rig.pg.dsn]
    assert cli.main(base + ["--nats-seed", rig.trial.seed_file("central")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "admin's credential" in err

    async def exists():
        nc = await streams.connect(rig.hub.url, auth=rig.auth("admin"))
        try:
            return [s.config.name for s in await nc.jetstream().streams_info()]
        finally:
            await nc.close()
    assert wire.casino_stream("C9") not in asyncio.run(exists())
    assert cli.main(base + ["--nats-seed", rig.trial.seed_file("admin")]) == 0
    out = capsys.readouterr().out
    assert "stream SHOE_C9" in out and "passfile" not in out
    assert wire.casino_stream("C9") in asyncio.run(exists())


def test_partitions_are_the_admins_to_make_and_pull_only_where_the_hub_allows(rig, capsys):
    """`shoe central setup --partition` makes one durable per pit, each on
    its pit's subjects only; the consumer's credential pulls only the
    durables its hub names (this hub names the casino-wide one alone)."""
    from host_tools import cli
    from host_tools.casino import trial
    cli_args = ["central", "setup", "--nats", rig.hub.url, "--nats-ca", rig.trial.ca, "--casino", CASINO,
                "--writer", trial.PG_WRITER, "--reader", trial.PG_READER, "--dsn", rig.pg.dsn,
                "--partition", "P1", "--partition", "P2", "--source", "P1@pit-p1", "--source", "P2@pit-p2"]
    assert cli.main(cli_args + ["--nats-seed", rig.trial.seed_file("central")]) == 1
    capsys.readouterr()
    assert cli.main(cli_args + ["--nats-seed", rig.trial.seed_file("admin")]) == 0
    capsys.readouterr()

    async def main():
        admin = await streams.connect(rig.hub.url, auth=rig.auth("admin"))
        try:
            filters = {}
            for pit in ("P1", "P2"):
                info = await admin.jetstream().consumer_info(wire.casino_stream(CASINO), access.durable(pit))
                filters[pit] = info.config.filter_subject
        finally:
            await admin.close()
        errors = []
        nc = await connect(rig.hub.url, rig.auth("central", access.consumer_inbox(CASINO)), errors)
        psub = await nc.jetstream().pull_subscribe_bind(
            durable=access.durable("P1"), stream=wire.casino_stream(CASINO),
            inbox_prefix=(access.consumer_inbox(CASINO) + ".").encode())
        got = []
        try:
            got = await psub.fetch(1, 1.0)
        except nats.errors.TimeoutError:
            pass
        await nc.flush()
        await nc.close()
        return filters, got, errors
    filters, got, errors = asyncio.run(main())
    assert filters == {"P1": "shoe.C1.P1.>", "P2": "shoe.C1.P2.>"}
    assert got == [] and any("permissions violation for publish" in e and "msg.next" in e
                             for e in errors), errors
