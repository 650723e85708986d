"""Where the casino path's secrets come from, and how they are named in a log.

A secret (a NATS user's NKEY seed, a PostgreSQL password) comes from a file
that only its owner can read (0600, checked on the descriptor read, as
protocol/keys.py does for shoe keys) or from the environment; never from the
command line, where ``ps`` and /proc/PID/cmdline show it to every user of
the machine. So a ``--dsn`` or ``--nats`` that carries a password is refused
with one line saying where to put it instead, and what is printed about a
connection is its host, port and database (``dsn_label``, ``url_label``),
never its parameters.

PostgreSQL passwords use libpq's own mechanisms: ``passfile=PATH`` in the DSN
(libpq itself ignores a passfile group or others can read) or PGPASSWORD /
PGPASSFILE in the environment. NATS credentials: ``--nats-seed FILE`` or
SHOE_NATS_SEED (the seed text itself), ``--nats-ca FILE`` or SHOE_NATS_CA
(the CA that signed the servers' certificates: not a secret).
"""

import os
import re
import ssl
import stat
import urllib.parse

from host_tools.exits import ShoeError

ENV_SEED = "SHOE_NATS_SEED"
ENV_SEED_FILE = "SHOE_NATS_SEED_FILE"
ENV_CA = "SHOE_NATS_CA"
FILE_MODE = 0o600


class SecretError(ShoeError, ValueError):
    """A secret that cannot be used, or one given where it would leak (one line)."""


def read_secret(path, what="secret"):
    """The text of a secret file (stripped); SecretError if group or others
    can read it, or it is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise SecretError("cannot read %s file %s: %s" % (what, path, e.strerror or e)) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SecretError("%s file %s is not a regular file" % (what, path))
        if mode & 0o077:
            raise SecretError("%s file %s can be read by %s (mode %03o): run chmod 600 %s, and "
                              "make a new one if anyone else may have copied it" % (
                                  what, path, "others" if mode & 0o007 else "its group",
                                  stat.S_IMODE(mode), path))
        return f.read().decode("utf-8").strip()


def write_secret(path, text):
    """Write ``text`` to a file that is 0600 from its first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                 FILE_MODE)
    with os.fdopen(fd, "w") as f:
        os.fchmod(fd, FILE_MODE)
        f.write(text if text.endswith("\n") else text + "\n")


# -- PostgreSQL ------------------------------------------------------------------

_DSN_PASSWORD = re.compile(r"(^|\s)password\s*=", re.I)


def check_dsn(dsn, option="--dsn"):
    """Refuse a connection string that holds a password (it would be on the
    command line and in every log that prints it)."""
    if _DSN_PASSWORD.search(dsn or ""):
        raise SecretError("%s holds a password: put it in a passfile (0600, passfile=PATH in the "
                          "DSN) or PGPASSWORD, never on the command line" % option)
    if "://" in (dsn or ""):
        u = urllib.parse.urlsplit(dsn)
        if u.password is not None or "password" in urllib.parse.parse_qs(u.query):
            raise SecretError("%s holds a password: put it in a passfile (0600, passfile=PATH in "
                              "the DSN) or PGPASSWORD, never on the command line" % option)
    return dsn


def dsn_label(dsn):
    """``host:port/dbname`` of a connection string: what a log may show."""
    if "://" in (dsn or ""):
        u = urllib.parse.urlsplit(dsn)
        host, port, db = u.hostname or "localhost", u.port or 5432, u.path.lstrip("/") or "?"
    else:
        kv = dict(re.findall(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn or ""))
        host = kv.get("host", "localhost").strip("'")
        port = kv.get("port", "5432").strip("'")
        db = kv.get("dbname", "?").strip("'")
    return "%s:%s/%s" % (host, port, db)


# -- NATS --------------------------------------------------------------------------

class NatsAuth:
    """A NATS user's credentials: an NKEY seed (the secret) and the CA file
    that the client checks the server's certificate against (TLS), plus the
    inbox prefix its permissions allow it to subscribe to."""

    def __init__(self, seed=None, ca_file=None, inbox=None):
        self.seed = seed
        self.ca_file = ca_file
        self.inbox = inbox

    def __repr__(self):  # never the seed
        return "NatsAuth(ca=%r, inbox=%r, seed=%s)" % (self.ca_file, self.inbox,
                                                      "set" if self.seed else "none")

    @classmethod
    def load(cls, seed_file=None, ca_file=None, inbox=None, env=None):
        """From a seed file (0600) or the environment; None when neither
        names a credential and no CA is given (an open trial broker)."""
        env = os.environ if env is None else env
        seed_file = seed_file or env.get(ENV_SEED_FILE)
        seed = read_secret(seed_file, "NATS seed") if seed_file else env.get(ENV_SEED)
        ca_file = ca_file or env.get(ENV_CA)
        if seed is None and ca_file is None:
            return None
        if seed is not None and not seed.startswith("SU"):
            raise SecretError("the NATS seed%s is not a user NKEY seed (SU...)" % (
                " in %s" % seed_file if seed_file else ""))
        return cls(seed, ca_file, inbox)

    def connect_options(self):
        opts = {}
        if self.seed:
            opts["nkeys_seed_str"] = self.seed
        if self.ca_file:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            opts["tls"] = ctx
        if self.inbox:
            opts["inbox_prefix"] = self.inbox
        return opts


def check_url(url, option="--nats"):
    """Refuse a NATS URL with user:password in it (the command line would show it)."""
    u = urllib.parse.urlsplit(url or "")
    if u.password is not None or (u.username and not u.password):
        raise SecretError("%s holds a credential: give an NKEY seed file (--nats-seed, 0600) or "
                          "%s instead" % (option, ENV_SEED))
    return url


def url_label(url):
    u = urllib.parse.urlsplit(url or "")
    return "%s://%s:%s" % (u.scheme or "nats", u.hostname or "?", u.port or 4222)
