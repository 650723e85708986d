"""Rebuilding the shoe's game from its journal: at boot, and in a refill
(events that did not fit the outbox brought back into it).

The core is deterministic, so replaying the journal's inputs into a fresh
Game rebuilds the round, the seq counter and every unacked event byte for
byte (docs/protocol.md 8). The link's own records (literal events,
checkpoints, base, acks, counters), the marker check and the refill's
filler are the device-agnostic link/replay.py; this module adds the game's
inputs.

A refill happens during play (the host acked slowly, or the link was down
while cards were dealt), so this module stays loaded from boot on and the
refill replays into the session's preallocated scratch game: loading code or
making a game then, in a heap of small holes, could fail mid-shoe.
"""

from link import journal as _journal
from link import replay


class GameReplay(replay.Replay):
    """Journal records -> game inputs, into ``game`` (the session's own at
    boot, its scratch game in a refill)."""

    def __init__(self, session, game, boot, on_base, on_ack=None):
        replay.Replay.__init__(self, session, game.events.emit, boot, on_base, on_ack)
        self.game = game

    def other(self, kind, body, blen):
        g = self.game
        s = self.s
        if kind == _journal.CARD:
            c, up, ident = _journal.card_fields(body, blen)
            g.deck_of = 0
            if ident >= 0 and s.intake is not None:
                s.intake.mark(ident)  # this physical card has left the shoe
                g.deck_of = s.intake.registry.deck(ident)
            g.card(c, up)
        elif kind == _journal.BETS:
            g.bets()
        elif kind == _journal.COVER:
            g.cover()
        elif kind == _journal.EXPOSED:
            g.exposed()
        elif kind == _journal.EMPTY:
            g.empty()
        elif kind == _journal.CLEAR_STOP:
            g.clear_stop()
        elif kind == _journal.ORDER_STOP:
            g.mismatch(body)
        elif kind == _journal.NEW_SHOE or kind == _journal.QUIET_SHOE:
            decks, designation, exposed, batch, settings = _journal.shoe_fields(body, blen)
            checked = b""
            if s.intake is not None and s.intake.check is not None:
                settings, checked = s.intake.check.unjournaled(settings)
            if self.boot:
                s.settings = settings
                s.shoe_values = (decks, designation, exposed, batch)
            if s.intake is not None:
                s.intake.new_shoe(batch)
                if checked:
                    s.intake.check.dealt(checked)  # no order at or below this shoe's is taken again
            # A compacted journal's shoe record follows its events as literals,
            # so replaying it must not emit them a second time.
            s.mute = kind == _journal.QUIET_SHOE
            g.new_shoe(decks, designation, exposed, batch, checked)
            s.mute = False
        else:
            return False
        return True


def boot(s):
    """Replay the journal into the session's game; return (status, message,
    sound bytes, why records were lost or None)."""
    return replay.scan(s, GameReplay(s, s.game, True, s.base))


def _into_scratch(s, filler):
    s.filler = filler
    return GameReplay(s, s.scratch, False, filler.base, filler.ack)


def refill(s):
    """Replay the journal into the session's scratch game, brought back to
    a new game's state first, to bring events that did not fit in the
    outbox back into it."""
    s.scratch.reset()
    try:
        replay.refill(s, _into_scratch)
    finally:
        s.filler = None
