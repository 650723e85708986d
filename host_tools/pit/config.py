"""pit.toml: the tables of one pit, its store and where its page listens.

Every key, with a line on each, is in deploy/pit.example.toml (the README's
example; tests/e2e/test_readme.py loads it).

Plain HTTP is served on a loopback address only: anything on the LAN
would carry passwords and login tokens in clear, so a LAN ``host``
without ``cert`` and ``key`` is a PitConfigError.

Relative paths are read from the config file's directory, so the service
does not depend on where it was started. Every mistake is one line naming
the key (``table[2].port: missing``), raised as PitConfigError; nothing is
started until the whole file is good.
"""

import os
import re
import tomllib

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.baccarat import game

from host_tools.exits import ShoeError

DESIGNATIONS = tuple(d.decode() if isinstance(d, bytes) else d for d in game.DESIGNATIONS)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")

TOP_KEYS = ("store", "users", "web", "table", "casino")
CASINO_KEYS = ("nats", "casino", "pit", "domain", "nats_seed", "nats_ca")
WEB_KEYS = ("host", "port", "names", "cert", "key", "streams", "streams_per_address", "metrics_port")
TABLE_KEYS = ("name", "port", "key_file", "designation", "shoe", "limits", "language")
# The player display's label languages (host_tools/view/static/labels.js holds the words):
# English, Chinese (庄 / 闲 / 和 for Banker / Player / Tie), or both side by side.
LANGUAGES = ("en", "zh", "both")


class PitConfigError(ShoeError, ValueError):
    """One line: which key of which file is wrong and why."""


class Table:
    def __init__(self, name, port, key_file, designation, shoe, limits=None, language="en"):
        self.limits = limits
        self.language = language
        self.name = name
        self.port = port
        self.key_file = key_file
        self.designation = designation
        self.shoe = shoe

    def __repr__(self):
        return "Table(%r, %r)" % (self.name, self.port)


class Casino:
    """Where the pit publishes its store (host_tools/casino/publish.py)."""

    def __init__(self, nats, casino, pit, domain, auth=None):
        self.nats = nats
        self.casino = casino
        self.pit = pit
        self.domain = domain
        self.auth = auth   # secrets.NatsAuth: the pit's NKEY seed and the CA (None: an open broker)


class PitConfig:
    def __init__(self, path, store, users, host, port, tables, casino=None, names=(), cert=None, key=None,
                 streams=None, streams_per_address=None, metrics_port=None):
        self.names = tuple(names)
        self.cert = cert
        self.key = key
        self.streams = streams
        self.streams_per_address = streams_per_address
        self.metrics_port = metrics_port
        self.casino = casino
        self.path = path
        self.store = store
        self.users = users
        self.host = host
        self.port = port
        self.tables = tables


def _fail(path, key, why):
    raise PitConfigError("%s: %s: %s" % (path, key, why))


def _string(path, key, value, required=True):
    if value is None:
        if required:
            _fail(path, key, "missing")
        return None
    if not isinstance(value, str) or not value.strip():
        _fail(path, key, "must be a non-empty string, not %r" % (value,))
    return value


def _unknown(path, where, data, known):
    for k in data:
        if k not in known:
            _fail(path, where + k if not where else "%s.%s" % (where, k),
                  "unknown key (known: %s)" % ", ".join(known))


def load(path):
    """Parse and check ``path``; a PitConfig or PitConfigError (one line)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise PitConfigError("%s: cannot read: %s" % (path, e.strerror or e))
    except tomllib.TOMLDecodeError as e:
        raise PitConfigError("%s: not valid TOML: %s" % (path, str(e).splitlines()[0]))
    return parse(data, path)


def parse(data, path="pit.toml"):
    base = os.path.dirname(os.path.abspath(path))

    def resolve(p):
        return p if os.path.isabs(p) else os.path.join(base, p)

    _unknown(path, "", data, TOP_KEYS)
    store = resolve(_string(path, "store", data.get("store")))
    users = resolve(_string(path, "users", data.get("users", "users.json")))
    web = data.get("web", {})
    if not isinstance(web, dict):
        _fail(path, "web", "must be a table ([web])")
    _unknown(path, "web", web, WEB_KEYS)
    host = _string(path, "web.host", web.get("host", DEFAULT_HOST))
    port = web.get("port", DEFAULT_PORT)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        _fail(path, "web.port", "must be a port number 0..65535, not %r" % (port,))
    names = web.get("names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n and len(n) < 254 for n in names):
        _fail(path, "web.names", "must be a list of host names")
    cert = web.get("cert")
    tls_key = web.get("key")
    if (cert is None) != (tls_key is None):
        _fail(path, "web.cert" if cert is None else "web.key", "missing: HTTPS needs both cert and key")
    cert = resolve(_string(path, "web.cert", cert)) if cert is not None else None
    tls_key = resolve(_string(path, "web.key", tls_key)) if tls_key is not None else None
    if cert is None and not _loopback(host):
        _fail(path, "web.host", "%s is not a loopback address: serving it needs HTTPS (web.cert and web.key; "
              "`shoe pit selfsigned` makes a pair for a trial)" % host)
    caps = []
    for k in ("streams", "streams_per_address", "metrics_port"):
        v = web.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 65535):
            _fail(path, "web." + k, "must be a whole number 1..65535, not %r" % (v,))
        caps.append(v)
    tables = data.get("table")
    if tables is None:
        _fail(path, "table", "missing: name at least one [[table]]")
    if not isinstance(tables, list) or not tables:
        _fail(path, "table", "must be one or more [[table]] sections")
    out, names, ports = [], set(), set()
    for i, t in enumerate(tables):
        where = "table[%d]" % i
        if not isinstance(t, dict):
            _fail(path, where, "must be a [[table]] section")
        _unknown(path, where, t, TABLE_KEYS)
        name = _string(path, where + ".name", t.get("name"))
        if not NAME.fullmatch(name):
            _fail(path, where + ".name", "%r: use 1-32 letters, digits, '-' or '_'" % name)
        if name in names:
            _fail(path, where + ".name", "%r names two tables" % name)
        names.add(name)
        port_path = _string(path, where + ".port", t.get("port"))
        if port_path in ports:
            _fail(path, where + ".port", "%s is given to two tables" % port_path)
        ports.add(port_path)
        key_file = resolve(_string(path, where + ".key_file", t.get("key_file")))
        designation = _string(path, where + ".designation", t.get("designation", "standard"))
        if designation not in DESIGNATIONS:
            _fail(path, where + ".designation", "%r is not one of %s" % (designation, ", ".join(DESIGNATIONS)))
        shoe = _string(path, where + ".shoe", t.get("shoe"), required=False)
        limits = _string(path, where + ".limits", t.get("limits"), required=False)
        if limits is not None and (len(limits) > 40 or not limits.isprintable()):
            _fail(path, where + ".limits", "use at most 40 printable characters")
        language = _string(path, where + ".language", t.get("language", "en"))
        if language not in LANGUAGES:
            _fail(path, where + ".language", "%r is not one of %s" % (language, ", ".join(LANGUAGES)))
        out.append(Table(name, port_path, key_file, designation, shoe, limits, language))
    return PitConfig(path, store, users, host, port, out, _casino(path, data.get("casino")), names, cert, tls_key,
                     *caps)


def _loopback(host):
    from host_tools.view.guard import is_loopback
    return is_loopback(host)


def _casino(path, c):
    if c is None:
        return None
    if not isinstance(c, dict):
        _fail(path, "casino", "must be a table ([casino])")
    _unknown(path, "casino", c, CASINO_KEYS)
    url = _string(path, "casino.nats", c.get("nats"))
    if not url.startswith(("nats://", "tls://")):
        _fail(path, "casino.nats", "%r is not a nats:// or tls:// URL" % url)
    names = []
    for key in ("casino", "pit", "domain"):
        name = _string(path, "casino." + key, c.get(key), required=key != "domain")
        if name is not None and not NAME.fullmatch(name):
            _fail(path, "casino." + key, "%r: use 1-32 letters, digits, '-' or '_'" % name)
        names.append(name)
    # the pit's NATS credential: a seed file (0600) named here, or
    # SHOE_NATS_SEED in the environment; the CA its broker's certificate
    # chains to (host_tools/casino/secrets.py)
    from host_tools.casino import secrets
    seed = _string(path, "casino.nats_seed", c.get("nats_seed"), required=False)
    ca = _string(path, "casino.nats_ca", c.get("nats_ca"), required=False)
    try:
        secrets.check_url(url, "casino.nats")
        auth = secrets.NatsAuth.load(seed, ca)
    except secrets.SecretError as e:
        _fail(path, "casino.nats_seed", str(e))
    return Casino(url, *names, auth=auth)
