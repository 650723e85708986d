"""`shoe pit --config pit.toml`, `shoe pit adduser NAME --role ROLE` and
`shoe pit selfsigned [--name HOST ...]`.

The service runs every table of pit.toml (host_tools/pit/config.py) with one
supervised bridge thread each (service.py) and serves the page and its API
(web.py) at the configured address. `adduser` writes the users file named
in pit.toml (argon2 hashes, mode 0600); the password is read from the
terminal, or from stdin's first line with --password-stdin. `selfsigned`
writes a trial certificate and key where [web] cert and key say (or
tls/pit.crt and tls/pit.key beside pit.toml) for the names given.

Exit statuses (host_tools/exits.py): 0 ok; 2 a bad pit.toml, key file,
user or password (one line); 5 the store cannot be used; 9 the page's
address cannot be listened on.
"""

import asyncio
import getpass
import logging
import os
import signal
import sys

from host_tools import logfile
from host_tools.exits import EXIT_LISTEN, EXIT_OK, EXIT_STORE, EXIT_USAGE
from host_tools.pit import config as config_mod
from host_tools.pit import users as users_mod
from host_tools.store import db


def add_arguments(parser):
    parser.add_argument("action", nargs="?", choices=("serve", "adduser", "selfsigned"), default="serve",
                        help="serve (default), adduser or selfsigned")
    parser.add_argument("user", nargs="?", help="adduser: the user's name")
    parser.add_argument("--config", default="pit.toml", help="the pit's config (default pit.toml)")
    parser.add_argument("--role", choices=users_mod.ROLES, help="adduser: " + ", ".join(users_mod.ROLES))
    parser.add_argument("--name", action="append", default=[],
                        help="selfsigned: a host name or address the certificate names (repeat)")
    parser.add_argument("--password-stdin", action="store_true",
                        help="adduser: read the password from stdin's first line")


def run(args):
    if args.action == "selfsigned" and not os.path.exists(args.config):
        # A trial pair comes before the pit.toml that will name it: written
        # where that pit.toml's defaults look (tls/ beside it).
        return _selfsigned(args, None)
    try:
        cfg = config_mod.load(args.config)
    except config_mod.PitConfigError as e:
        print("pit: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    if args.action == "adduser":
        return _adduser(args, cfg)
    if args.action == "selfsigned":
        return _selfsigned(args, cfg)
    return _serve(cfg)


def tls_paths(cfg):
    base = os.path.dirname(os.path.abspath(cfg.path))
    return (cfg.cert or os.path.join(base, "tls", "pit.crt"), cfg.key or os.path.join(base, "tls", "pit.key"))


def _audit_setting(cfg, what):
    """A setting changed from the command line is an audit row too (who: the
    system account that ran it; where: this host)."""
    from host_tools.store import audit
    try:
        with db.Store(cfg.store) as store:
            def write():
                store.db.execute("BEGIN IMMEDIATE")
                try:
                    audit.ensure(store.db)
                    audit.record(store.db, getpass.getuser(), "shell", "localhost", "-", "setting", what, "ok")
                except BaseException:
                    store.db.execute("ROLLBACK")
                    raise
                store.db.execute("COMMIT")
            store._retry(write)
    except (db.StoreError, OSError) as e:
        print("pit: note: the change is made but not in the audit log: %s" % e, file=sys.stderr)


def _selfsigned(args, cfg):
    """``cfg`` None: no pit.toml yet; the pair goes to tls/ beside where it
    will be, for --name or the default host, and no store is touched."""
    from host_tools.pit import tls
    if cfg is None:
        base = os.path.dirname(os.path.abspath(args.config))
        cert, key = os.path.join(base, "tls", "pit.crt"), os.path.join(base, "tls", "pit.key")
        names = args.name or [config_mod.DEFAULT_HOST]
    else:
        cert, key = tls_paths(cfg)
        names = args.name or list(cfg.names) + [cfg.host]
    try:
        tls.selfsigned(cert, key, names)
    except tls.TLSError as e:
        print("pit: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    if cfg is not None:
        _audit_setting(cfg, "new self-signed TLS pair %s for %s" % (cert, ", ".join(names)))
    print("pit: wrote %s and %s (key 0600) for %s; in pit.toml [web]: cert = %r, key = %r"
          % (cert, key, ", ".join(names), cert, key))
    return EXIT_OK


def _adduser(args, cfg):
    if not args.user or not args.role:
        print("pit: adduser needs a NAME and --role %s" % "|".join(users_mod.ROLES), file=sys.stderr)
        return EXIT_USAGE
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif not sys.stdin.isatty():
        print("pit: adduser asks for the password on a terminal, and there is none: run it in one, or "
              "give the password as stdin's first line with --password-stdin", file=sys.stderr)
        return EXIT_USAGE
    else:
        password = getpass.getpass("password for %s: " % args.user)
        if getpass.getpass("again: ") != password:
            print("pit: the passwords differ; nothing written", file=sys.stderr)
            return EXIT_USAGE
    try:
        users_mod.add(cfg.users, args.user, args.role, password)
    except users_mod.UsersError as e:
        print("pit: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print("pit: cannot write %s: %s" % (cfg.users, e.strerror or e), file=sys.stderr)
        return EXIT_USAGE
    _audit_setting(cfg, "user %s role %s" % (args.user, args.role))
    print("%s is a %s (%s)" % (args.user, args.role, cfg.users))
    return EXIT_OK


def _serve(cfg):
    from host_tools.pit import serving, tls
    from host_tools.pit.service import Pit

    handler = logfile.to_file(cfg.store + ".pit.log")
    try:
        users_mod.load(cfg.users)
        ssl_context = tls.context(cfg.cert, cfg.key) if cfg.cert else None
        soft = serving.raise_nofile()
        pit = Pit(cfg)
    except (users_mod.UsersError, ValueError) as e:  # KeyFileError and TLSError are ValueErrors
        print("pit: %s" % e, file=sys.stderr)
        logging.getLogger("shoe").removeHandler(handler)
        handler.close()
        return EXIT_USAGE
    except db.StoreError as e:
        print("pit: %s" % e, file=sys.stderr)
        logging.getLogger("shoe").removeHandler(handler)
        handler.close()
        return EXIT_STORE
    logging.getLogger("shoe.pit").info("open-file limit %d", soft)
    pit.start()
    try:
        return asyncio.run(serve(pit, cfg, ssl_context, "pit"))
    finally:
        pit.close()
        logging.getLogger("shoe").removeHandler(handler)
        handler.close()


async def serve(pit, cfg, ssl_context, who, announce=None):
    """Serve the page of a started ``pit`` until SIGINT or SIGTERM (shared
    with `shoe demo --serve`); 0, or EXIT_LISTEN when the address is taken."""
    from aiohttp import web

    from host_tools.pit import serving
    from host_tools.view import metrics
    from host_tools.pit.web import make_app

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    connections, streams = serving.budget(len(pit.runners))
    app = make_app(pit, cfg.users, tls=ssl_context is not None, streams=min(streams, cfg.streams or streams))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    servers = []
    try:
        try:
            server, port, _limited = await serving.listen(runner, cfg.host, cfg.port, ssl_context, connections)
            servers.append(server)
            if cfg.metrics_port:
                mrunner = web.AppRunner(metrics.app(pit, app))
                await mrunner.setup()
                await web.TCPSite(mrunner, "127.0.0.1", cfg.metrics_port).start()
                servers.append(mrunner)
        except OSError as e:
            print("%s: cannot listen on %s:%d: %s" % (who, cfg.host, cfg.port, e.strerror or e), file=sys.stderr)
            return EXIT_LISTEN
        scheme = "https" if ssl_context is not None else "http"
        print("%s: %d tables, page at %s://%s:%d/" % (who, len(pit.runners), scheme, cfg.host, port), flush=True)
        if announce is not None:
            announce(port)
        await stop.wait()
        return EXIT_OK
    finally:
        for s in servers:
            if isinstance(s, web.AppRunner):
                await s.cleanup()
            else:
                s.close()
        await runner.cleanup()
