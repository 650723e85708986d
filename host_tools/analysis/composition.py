"""A shoe's composition: how many of each of the 52 cards are left.

Kept as a 52-long list of counts indexed by the firmware's card int, so the
monitor can remove a card in O(1) and the analysis can group it by point
value, rank or suit as each wager needs.
"""

from host_tools.settle.core import cards


class CompositionError(ValueError):
    pass


def full(decks):
    if not isinstance(decks, int) or decks < 1:
        raise CompositionError("decks must be a positive integer, got %r" % (decks,))
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
