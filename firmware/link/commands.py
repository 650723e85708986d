"""How a host->device command is parsed, and the commands every device on
the link takes (secure, sign, status, time, clear_tilt), defined once
(docs/protocol.md 5).

A command table is a tuple of ``(name, ((key, kind, spec, default), ...))``
rows; ``parse(body, table)`` checks a body against one. The shoe's table
(link/schema.py) is its own commands followed by ``LINK_COMMANDS``; the
shuffler's, ``SHUFFLER_COMMANDS``, is here, so it never loads the shoe's,
which name the game's settings. This module imports only
link/proto.py: `shoe replay` parses a script's command lines with it
without loading the link. Parsing allocates, but a command is a rare,
human-paced input, never on a per-card path.
"""

from link.proto import Rejected

# Argument kinds.
INT = "int"        # decimal digits within (low, high)
CHOICE = "choice"  # one of the names; the typed value is its index + first code
WORD = "word"      # any value (1-32 of the characters below), kept as text
HEX = "hex"        # hex digits, kept as text; spec None (1-32 of them) or the exact count
BLOB = "blob"      # an even number of hex digits, at most spec of them, kept as text (link/order.py)

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
#
# ``secure`` and ``sign`` are a technician's bench questions (`shoe
# acceptance`): the secure element, and a report digest signed by it, by the
# same code on both devices (firmware/probes.py). Each device's ACTIONS
# gives them (link/session.py, shuffler/link.py); the link's own
# (link/dispatch.py LINK_ACTIONS) are status, time and clear_tilt. One table,
# not two: the shuffler's boot, the boot check and a bench question leave 7
# of its 1,260 interned names before the next pool of 9,040 bytes (32-bit
# wasm32 VM, MicroPython 1.27.0: python -m host_tools.qa.shuffler_heap32;
# docs/shuffler.md, "Footprint").
LINK_COMMANDS = (
    ("secure", ()),
    ("sign", (("digest", HEX, 64, REQUIRED),)),
    ("status", ()),
    ("time", (("t", INT, (0, MAX_UNIX), REQUIRED),)),
    ("clear_tilt", (("seq", INT, (0, MAX_SEQ), "0"),)),
)

# The shuffler's table: `sensor` (what its sensors read now, an `inputs`
# event) and `cycle`, then the link's. Here rather than in shuffler/link.py
# (which uses it) so that the pit's bridge checks a shuffler command's body
# against it without importing the shuffler's session class. Names the
# shuffler's boot already interns, but for ``SHUFFLER_COMMANDS``.
SHUFFLER_COMMANDS = (("sensor", ()), ("cycle", ())) + LINK_COMMANDS


def arguments(name, table):
    """The argument table of command ``name``, or None when ``table`` has no such command."""
    for n, args in table:
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
    """One argument's value, checked against its kind, as the device uses it."""
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
    if kind == BLOB:
        if len(text) & 1:
            raise _bad(name, "%s must be an even number of hex digits, got %d" % (key, len(text)))
        kind = HEX
        spec = None
    if kind == HEX:
        for ch in text:
            if ch not in _HEX_CHARS:
                raise _bad(name, "%s must be hex digits, got %r" % (key, text[:MAX_VALUE]))
        if spec and len(text) != spec:
            raise _bad(name, "%s must be %d hex digits, got %d" % (key, spec, len(text)))
    return text


def _words(body):
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode()
        except UnicodeError:
            raise Rejected("malformed", "the command is not UTF-8 text")
    return body.split()


def parse(body, table):
    """``NAME key=value ...`` (bytes or str) -> (name, {key: typed value}) with
    every default filled in, or Rejected ("unknown_command" or "malformed")
    with a one-line message naming the word at fault."""
    words = _words(body)
    name = words[0] if words else ""
    args = arguments(name, table)
    if args is None:
        raise Rejected("unknown_command", "unknown command %r (known: %s)"
                       % (name, ", ".join([c[0] for c in table])), name or None)
    given = {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if not eq:
            raise _bad(name, "expected key=value, got %r" % w)
        arg = None
        for a in args:
            if a[0] == key:
                arg = a
        if arg is None:
            raise _bad(name, "unexpected argument %r (allowed: %s)"
                       % (w, ", ".join([a[0] for a in args]) or "none"))
        if key in given:
            raise _bad(name, "%s given twice" % key)
        longest = arg[2] if arg[1] in (HEX, BLOB) and arg[2] else MAX_VALUE
        if not 1 <= len(value) <= longest or any(ch not in _VALUE_CHARS for ch in value):
            raise _bad(name, "%s=%r must be 1-%d of A-Z a-z 0-9 . _ -" % (key, value, longest))
        given[key] = _typed(name, arg, value)
    for arg in args:
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
    if kind == HEX and spec:
        return "%d hex digits" % spec
    if kind == BLOB:
        return "up to %d hex digits" % spec
    return "1-%d characters" % MAX_VALUE
