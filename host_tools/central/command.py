"""`shoe central --nats URL --dsn DSN --keys DIR --casino NAME [--source PIT@DOMAIN ...]`,
`shoe central demo` and `shoe central view --dsn DSN [--host H --port P]`.

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
        # a rig (host_tools/demo): named, not imported, like the CLI's own table
        return importlib.import_module("host_tools.demo.central").run(args)
    if args.action == "view":
        if not args.dsn:
            print("central view: needs --dsn", file=sys.stderr)
            return 2
        from host_tools.central import view
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
    from host_tools.central.consumer import Consumer
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
