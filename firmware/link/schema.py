"""Every host->shoe command, defined once (docs/protocol.md 5).

The shoe's dispatcher, the dealing-script parser (baccarat/script.py), the
bridge's control socket and ``shoe bridge --send`` all parse a command here,
so a command the bridge accepts is one the shoe accepts, with the same
message when it does not. A test checks docs/protocol.md's table against
``COMMANDS``. Events are described in link/events_schema.py, which the shoe
never imports.

The tables are tuples of short strings so the module costs the shoe little
heap; parsing allocates, but a command is a rare, human-paced input, never
on the per-card path.
"""

from baccarat import game
from link.proto import Rejected
from link.settings import BATCHES, settings_digest, settings_text  # noqa: F401 (one home, re-exported)

# Argument kinds.
INT = "int"        # decimal digits within (low, high)
CHOICE = "choice"  # one of the names; the typed value is its index + first code
WORD = "word"      # any value (1-32 of the characters below), kept as text
HEX = "hex"        # hex digits, kept as text

MAX_VALUE = 32
_VALUE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
_HEX_CHARS = "0123456789abcdefABCDEF"


REQUIRED = None  # the default of an argument that must be given
MAX_UNIX = 4102444800  # 2100-01-01: a clock set beyond this is a typo
MAX_SEQ = 0x7FFFFFFF

# name -> ((key, kind, spec, default text or REQUIRED), ...), in the order
# the canonical body lists them. spec: (low, high) for INT, (names, first
# code) for CHOICE, None otherwise. A default of "" means "absent": the typed
# value is "".
COMMANDS = (
    ("bets", ()),
    ("exposed", ()),
    ("shoe", (
        ("decks", INT, (1, 16), "8"),
        ("designation", CHOICE, (game.DESIGNATIONS, 0), "standard"),
        ("exposed", CHOICE, (game.EXPOSED_MODES, 0), "simulated"),
        ("batch", CHOICE, (BATCHES, 1), "A"),
        ("set", WORD, None, ""),
        ("setdigest", HEX, None, ""),
    )),
    ("status", ()),
    ("time", (("t", INT, (0, MAX_UNIX), REQUIRED),)),
    ("clear_tilt", (("seq", INT, (0, MAX_SEQ), "0"),)),
)
NAMES = tuple(c[0] for c in COMMANDS)


def arguments(name):
    """The argument table of command ``name``, or None when there is no such command."""
    for n, args in COMMANDS:
        if n == name:
            return args
    return None


def _bad(name, message):
    return Rejected("malformed", name + ": " + message, name)


def _or_list(names):
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _typed(name, arg, text):
    """One argument's value, checked against its kind, as the shoe uses it."""
    key, kind, spec, _default = arg
    if kind == INT:
        if not text.isdigit():
            raise _bad(name, "%s must be a whole number, got %r" % (key, text))
        v = int(text)
        if v < spec[0] or v > spec[1]:
            raise _bad(name, "%s must be %d to %d, got %d" % (key, spec[0], spec[1], v))
        return v
    if kind == CHOICE:
        names = spec[0]
        for i in range(len(names)):
            if names[i] == text:
                return i + spec[1]
        raise _bad(name, "%s must be %s, got %r" % (key, _or_list(names), text))
    if kind == HEX:
        for ch in text:
            if ch not in _HEX_CHARS:
                raise _bad(name, "%s must be hex digits, got %r" % (key, text))
    return text


def _words(body):
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode()
        except UnicodeError:
            raise Rejected("malformed", "the command is not UTF-8 text")
    return body.split()


def parse_command(body):
    """``NAME key=value ...`` (bytes or str) -> (name, {key: typed value}) with
    every default filled in, or Rejected ("unknown_command" or "malformed")
    with a one-line message naming the word at fault."""
    words = _words(body)
    name = words[0] if words else ""
    table = arguments(name)
    if table is None:
        raise Rejected("unknown_command", "unknown command %r (known: %s)" % (name, ", ".join(NAMES)),
                       name or None)
    given = {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if not eq:
            raise _bad(name, "expected key=value, got %r" % w)
        arg = None
        for a in table:
            if a[0] == key:
                arg = a
        if arg is None:
            raise _bad(name, "unexpected argument %r (allowed: %s)"
                       % (w, ", ".join([a[0] for a in table]) or "none"))
        if key in given:
            raise _bad(name, "%s given twice" % key)
        if not 1 <= len(value) <= MAX_VALUE or any(ch not in _VALUE_CHARS for ch in value):
            raise _bad(name, "%s=%r must be 1-%d of A-Z a-z 0-9 . _ -" % (key, value, MAX_VALUE))
        given[key] = _typed(name, arg, value)
    for arg in table:
        key, default = arg[0], arg[3]
        if key in given:
            continue
        if default is REQUIRED:
            raise _bad(name, "%s= is required (%s)" % (key, _describe(arg)))
        given[key] = _typed(name, arg, default) if default else ""
    return name, given


def _describe(arg):
    key, kind, spec, _default = arg
    if kind == INT:
        return "a whole number %d to %d" % spec
    if kind == CHOICE:
        return _or_list(spec[0])
    return "1-%d characters" % MAX_VALUE


def command_text(name, args=None):
    """The canonical body the host signs: NAME, then the given arguments in
    the table's order. ``args`` is a dict or (key, value) pairs; a value is
    the wire text or an int. Raises Rejected exactly as the shoe would."""
    items = list(args.items()) if isinstance(args, dict) else list(args or ())
    table = arguments(name)
    words = [name]
    if table is not None:
        rank = {}
        for i in range(len(table)):
            rank[table[i][0]] = i
        items = sorted(items, key=lambda kv: rank.get(kv[0], len(table)))
    for key, value in items:
        words.append("%s=%s" % (key, value))
    text = " ".join(words)
    parse_command(text)  # the shoe's own checks, before anything is signed
    return text
