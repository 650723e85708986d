"""Dealing scripts: the text form of a shoe's inputs, for `shoe replay`,
tests and the emulator's simulated dealer.

One input per line; ``#`` starts a comment. A malformed line becomes an
``error`` event naming the line and the replay carries on, because a script
is also how a technician reproduces a reported problem and must never stop
half way::

    shoe decks=8 designation=ez exposed=burn batch=A
    7S up          # first burn card, exposed
    bets
    9H
    cover
    exposed
    empty

A script is ASCII text; anything may follow ``#``. A line with another
character before its comment becomes an error event naming the character by
its code and column, never by its repr: CPython and MicroPython spell the
repr of non-ASCII text differently, and both must give the same events for
the same bytes. ``run`` also takes lines as bytes, so input that is not even
UTF-8 is reported the same way instead of stopping the replay.
"""

import sys

from baccarat import cards, game


def _shoe(g, words):
    """A ``shoe`` line is the ``shoe`` command's text (link/schema.py), so a
    script, the dealer channel and a signed command accept the same settings
    with the same messages. Imported here, not at the top, so the core alone
    (`shoe replay`) loads the schema only if a script has a ``shoe`` line;
    on the shoe it is resident (link/session.py), so this is a lookup."""
    from link import proto, schema
    try:
        _name, a = schema.parse_command(" ".join(["shoe"] + words[1:]))
    except proto.Rejected as r:
        return r.message
    if isinstance(g, game.Game):
        g.new_shoe(a["decks"], a["designation"], a["exposed"], a["batch"])
    else:
        # A session (the dealer channel) also keeps the card set's name and digest.
        g.new_shoe(a["decks"], a["designation"], a["exposed"], a["batch"], a["set"], a["setdigest"], a["order"])
    return None


def _not_ascii(text):
    """Why ``text`` (str or bytes, comment already cut) is not ASCII, or None.
    A loop of small ints and one-character ASCII strings, which MicroPython
    interns: no heap allocation on the card path."""
    col = 0
    for c in text:
        col += 1
        code = c if isinstance(c, int) else ord(c)
        if code > 127:
            if isinstance(c, int):
                what = "byte 0x%02x" % code
            else:
                what = "character U+%04X" % code
            return "%s at column %d is not ASCII; script words are ASCII text" % (what, col)
    return None


def feed_line(g, text):
    """Apply one script line to game ``g``; return an error message or None."""
    text = text.split("#", 1)[0]
    problem = _not_ascii(text)
    if problem is not None:
        return problem
    return _feed(g, text)


def _feed(g, text):
    """feed_line for text already cut at its comment and known to be ASCII."""
    text = text.strip()
    if not text:
        return None
    words = text.split()
    verb = words[0].lower()
    if verb == "shoe":
        return _shoe(g, words)
    if len(words) == 1:
        if verb == "bets":
            g.bets()
            return None
        if verb == "cover":
            g.cover()
            return None
        if verb == "exposed":
            g.exposed()
            return None
        if verb == "empty":
            g.empty()
            return None
        if verb == "clear_stop" and isinstance(g, game.Game):
            # In a replayed script it stands for the supervisor's signed
            # command. The shoe's dealer channel (a session) is the dealer's
            # hands and buttons, which never lift a stop: there it is an
            # unknown input.
            g.clear_stop()
            return None
    elif verb in ("bets", "cover", "exposed", "empty"):
        return "%s takes no arguments" % verb
    if len(words) > 2 or (len(words) == 2 and words[1].lower() != "up"):
        return "expected a card with an optional 'up', got %r" % text
    try:
        c = cards.parse(words[0])
    except ValueError:
        return "unknown input %r (expected shoe, bets, cover, exposed, empty or a card such as 9H, TD, 10D, KS)" % words[0]
    g.card(c, len(words) == 2)
    return None


def run(lines, emit):
    """Feed an iterable of lines through a fresh game."""
    g = game.Game(emit)
    n = 0
    for line in lines:
        n += 1
        g.line = n
        try:
            if isinstance(line, bytes):
                line = line.split(b"#", 1)[0]
                message = _not_ascii(line)
                if message is None:
                    message = _feed(g, line.decode())
            else:
                message = feed_line(g, line)
        except Exception as e:  # a script must never stop the replay
            message = "internal error: %s" % e
        if message is not None:
            g.error(message)
        g.line = -1
    return g


def main():
    """Read a script on stdin and write one JSON event per line on stdout."""
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
    nl = b"\n"

    def emit(buf, n):
        out.write(memoryview(buf)[:n])
        out.write(nl)

    stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin

    def lines():  # bytes: a line that is not UTF-8 must not stop the replay
        while True:
            line = stdin.readline()
            if not line:
                return
            yield line

    run(lines(), emit)
    if hasattr(out, "flush"):
        out.flush()


if __name__ == "__main__":
    main()
