"""`shoe central --nats URL [--nats-seed FILE --nats-ca FILE] --dsn DSN --keys DIR --casino NAME
[--source PIT@DOMAIN ...]`, `shoe central setup ...`, `shoe central register DEVICE --pit P
--table T --dsn ADMIN_DSN`, `shoe central demo` and `shoe central view --dsn DSN [--host H --port P]`.

Secrets never come on this command line (host_tools/casino/secrets.py): a
DSN names a passfile (0600) or PGPASSWORD holds the password; the NATS
credential is a seed file (0600) or SHOE_NATS_SEED. What is printed names
host, port and database only.

The first runs one consumer of the casino record until SIGINT/SIGTERM (run
two or more for availability: they share the durable consumer). The second
starts a two-pit casino on this machine (host_tools/sim/rigs/casino.py), prints
where to look, and stops by itself after ``--seconds`` or on Ctrl-C. The
third serves the pit page over the central record, read-only (view.py).

Exit codes: 0 ok; 1 the demo's record did not match its pits or verify
failed; 2 bad arguments or key directory.
"""

import asyncio
import importlib
import os
import signal
import sys

from host_tools import exits
from host_tools.casino import wire


def add_arguments(parser):
    parser.add_argument("action", nargs="?", choices=("run", "demo", "view", "setup", "register",
                                                      "watch"),
                        default="run",
                        help="run (default): one consumer; demo: a two-pit casino on this machine;"
                             " view: the pit page over the central record, read-only; setup (admin):"
                             " streams, consumer, schema and grants; register (admin): a device;"
                             " watch (admin): restart the hub's sourcing of a pit as soon as its"
                             " leaf link is back (central/sources.py)")
    parser.add_argument("device", nargs="?", help="register: the shoe or shuffler id")
    parser.add_argument("--nats", help="the hub's URL (tls://host:port, or nats:// for an open broker)")
    parser.add_argument("--nats-seed", help="file (0600) holding this user's NKEY seed; or set "
                                            "SHOE_NATS_SEED")
    parser.add_argument("--nats-ca", help="the CA file the broker's certificate chains to (TLS)")
    parser.add_argument("--pit", help="register: the device's pit")
    parser.add_argument("--table", help="register: the device's table")
    parser.add_argument("--kind", choices=("shoe", "shuffler"), default="shoe", help="register")
    parser.add_argument("--pubkey", metavar="FILE",
                        help="register: the device's public key (SHOE-ID.pub from `shoe deploy`)")
    parser.add_argument("--writer", help="setup: the PostgreSQL role of `shoe central`")
    parser.add_argument("--reader", help="setup: the read-only role of the view and verify")
    parser.add_argument("--dsn", help="PostgreSQL connection string of the central record")
    parser.add_argument("--keys", help="directory of shoe keys, <shoe_id>.key each (0600)")
    parser.add_argument("--casino", default="C1", help="the casino's name (default C1)")
    parser.add_argument("--source", action="append", default=[], metavar="PIT@DOMAIN",
                        help="a pit whose leaf node buffers in JetStream domain DOMAIN; may repeat")
    parser.add_argument("--partition", action="append", default=[], metavar="PIT",
                        help="run: pull only this pit's partition of the stream (setup made it); "
                        "setup: make this pit's partition (repeat per pit) instead of the "
                        "casino-wide consumer")
    parser.add_argument("--seconds", type=float, default=20.0, help="demo: how long to deal")
    parser.add_argument("--tables", type=int, default=4, help="demo: tables per pit")
    parser.add_argument("--rate", type=float, default=5.0,
                        help="demo: events per second per table (default 5)")
    parser.add_argument("--metrics-port", type=int, default=0,
                        help="run: serve Prometheus /metrics on this port (loopback only; 0: off)")
    parser.add_argument("--metrics-host", default="127.0.0.1",
                        help="run: the loopback address of --metrics-port (default 127.0.0.1)")
    parser.add_argument("--host", default="127.0.0.1", help="view (and demo): address to listen on")
    parser.add_argument("--port", type=int, default=8090, help="view (and demo): port to listen on")


def _sources(items):
    out = []
    for item in items:
        pit, sep, domain = item.partition("@")
        if not sep or not wire.NAME.fullmatch(pit) or not wire.NAME.fullmatch(domain):
            raise ValueError("--source %r is not PIT@DOMAIN" % item)
        out.append((pit, domain))
    return out


def run(args):
    from host_tools.casino import secrets
    try:
        if args.dsn:
            secrets.check_dsn(args.dsn)
        if args.nats:
            secrets.check_url(args.nats)
    except secrets.SecretError as e:
        print("central: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE
    if args.action in ("setup", "register"):
        return _admin(args)
    if args.action == "watch":
        return _watch(args)
    if args.action == "demo":
        # a rig (host_tools/demo): named, not imported, like the CLI's own table
        return importlib.import_module("host_tools.demo.central").run(args)
    if args.action == "view":
        if not args.dsn:
            print("central view: needs --dsn", file=sys.stderr)
            return exits.EXIT_USAGE
        from host_tools.central import view
        return view.run(args)
    missing = [o for o in ("nats", "dsn", "keys") if not getattr(args, o)]
    if missing:
        print("central: needs %s" % ", ".join("--" + m for m in missing), file=sys.stderr)
        return exits.EXIT_USAGE
    if not wire.NAME.fullmatch(args.casino):
        print("central: --casino %r: use 1-32 letters, digits, '-' or '_'" % args.casino,
              file=sys.stderr)
        return exits.EXIT_USAGE
    if not os.path.isdir(args.keys):
        print("central: --keys %s is not a directory" % args.keys, file=sys.stderr)
        return exits.EXIT_USAGE
    try:
        sources = _sources(args.source)
        partition = _partitions(args.partition, most=1)
    except ValueError as e:
        print("central: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE
    try:
        auth = secrets.NatsAuth.load(args.nats_seed, args.nats_ca)
    except secrets.SecretError as e:
        print("central: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE
    from host_tools.view import guard
    if args.metrics_port and not guard.is_loopback(args.metrics_host):
        print("central: --metrics-host %s is not a loopback address: the metrics have no login, so "
              "they are served on loopback only" % args.metrics_host, file=sys.stderr)
        return exits.EXIT_USAGE
    from host_tools.central.consumer import Consumer
    consumer = Consumer(args.nats, args.dsn, args.keys, args.casino, sources, auth=auth,
                        partition=partition[0] if partition else None)

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        runner = None
        if args.metrics_port:
            from host_tools.central import metrics
            reg, consumer.batch_seconds = metrics.consumer_registry(consumer)
            runner = await metrics.serve(reg, args.metrics_host, args.metrics_port)
        print("central: consuming %s%s from %s into %s%s" % (
            wire.casino_stream(args.casino), " (pit %s's partition)" % partition[0] if partition else "",
            secrets.url_label(args.nats),
            secrets.dsn_label(args.dsn), "; metrics at http://%s:%d/metrics" % (
                args.metrics_host, args.metrics_port) if runner else ""), flush=True)
        try:
            await consumer.run(stop)
        finally:
            if runner is not None:
                await runner.cleanup()

    asyncio.run(main())
    print("central: %s" % " ".join("%s=%d" % kv for kv in sorted(consumer.totals().items())))
    return 0


def _partitions(items, most=None):
    """The ``--partition`` pits, checked: names, no repeats, at most ``most``."""
    for pit in items:
        if not wire.NAME.fullmatch(pit):
            raise ValueError("--partition %r: use 1-32 letters, digits, '-' or '_'" % pit)
    if len(set(items)) != len(items):
        raise ValueError("--partition names a pit twice")
    if most is not None and len(items) > most:
        raise ValueError("one --partition per `shoe central` process (start one per pit)")
    return list(items)


def _watch(args):
    """`shoe central watch --nats URL --nats-seed ADMIN --nats-ca CA --source PIT@DOMAIN ...`"""
    from host_tools.casino import secrets
    from host_tools.central import sources as sources_mod
    try:
        sources = _sources(args.source)
        if not args.nats or not sources:
            raise ValueError("watch needs --nats and at least one --source PIT@DOMAIN")
        auth = secrets.NatsAuth.load(args.nats_seed, args.nats_ca)
    except (ValueError, secrets.SecretError) as e:
        print("central watch: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print("central watch: the sources of %s (%s) on %s" % (
            wire.casino_stream(args.casino), ", ".join(p for p, _d in sources),
            secrets.url_label(args.nats)), flush=True)
        await sources_mod.watch(args.nats, auth, args.casino, sources, stop)
    asyncio.run(main())
    return 0


def _admin(args):
    """`shoe central setup` and `shoe central register` (admin credentials)."""
    from host_tools.casino import secrets
    from host_tools.central import setup
    if not args.dsn:
        print("central %s: needs --dsn (the admin's)" % args.action, file=sys.stderr)
        return exits.EXIT_USAGE
    import psycopg
    try:
        if args.action == "register":
            for opt in ("device", "pit", "table"):
                value = getattr(args, opt)
                ok = wire.SHOE_ID.fullmatch(value or "") if opt == "device" else \
                    wire.NAME.fullmatch(value or "")
                if not ok:
                    print("central register: %s %r is missing or not a valid name" % (opt, value),
                          file=sys.stderr)
                    return exits.EXIT_USAGE
            pem = None
            if args.pubkey:
                from host_tools.protocol import pubkeys
                try:
                    pem = pubkeys.pem(pubkeys.read_public(args.pubkey)).decode("ascii")
                except pubkeys.PublicKeyFileError as e:
                    print("central register: --pubkey: %s" % e, file=sys.stderr)
                    return exits.EXIT_USAGE
            setup.register(args.dsn, [(args.device, args.casino, args.pit, args.table, args.kind, pem)])
            print("central register: %s %s at %s/%s/%s%s" % (args.kind, args.device, args.casino,
                                                             args.pit, args.table,
                                                             ", public key registered" if pem else ""))
            return 0
        setup.db_setup(args.dsn, args.writer, args.reader)
        if args.nats:
            auth = secrets.NatsAuth.load(args.nats_seed, args.nats_ca)
            setup.run_nats(args.nats, auth, args.casino, _sources(args.source),
                           _partitions(args.partition))
        print("central setup: %s ready%s" % (secrets.dsn_label(args.dsn), ", stream %s and its "
              "consumer on %s" % (wire.casino_stream(args.casino), secrets.url_label(args.nats))
              if args.nats else ""))
        return 0
    except (secrets.SecretError, ValueError) as e:
        print("central %s: %s" % (args.action, e), file=sys.stderr)
    except psycopg.Error as e:
        print("central %s: %s: %s" % (args.action, secrets.dsn_label(args.dsn),
                                      str(e).strip().splitlines()[0] if str(e).strip() else
                                      type(e).__name__), file=sys.stderr)
    except Exception as e:  # a broker that refuses or is away: one line
        import nats.errors
        hint = ""
        if isinstance(e, (nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            # a permission violation on the JetStream API looks like silence
            hint = " (no answer from the stream API: only the admin's credential may make streams;" \
                   " is --nats-seed the admin's?)"
        print("central %s: %s: %s%s" % (args.action, type(e).__name__, e, hint), file=sys.stderr)
    return 1
