"""Every host->shoe command, defined once (docs/protocol.md 5).

The shoe's dispatcher, the dealing-script parser (baccarat/script.py), the
bridge's control socket and ``shoe bridge --send`` all parse a command here,
so a command the bridge accepts is one the shoe accepts, with the same
message when it does not. A test checks docs/protocol.md's table against
``COMMANDS``. Events are described in link/events_schema.py, which the shoe
never imports.

The tables are tuples of short strings so the module costs the shoe little
heap. The parser and the commands every device on the link takes are in
link/commands.py, so the shuffler parses its commands without this table
(which names the game's settings, and so loads the game).
"""

from baccarat import game
from link import commands as _commands
from link import proto
from link.commands import (BLOB, CHOICE, HEX, INT, LINK_COMMANDS, MAX_SEQ, MAX_UNIX, MAX_VALUE,  # noqa: F401
                           REQUIRED, WORD)
from link.settings import BATCHES, settings_digest, settings_text  # noqa: F401 (one home, re-exported)

# An order's serial is the shuffler chip's seal counter (link/order.py): the
# ATECC608B's counters stop at 2,097,151. Here, not in link/proto.py: the
# shuffler, which loads proto on a 32-bit board short of names, never parses it.
ORDER_SERIAL = 2097151

# The shoe's own commands, then the link's (link/commands.py: every device
# takes those). name -> ((key, kind, spec, default text or REQUIRED), ...),
# in the order the canonical body lists them; see link/commands.py.
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
        # The batch the pit saw released for this shoe (the shuffler's
        # ``order`` event, e.g. A-2): the shoe then arms only that order
        # (cardset/ordercheck.py). Absent: the newest order it opened.
        ("order", WORD, None, ""),
    )),
    # A supervisor lifts the game's cold-deck stop (baccarat/game.py RUN, Ch 5A).
    ("clear_stop", ()),
    # A technician's probe (`shoe acceptance`, firmware/probes.py):
    # what the back sensor sees; the secure element's are the link's (link/commands.py).
    ("sensor", ()),
    # One part of a batch's order, sealed by the paired shuffler and relayed
    # by the pit unread (link/order.py; cardset/ordercheck.py).
    ("order", (
        ("id", WORD, None, REQUIRED),
        ("part", INT, (1, proto.ORDER_PARTS), REQUIRED),
        ("n", INT, (1, proto.ORDER_RECORDS), REQUIRED),
        ("serial", INT, (1, ORDER_SERIAL), REQUIRED),
        ("nonce", HEX, 64, REQUIRED),
        ("data", BLOB, 2 * proto.ORDER_PART, REQUIRED),
    )),
) + LINK_COMMANDS
NAMES = tuple(c[0] for c in COMMANDS)


def arguments(name):
    """The argument table of command ``name``, or None when there is no such command."""
    return _commands.arguments(name, COMMANDS)


def parse_command(body):
    """``NAME key=value ...`` (bytes or str) -> (name, {key: typed value}) with
    every default filled in, or Rejected ("unknown_command" or "malformed")
    with a one-line message naming the word at fault."""
    return _commands.parse(body, COMMANDS)


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
