"""The batch check at the shuffler's intake (Ch 3B, Ch 4; docs/shuffler.md).

Every card fed into the shuffler is read (reader ID -> card-set record, and
the back colour the sensor saw) before it reaches the elevator. A batch may
be released only when it is *exactly* batch A or B of the enrolled card
set: every card of that batch once, nothing else. Anything else is a bad
card, and every bad card is reported with its name and its position in the
intake (1 = the first card read), because the pit must find it in a stack
of up to 416:

* ``unknown_card``   an ID the card set does not know (a foreign card)
* ``cover_card``     an enrolled cover card (it belongs to the table, Ch 9D)
* ``wrong_batch``    a card enrolled in the other batch
* ``wrong_back``     a card of this batch whose back shows another colour
                     (or its face): a counterfeit with a copied tag, or a card
                     fed face up
* ``duplicate_card`` a card already read in this batch (an extra copy)
* ``missing_card``   a card of the batch never read (reported at finish(),
                     position 0)

Memory is bounded and preallocated: one bit per card of a batch (the
registry's MAX_DECKS decks at most) and the record of each card fed, which
the commitment needs (delivered order -> record numbers). Only a bad card
allocates, to build its report. A card that is bad sets no bit, so a
counterfeit of card X counts X missing unless the genuine X is also read.
"""

from array import array

from baccarat import cards
from cardset import registry as _registry

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_CARDS = const(416)      # 8 decks, the largest Ch 3B batch
NO_SENSOR = const(-1)       # as cardset.intake: no back sensor reading
FACE = const(0)             # the sensor saw a face, not a back

UNKNOWN = "unknown_card"
COVER_CARD = "cover_card"
WRONG_BATCH = "wrong_batch"
WRONG_BACK = "wrong_back"
DUPLICATE = "duplicate_card"
MISSING = "missing_card"
KINDS = (UNKNOWN, COVER_CARD, WRONG_BATCH, WRONG_BACK, DUPLICATE, MISSING)

card_name = cards.name  # card code 0..51 -> "TD"


class Problem:
    """One bad card. ``pos`` is its 1-based intake position (0 for a missing
    card), ``record`` its card-set record (-1 when unknown or missing),
    ``card``/``deck``/``batch`` as enrolled (-1 when unknown), ``seen`` the
    back colour read, ``ident`` the ID text of an unknown card."""

    def __init__(self, kind, pos, record, card, deck, batch, seen=NO_SENSOR, ident=None):
        self.kind = kind
        self.pos = pos
        self.record = record
        self.card = card
        self.deck = deck
        self.batch = batch
        self.seen = seen
        self.ident = ident

    def name(self):
        if self.card < 0:
            return "ID " + (self.ident or "?")
        if self.card == _registry.COVER:
            return "cover card"
        return "%s of deck %d batch %s" % (card_name(self.card), self.deck, _registry.batch_name(self.batch))

    def text(self):
        where = "missing" if self.pos == 0 else "at position %d" % self.pos
        why = {
            UNKNOWN: "not in the card set",
            COVER_CARD: "a cover card belongs to the table, not to a batch",
            WRONG_BATCH: "enrolled in the other batch",
            WRONG_BACK: "back seen as %s" % ("a face" if self.seen == FACE else
                                            "batch " + _registry.batch_name(self.seen)),
            DUPLICATE: "already read in this batch",
            MISSING: "never read",
        }[self.kind]
        return "%s %s %s: %s" % (self.kind, self.name(), where, why)

    def event(self):
        """The ``batch_card`` event for the link (docs/shuffler.md)."""
        ev = {"type": "batch_card", "kind": self.kind, "pos": self.pos, "name": self.name()}
        if self.card >= 0 and self.card != _registry.COVER:
            ev["card"] = card_name(self.card)
            ev["deck"] = self.deck
        return ev


class BatchCheck:
    """Checks one batch at a time against a registry (cardset.registry).

    ``report(problem)`` is called once per bad card, as it is read, and for
    each missing card at finish(); it may send an event, log or collect.
    """

    def __init__(self, registry, report=None, max_cards=MAX_CARDS):
        self.registry = registry
        self.report = report
        self.fed = array("H", bytes(2 * max_cards))   # record of the k-th good card fed
        self._seen = bytearray((_registry.MAX_DECKS * _registry.CARDS_PER_DECK + 7) >> 3)
        self.batch = 0
        self.reads = 0
        self.good = 0
        self.bad = 0
        self.missing = 0
        self.done = False

    def start(self, batch):
        """Begin reading a batch (BATCH_A or BATCH_B) from an empty intake."""
        reg = self.registry
        if batch not in (_registry.BATCH_A, _registry.BATCH_B) or not reg.decks(batch):
            raise ValueError("card set has no batch %s" % _registry.batch_name(batch))
        if reg.decks(batch) * _registry.CARDS_PER_DECK > len(self.fed):
            raise ValueError("batch %s has %d decks, over the %d cards the shuffler holds"
                             % (_registry.batch_name(batch), reg.decks(batch), len(self.fed)))
        self.batch = batch
        seen = self._seen
        for i in range(len(seen)):
            seen[i] = 0
        self.reads = 0
        self.good = 0
        self.bad = 0
        self.missing = 0
        self.done = False

    def size(self):
        """Cards in an exactly right batch."""
        return self.registry.decks(self.batch) * _registry.CARDS_PER_DECK

    def _bad(self, kind, record, card, deck, batch, colour, ident=None):
        self.bad += 1
        if self.report is not None:
            self.report(Problem(kind, self.reads, record, card, deck, batch, colour, ident))
        return False

    def read_id(self, buf, n, colour):
        """A card read by ID (reader bytes buf[:n]); see read()."""
        i = self.registry.find(buf, n)
        if i < 0:
            self.reads += 1
            return self._bad(UNKNOWN, -1, -1, 0, 0, colour, _id_text(self.registry, buf, n))
        return self.read(i, colour)

    def read(self, record, colour):
        """The next card at the intake: its record (-1: ID not enrolled) and
        the back colour seen (batch code, FACE, or NO_SENSOR). True when the
        card is good. Allocation-free for a good card."""
        if self.done:
            raise ValueError("batch check already finished")
        self.reads += 1
        if record < 0:
            return self._bad(UNKNOWN, -1, -1, 0, 0, colour)
        reg = self.registry
        c = reg.card(record)
        deck = reg.deck(record)
        b = reg.batch(record)
        if c == _registry.COVER:
            return self._bad(COVER_CARD, record, c, 0, 0, colour)
        if b != self.batch:
            return self._bad(WRONG_BATCH, record, c, deck, b, colour)
        if colour != NO_SENSOR and colour != self.batch:
            return self._bad(WRONG_BACK, record, c, deck, b, colour)
        bit = (deck - 1) * _registry.CARDS_PER_DECK + c
        mask = 1 << (bit & 7)
        if self._seen[bit >> 3] & mask:
            return self._bad(DUPLICATE, record, c, deck, b, colour)
        self._seen[bit >> 3] |= mask
        self.fed[self.good] = record
        self.good += 1
        return True

    def finish(self):
        """Report every missing card; True when the batch is exactly right
        (every card of the batch once, no bad card): only then may it be
        shuffled and released."""
        if not self.done:
            self.done = True
            decks = self.registry.decks(self.batch)
            for d in range(decks):
                for c in range(_registry.CARDS_PER_DECK):
                    bit = d * _registry.CARDS_PER_DECK + c
                    if not self._seen[bit >> 3] & (1 << (bit & 7)):
                        self.missing += 1
                        if self.report is not None:
                            self.report(Problem(MISSING, 0, -1, c, d + 1, self.batch))
        return self.ok()

    def ok(self):
        return self.done and self.bad == 0 and self.missing == 0 and self.good == self.size()


def check(registry, batch, reads):
    """Convenience for hosts and tests: check a whole list of (record,
    colour) reads; returns (ok, [Problem, ...])."""
    found = []
    bc = BatchCheck(registry, found.append)
    bc.start(batch)
    for record, colour in reads:
        bc.read(record, colour)
    return bc.finish(), found


def _id_text(reg, buf, n):
    if reg.kind == _registry.KIND_CODE:
        return '"' + "".join(chr(buf[k]) for k in range(n)) + '"'
    return "".join("%02x" % buf[k] for k in range(n))
