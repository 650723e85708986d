"""Shuffle models for tests and dealing scripts: how a shoe's cards may be ordered.

A card here is a physical card ``(code, deck)``: ``code`` as the firmware
numbers faces (rank*4 + suit), ``deck`` 1..D as the card set enrols it.

- **factory**: as decks leave the printer (here: spades and diamonds ace to
  king, clubs and hearts king to ace, the common US order);
- **suit and sequence**: the Ch 4 inspection order, every suit ace to king,
  clubs, diamonds, hearts, spades;
- **riffles**: the Gilbert-Shannon-Reeds model of a riffle shuffle (cut
  binomially, then drop cards from either packet with probability
  proportional to its size), the model Bayer and Diaconis showed matches
  real riffles; applied ``k`` times to each deck on its own, the decks then
  stacked, or to a whole stack (the previous shoe's discards);
- **uniform**: Fisher-Yates (Python's ``random.shuffle``).

Every model ends with the cut of Ch 5B (the cut card at least 10 cards from
either end; the cards above it go to the bottom). ``dealing_script`` deals a
stack by the rules through the simulated dealer (host_tools/sim/dealer.py), so
any model can be fed to `shoe deal` or the emulator.
"""

import random

from host_tools.sim import dealer as _dealer

CUT_MIN = 10  # Ch 5B(4)
_ASC = list(range(13))
_DESC = list(range(12, -1, -1))
# suit codes: 0 clubs, 1 diamonds, 2 hearts, 3 spades (baccarat/cards.py)
FACTORY = ((3, _ASC), (1, _ASC), (0, _DESC), (2, _DESC))
SUIT_AND_SEQUENCE = ((0, _ASC), (1, _ASC), (2, _ASC), (3, _ASC))
DESCENDING = ((0, _DESC), (1, _DESC), (2, _DESC), (3, _DESC))


def deck(number, order=FACTORY):
    """One deck in ``order``: (suit, ranks) per suit, as physical cards."""
    return [(rank * 4 + suit, number) for suit, ranks in order for rank in ranks]


def stack(decks, order=FACTORY):
    return [c for d in range(1, decks + 1) for c in deck(d, order)]


def riffle(cards, rng):
    """One Gilbert-Shannon-Reeds riffle, drawn with ``rng`` (random.Random)."""
    return gsr_riffle(cards, lambda: rng.random() < 0.5, lambda m: rng.random() * m)


def gsr_riffle(cards, coin, below):
    """One Gilbert-Shannon-Reeds riffle: a binomial cut (one ``coin()`` per
    card, true half the time), then each card dropped from a packet with
    the chance of that packet's share of the cards left (``below(m)``:
    uniform in [0, m)). The random source is the caller's: Python's for the
    models here, the firmware's DRBG for the shuffler's variants
    (host_tools/qa/shuffler_variants.py)."""
    cut = sum(1 for _ in range(len(cards)) if coin())
    left, right = cards[:cut], cards[cut:]
    out = []
    i = j = 0
    while i < len(left) or j < len(right):
        a, b = len(left) - i, len(right) - j
        if below(a + b) < a:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out


def cut(cards, rng):
    """Ch 5B: the cards above a cut at least CUT_MIN from either end go to the bottom."""
    k = rng.randint(CUT_MIN, len(cards) - CUT_MIN)
    return cards[k:] + cards[:k]


def riffled_decks(decks, riffles, rng, order=FACTORY):
    """Each deck riffled ``riffles`` times on its own, then stacked and cut."""
    out = []
    for d in range(1, decks + 1):
        cards = deck(d, order)
        for _ in range(riffles):
            cards = riffle(cards, rng)
        out += cards
    return cut(out, rng)


def riffled_stack(cards, riffles, rng):
    """A whole stack (the previous shoe's discards) riffled, then cut."""
    cards = list(cards)
    for _ in range(riffles):
        cards = riffle(cards, rng)
    return cut(cards, rng)


def unshuffled(decks, rng, order=FACTORY):
    """Decks as they come, only cut."""
    return cut(stack(decks, order), rng)


def uniform(decks, rng):
    cards = stack(decks)
    rng.shuffle(cards)
    return cards


MODELS = ("factory", "suit-and-sequence", "one-riffle", "two-riffles", "uniform")


def model(name, decks, rng):
    """A stack by model name (MODELS)."""
    if name == "factory":
        return unshuffled(decks, rng, FACTORY)
    if name == "suit-and-sequence":
        return unshuffled(decks, rng, SUIT_AND_SEQUENCE)
    if name == "one-riffle":
        return riffled_decks(decks, 1, rng)
    if name == "two-riffles":
        return riffled_decks(decks, 2, rng)
    if name == "uniform":
        return uniform(decks, rng)
    raise ValueError("unknown shuffle model %r (known: %s)" % (name, ", ".join(MODELS)))


def dealing_script(cards, seed=1, decks=8):
    """Dealing-script lines for a stack of physical cards, dealt by the rules
    (the simulated dealer's burn, rounds and cover card)."""
    d = _dealer.Dealer(seed, decks=decks)
    d.stack = [c for c, _deck in cards]
    return list(d.lines())


def events(cards, decks=8):
    """The game events of a stack dealt from top to bottom as a score reads
    them (one shoe event, a card event per card with its deck), without the
    rules: for statistics over many shoes."""
    out = [{"type": "shoe", "decks": decks, "batch": "A"}]
    for c, d in cards:
        out.append({"type": "card", "card": _name(c), "deck": d})
    return out


def _name(c):
    return "A23456789TJQK"[c >> 2] + "CDHS"[c & 3]


def rng(seed):
    return random.Random(seed)


def main(argv=None):
    """`python -m host_tools.sim.shuffles MODEL [--seed N] [--decks D]`: a
    dealing script of that model on stdout, for `shoe deal`."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="python -m host_tools.sim.shuffles")
    parser.add_argument("model", choices=MODELS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--decks", type=int, default=8, choices=range(1, 17), metavar="1..16")
    args = parser.parse_args(argv)
    stack = model(args.model, args.decks, rng(args.seed))
    sys.stdout.write("\n".join(dealing_script(stack, args.seed, args.decks)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
