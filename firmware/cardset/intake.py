"""From a reader ID to the game: the card-set checks that sit between them.

The game core trusts every card it is given, so this is where a card that
does not belong to the shoe is stopped: an ID the registry does not know, a
physical card already dealt from this shoe, or a card of the other batch (by
its enrolment or by the back colour the sensor saw). Each of those becomes
``game.alert`` and never reaches ``game.card``, so the round in progress is
exactly as if the bad card had not been drawn. The cover card (Ch 9D) is
enrolled too and goes to ``game.cover``. The normal path allocates nothing:
one binary search and one bit in a preallocated bitset.
"""

from baccarat import cards
from cardset import registry as _registry

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# What the back sensor reported for this card (drivers.tcs34725.classify),
# or NO_SENSOR on a shoe without one (the dealer's "exposed card" button is
# then the only source of face-up information, handled by the game).
NO_SENSOR = const(-1)
FACE = const(0)

# The order check's verdict on a card that is the order's (cardset/ordercheck.py
# OK, which imports this module's value rather than the other way round: a
# shoe pays for that module only when it has a reader).
ORDER_OK = const(-1)

UNKNOWN = "unknown_card"
DUPLICATE = "duplicate_card"
WRONG_BATCH = "wrong_batch"


class Intake:
    def __init__(self, registry, game):
        self.registry = registry
        self.game = game
        self.batch = _registry.BATCH_A
        # One bit per record: "this physical card has left the shoe".
        self._seen = bytearray((registry.count + 7) >> 3)
        # The record being handed to the game, -1 otherwise: the session's
        # journal stores it with the card, so that after a power cut the
        # replay can ``mark`` every physical card already dealt.
        self.taking = -1
        self.want = -1  # the order check's verdict on the card being taken (ordercheck.step)
        # The real-time check (cardset/ordercheck.py), or None: every card
        # but the cover card is compared with the committed order first.
        self.check = None

    def batch_refusal(self, batch):
        """Why a shoe cannot be dealt from ``batch`` (str), or None."""
        if batch not in (_registry.BATCH_A, _registry.BATCH_B) or not self.registry.decks(batch):
            return "new shoe refused: card set has no batch %s" % _registry.batch_name(batch)
        return None

    def new_shoe(self, batch):
        """Start a shoe dealt from ``batch``; every card may be dealt once again."""
        why = self.batch_refusal(batch)
        if why is not None:
            raise ValueError(why)
        self.batch = batch
        seen = self._seen
        for i in range(len(seen)):
            seen[i] = 0

    def take(self, buf, n, colour):
        """Hand the card with ID ``buf[:n]`` to the game; return it, COVER for
        the cover card, or -1 when it was refused with an irregularity."""
        reg = self.registry
        i = reg.find(buf, n)
        if i >= 0 and reg.card(i) == _registry.COVER:
            # Neither batch check applies: the cover card belongs to the table
            # and its back is neither batch's colour. No duplicate bit either:
            # the game itself reports a second cover card in one shoe. Nor is
            # it in the shuffler's order.
            self.game.cover()
            return _registry.COVER
        # The committed order first: whatever else is wrong with the card,
        # it is not the one the order has here (an outsider, a card of the
        # other batch, one already dealt, a switched card).
        self.want = ORDER_OK
        if self.check is not None and self.check.armed():
            self.want = self.check.step(i)
        if i < 0:
            self._stop_refused(i)
            self.game.alert(UNKNOWN, -1, "ID %s is not in the loaded card set" % _id_text(reg, buf, n))
            return -1
        c = reg.card(i)
        batch = reg.batch(i)
        if batch != self.batch:
            self._stop_refused(i)
            self.game.alert(WRONG_BATCH, c, "%s, but the shoe deals batch %s"
                            % (_where(reg, i), _registry.batch_name(self.batch)))
            return -1
        if colour > FACE and colour != self.batch:
            self._stop_refused(i)
            self.game.alert(WRONG_BATCH, c, "%s shows the back colour of batch %s"
                            % (_where(reg, i), _registry.batch_name(colour)))
            return -1
        mask = 1 << (i & 7)
        if self._seen[i >> 3] & mask:
            self._stop_refused(i)
            self.game.alert(DUPLICATE, c, "%s was already dealt from this shoe" % _where(reg, i))
            return -1
        if self.want != ORDER_OK:
            # Named before the card is dealt, so the record has it before
            # anything the card completes; the card still takes its place.
            self.game.mismatch(self.check.note(reg, self.want, i, True))
        self.taking = i
        try:
            self.game.card(c, colour == FACE)
        finally:
            self.taking = -1
        self._seen[i >> 3] |= mask
        return c

    def _stop_refused(self, i):
        """A refused card that is also not the order's: the game stops at
        once (the card itself is not dealt)."""
        if self.want != ORDER_OK:
            self.game.mismatch(self.check.note(self.registry, self.want, i, False))

    def mark(self, i):
        """Record ``i`` left the shoe earlier (journal replay after a power cut)."""
        self._seen[i >> 3] |= 1 << (i & 7)


# Message helpers: only on the irregularity path, where allocating is fine.

def _where(reg, i):
    return "%s of deck %d batch %s" % (cards.name(reg.card(i)), reg.deck(i),
                                       _registry.batch_name(reg.batch(i)))


def _id_text(reg, buf, n):
    if reg.kind == _registry.KIND_CODE:
        return '"' + "".join(chr(buf[k]) for k in range(n)) + '"'
    return "".join("%02x" % buf[k] for k in range(n))
