"""A pit command line ("bets", "new_shoe", "time t=...") checked with the
shoe's own parser before anything signs it.

The bridge's keyboard and control socket (host_tools/bridge/) and the pit
page's command API (host_tools/pit/web.py) all take commands as these
lines, so a bad argument gets the shoe's own message wherever it is typed.
"""

import time

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.link import schema
from firmware.link.proto import Rejected


def usage():
    """The requests a command line may name, for an error message."""
    words = []
    for name, args in schema.COMMANDS:
        shown = "new_shoe" if name == "shoe" else name
        if args:
            shown += " [%s]" % " ".join(a[0] + "=" for a in args)
        words.append(shown)
    return ", ".join(words + ["state"])


def parse_command_line(line):
    """A command line -> (command name, args) for the shoe, or ("state", None).

    The line is checked by the shoe's own parser (link/schema.py) so a bad
    argument is refused here, with the shoe's message, and never signed;
    args come back in the schema's canonical order. ``new_shoe`` is ``shoe``
    and ``time`` without ``t=`` is the pit PC's clock. Raises ValueError
    with the reason for anything else.
    """
    words = line.split()
    if not words:
        raise ValueError("empty request")
    name, rest = words[0], words[1:]
    if name == "new_shoe":
        name = "shoe"
    if name == "state" and not rest:
        return "state", None
    if name not in schema.NAMES:
        raise ValueError("unknown request %r (%s)" % (line, usage()))
    if name == "time" and not rest:
        rest = ["t=%d" % int(time.time())]
    try:
        schema.parse_command(" ".join([name] + rest))
        body = schema.command_text(name, [w.split("=", 1) for w in rest])
    except Rejected as e:
        raise ValueError(e.message)
    pairs = [tuple(w.split("=", 1)) for w in body.split()[1:]]
    return name, pairs or None
