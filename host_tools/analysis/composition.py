"""A shoe's composition: how many of each of the 52 cards are left.

Kept as a 52-long list of counts indexed by the firmware's card int, so the
monitor can remove a card in O(1) and the analysis can group it by point
value, rank or suit as each wager needs.
"""

from host_tools.exits import ShoeError
from host_tools.settle.core import cards
from firmware.link import schema


class CompositionError(ShoeError, ValueError):
    pass


def _deck_range():
    """The decks a shoe can hold: the range of the shoe command's ``decks``
    (firmware/link/schema.py), so analysis never answers for a shoe that the
    shoe itself would refuse."""
    for key, _kind, spec, _default in schema.arguments("shoe"):
        if key == "decks":
            return spec
    raise AssertionError("link/schema.py: the shoe command has no decks argument")


DECKS = _deck_range()


def full(decks):
    low, high = DECKS
    if not isinstance(decks, int) or isinstance(decks, bool) or not low <= decks <= high:
        raise CompositionError("decks must be a whole number from %d to %d (what a shoe holds), got %r"
                               % (low, high, decks))
    return [decks] * 52


def remove(counts, card):
    """Take one card out; a card that is not there is an error, and nothing changes."""
    if counts[card] == 0:
        raise CompositionError("no %s left in the shoe to remove" % cards.name(card))
    counts[card] -= 1


def remove_names(counts, text):
    """Remove the space/comma separated card names in ``text``."""
    for token in text.replace(",", " ").split():
        try:
            c = cards.parse(token)
        except ValueError as exc:
            raise CompositionError(str(exc)) from None
        remove(counts, c)
    return counts


def by_points(counts):
    """Counts per point value 0..9 (Ch 6A)."""
    out = [0] * 10
    for c, k in enumerate(counts):
        out[cards.points(c)] += k
    return out
