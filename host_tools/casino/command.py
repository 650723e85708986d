"""`shoe central --nats URL --dsn DSN --keys DIR --casino NAME [--source PIT@DOMAIN ...]`,
`shoe central demo` and `shoe central view --dsn DSN [--host H --port P]`.

The first runs one consumer of the casino record until SIGINT/SIGTERM (run
two or more for availability: they share the durable consumer). The second
starts a two-pit casino on this machine (host_tools/casino/rig.py), prints
where to look, and stops by itself after ``--seconds`` or on Ctrl-C. The
third serves the pit page over the central record, read-only (view.py).

Exit codes: 0 ok; 1 the demo's record did not match its pits or verify
failed; 2 bad arguments or key directory.
"""

import asyncio
import os
import signal
import sys
import tempfile
import time

from host_tools.casino import wire


def add_arguments(parser):
    parser.add_argument("action", nargs="?", choices=("run", "demo", "view"), default="run",
                        help="run (default): one consumer; demo: a two-pit casino on this machine;"
                             " view: the pit page over the central record, read-only")
    parser.add_argument("--nats", help="the hub's URL (nats://host:port)")
    parser.add_argument("--dsn", help="PostgreSQL connection string of the central record")
    parser.add_argument("--keys", help="directory of shoe keys, <shoe_id>.key each (0600)")
    parser.add_argument("--casino", default="C1", help="the casino's name (default C1)")
    parser.add_argument("--source", action="append", default=[], metavar="PIT@DOMAIN",
                        help="a pit whose leaf node buffers in JetStream domain DOMAIN; may repeat")
    parser.add_argument("--seconds", type=float, default=20.0, help="demo: how long to deal")
    parser.add_argument("--tables", type=int, default=4, help="demo: tables per pit")
    parser.add_argument("--rate", type=float, default=5.0,
                        help="demo: events per second per table (default 5)")
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
    if args.action == "demo":
        return demo(args)
    if args.action == "view":
        if not args.dsn:
            print("central view: needs --dsn", file=sys.stderr)
            return 2
        from host_tools.casino import view
        return view.run(args)
    missing = [o for o in ("nats", "dsn", "keys") if not getattr(args, o)]
    if missing:
        print("central: needs %s" % ", ".join("--" + m for m in missing), file=sys.stderr)
        return 2
    if not wire.NAME.fullmatch(args.casino):
        print("central: --casino %r: use 1-32 letters, digits, '-' or '_'" % args.casino,
              file=sys.stderr)
        return 2
    if not os.path.isdir(args.keys):
        print("central: --keys %s is not a directory" % args.keys, file=sys.stderr)
        return 2
    try:
        sources = _sources(args.source)
    except ValueError as e:
        print("central: %s" % e, file=sys.stderr)
        return 2
    from host_tools.casino.consumer import Consumer
    consumer = Consumer(args.nats, args.dsn, args.keys, args.casino, sources)

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print("central: consuming %s from %s into %s" % (wire.casino_stream(args.casino), args.nats,
                                                         args.dsn), flush=True)
        await consumer.run(stop)

    asyncio.run(main())
    print("central: %s" % " ".join("%s=%d" % kv for kv in sorted(consumer.totals().items())))
    return 0


def demo(args):
    from host_tools.casino.rig import Rig
    workdir = tempfile.mkdtemp(prefix="shoe-casino-")
    if not (args.rate > 0 and 1 <= args.tables <= 256):
        print("central demo: --rate must be positive and --tables 1..256", file=sys.stderr)
        return 2
    rig = Rig(workdir, pits=2, tables=args.tables, rate=args.rate)
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
    viewer = None
    try:
        rig.start()
        print("casino demo: hub %s, leaves %s, PostgreSQL %s" % (
            rig.hub.url, ", ".join("%s %s" % (p, leaf.url) for p, leaf in rig.leaves.items()),
            rig.pg.dsn))
        viewer = rig._spawn([sys.executable, "-m", "host_tools.cli", "central", "view", "--dsn",
                             rig.pg.dsn, "--host", args.host, "--port", str(args.port)], "view.log")
        print("  the central view (read-only): http://%s:%d/" % (args.host, args.port))
        print("  pit stores: %s" % ", ".join(rig.store_path(p) for p in rig.pits))
        print("  look: psql \"%s\" -c 'SELECT pit, tbl, count(*) FROM events GROUP BY 1, 2'" % rig.pg.dsn)
        print("  logs and keys: %s; dealing for %.0f s (Ctrl-C stops)" % (workdir, args.seconds),
              flush=True)
        t_end = time.monotonic() + args.seconds
        try:
            while time.monotonic() < t_end and not stopped:
                time.sleep(1)
                print("  central holds %d events" % rig.central_count(), flush=True)
        except KeyboardInterrupt:
            print("  interrupted")
        rig.stop_dealing()
        took = rig.converge(120)
        c = rig.compare()
        rc, out = rig.verify_central()
        print("casino demo: %d events in the pit stores, %d central, lost %d, duplicated %d, extra %d"
              " (caught up in %s s); shoe verify --central: %s" % (
                  c["events"], c["central"], c["lost"], c["duplicated"], c["extra"],
                  "%.1f" % took if took is not None else "more than 120", "ok" if rc == 0 else "FAILED"))
        if rc:
            print(out)
        return 0 if rc == 0 and not (c["lost"] or c["duplicated"] or c["extra"]) else 1
    finally:
        if viewer is not None and viewer.poll() is None:
            viewer.terminate()
            try:
                viewer.wait(10)
            except Exception:
                rig.kill_proc(viewer)
        rig.close()
