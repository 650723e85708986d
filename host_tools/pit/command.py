"""`shoe pit --config pit.toml` and `shoe pit adduser NAME --role viewer|supervisor`.

The service runs every table of pit.toml (host_tools/pit/config.py) with one
supervised bridge thread each (service.py) and serves the page and its API
(web.py) at the configured address. `adduser` writes the users file named
in pit.toml (argon2 hashes, mode 0600); the password is read from the
terminal, or from stdin's first line with --password-stdin.

Exit codes: 0 ok; 2 a bad pit.toml, key file, user or password (one line);
3 the page's address cannot be listened on; 5 the store cannot be used.
"""

import getpass
import logging
import sys

from host_tools.pit import config as config_mod
from host_tools.pit import users as users_mod
from host_tools.store import db

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_LISTEN = 3
EXIT_STORE = 5


def add_arguments(parser):
    parser.add_argument("action", nargs="?", choices=("serve", "adduser"), default="serve",
                        help="serve (default) or adduser")
    parser.add_argument("user", nargs="?", help="adduser: the user's name")
    parser.add_argument("--config", default="pit.toml", help="the pit's config (default pit.toml)")
    parser.add_argument("--role", choices=users_mod.ROLES, help="adduser: viewer or supervisor")
    parser.add_argument("--password-stdin", action="store_true",
                        help="adduser: read the password from stdin's first line")


def run(args):
    try:
        cfg = config_mod.load(args.config)
    except config_mod.ConfigError as e:
        print("pit: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    if args.action == "adduser":
        return _adduser(args, cfg)
    return _serve(cfg)


def _adduser(args, cfg):
    if not args.user or not args.role:
        print("pit: adduser needs a NAME and --role viewer|supervisor", file=sys.stderr)
        return EXIT_USAGE
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
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
    print("%s is a %s (%s)" % (args.user, args.role, cfg.users))
    return EXIT_OK


def _serve(cfg):
    from aiohttp import web

    from host_tools.pit.service import Pit
    from host_tools.pit.web import make_app

    handler = logging.FileHandler(cfg.store + ".pit.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("shoe")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        users_mod.load(cfg.users)
        pit = Pit(cfg)
    except (users_mod.UsersError, ValueError) as e:  # KeyFileError is a ValueError
        print("pit: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    except db.StoreError as e:
        print("pit: %s" % e, file=sys.stderr)
        return EXIT_STORE
    pit.start()
    try:
        web.run_app(make_app(pit, cfg.users), host=cfg.host, port=cfg.port, handle_signals=True,
                    print=lambda *_: print("pit: %d tables, page at http://%s:%d/" % (
                        len(pit.runners), cfg.host, cfg.port), flush=True))
    except OSError as e:
        print("pit: cannot listen on %s:%d: %s" % (cfg.host, cfg.port, e.strerror or e), file=sys.stderr)
        return EXIT_LISTEN
    finally:
        pit.close()
        root.removeHandler(handler)
        handler.close()
    return EXIT_OK
