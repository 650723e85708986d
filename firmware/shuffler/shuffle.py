"""The shuffle decisions of a random-gap elevator (docs/shuffler.md).

Cards are fed one at a time from the intake into a growing stack on the
elevator. Before card i (0-based) arrives the stack holds i cards, so it has
i + 1 gaps, numbered from the top: gap 0 is above the top card, gap i below
the bottom one. The core chooses the gap of every card uniformly and
independently (gap i from 0..i) and the mechanism executes the list.

Why this gives every order of n cards with probability exactly 1/n!: the
lists (g_0, ..., g_{n-1}) with 0 <= g_i <= i are 1 * 2 * ... * n = n! in
number, all equally likely, and each gives a different order, since from
the final order one reads g_{n-1} back as the number of cards above the
last card fed, removes it, and repeats. A bijection from equally likely
lists onto the n! orders makes the orders equally likely: this is the
inside-out Fisher-Yates shuffle, in its insertion form.

plan() fills a preallocated array of gaps; deliver() is the deterministic
model of what the elevator produces from them; Decider keeps the DRBG and
the buffers of one shuffler and reseeds before every batch.
"""

from array import array

from baccarat import cards
from shuffler import draw, drbg, health

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_CARDS = const(416)        # 8 decks, the largest batch of Ch 3B (2 x 8 = 16 decks)
PERSONALIZATION = b"baccarat shuffler v1"
# Ch 4B inspection order, as docs/cardset.md fixes it: spades, hearts, clubs,
# diamonds, each ace to king. Suit indices of firmware/baccarat/cards.py.
NEW_DECK_SUITS = b"\x03\x02\x00\x01"


def plan(n, uniform, out):
    """The gap of each of n cards into out[0..n-1]: out[i] uniform in 0..i."""
    if n > len(out):
        raise ValueError("batch of %d cards is over the %d the buffer holds" % (n, len(out)))
    for i in range(n):
        out[i] = uniform.below(i + 1)
    return out


def deliver(gaps, n, order):
    """What the elevator delivers: order[p] is the feed index (0 = first card
    fed) of the card at position p of the finished stack, top first.

    Card i goes into gap gaps[i] of the i-card stack: the cards at positions
    gaps[i]..i-1 move down one. Allocation-free (an explicit loop, not a
    slice copy). O(n^2) moves, about 43 000 for 8 decks.
    """
    for i in range(n):
        g = gaps[i]
        if g > i:
            raise ValueError("gap %d for card %d" % (g, i))
        j = i
        while j > g:
            order[j] = order[j - 1]
            j -= 1
        order[g] = i
    return order


def fed_card(k):
    """Card code (baccarat.cards) of the k-th card fed when each deck of the
    batch is fed in new-deck order, deck after deck."""
    j = k % 52
    return cards.make(j % 13, NEW_DECK_SUITS[j // 13])


class Decider:
    """The randomness of one shuffler: a health-tested entropy source, the
    DRBG it seeds, the draw pool and the gap and order buffers.

    ``raw`` is an entropy source (entropy.py). Construction runs the SP
    800-90B start-up test and instantiates the DRBG; an EntropyFault from
    either, or from a later reseed, must tilt the shuffler.
    """

    def __init__(self, raw, max_cards=MAX_CARDS, personalization=PERSONALIZATION):
        self.source = health.Tested(raw)
        self.source.startup()
        self.drbg = drbg.HmacDrbg(self.source)
        self.drbg.instantiate(personalization)
        self.uniform = draw.Uniform(self.drbg)
        self.gaps = array("H", bytes(2 * max_cards))
        self.order = array("H", bytes(2 * max_cards))
        self.batches = 0

    def decide(self, n):
        """Reseed from fresh entropy, then plan a batch of n cards; returns
        the gaps buffer (entries 0..n-1 are this batch's)."""
        self.drbg.reseed()
        self.uniform.discard()
        plan(n, self.uniform, self.gaps)
        self.batches += 1
        return self.gaps

    def shuffle(self, n):
        """decide() then deliver(): the order buffer, top first."""
        self.decide(n)
        return deliver(self.gaps, n, self.order)
