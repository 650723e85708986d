"""Shuffles for the randomness battery, through the firmware's own code, and
two deliberately broken shufflers that the battery must catch.

* ``fair``: shuffle.Decider, exactly what the shuffler runs.
* ``modulo``: the same elevator, but each gap is a DRBG byte modulo i + 1 —
  the textbook bias rejection sampling avoids (and above 256 cards, gaps
  past 255 never happen at all).
* ``shelf``: one pass of a 10-shelf machine (Diaconis, Fulman and Holmes,
  arXiv:1107.2961): each card in turn goes to a uniformly chosen shelf, on
  top or at the bottom of that shelf's pile with probability 1/2 each, and
  the piles are stacked shelf after shelf. Fair draws, unfair mechanism.
* ``riffle``: one Gilbert-Shannon-Reeds riffle (binomial cut, cards drop
  from each half in proportion to its size): two rising sequences at most,
  the defect the rising-sequence test exists for, and which one shelf pass
  does not have (there card k+1 lands above card k half the time too).

None of this is firmware: the broken variants must never be deployable.
"""

import host_tools  # noqa: F401  (makes the firmware package importable)
from host_tools.sim import shuffles

VARIANTS = ("fair", "modulo", "shelf", "riffle")


def _firmware():
    from firmware.shuffler import draw, entropy, shuffle
    return draw, entropy, shuffle


def orders(decks, count, seed, variant="fair"):
    """count shuffles of decks * 52 cards fed in new-deck order, each a list
    of feed indices top first."""
    draw, entropy, shuffle = _firmware()
    n = decks * 52
    decider = shuffle.Decider(entropy.SeededSource(seed), max_cards=n)
    if variant == "modulo":
        decider.uniform = ModuloUniform(decider.drbg)
    out = []
    for _ in range(count):
        if variant in ("shelf", "riffle"):
            decider.drbg.reseed()
            decider.uniform.discard()
            out.append((shelf_pass if variant == "shelf" else riffle)(n, decider.uniform))
        else:
            out.append(list(decider.shuffle(n)[:n]))
    return out


def _modulo_class():
    draw, _entropy, _shuffle = _firmware()

    class Modulo(draw.Uniform):
        def below(self, n):
            return self._byte() % n

    return Modulo


def ModuloUniform(drbg):
    return _modulo_class()(drbg)


def shelf_pass(n, uniform, shelves=10):
    piles = [[] for _ in range(shelves)]
    for card in range(n):
        pile = piles[uniform.below(shelves)]
        if uniform.below(2):
            pile.insert(0, card)
        else:
            pile.append(card)
    order = []
    for pile in piles:
        order.extend(pile)
    return order


def riffle(n, uniform):
    """One GSR riffle of positions 0..n-1 drawn from the firmware's ``uniform``."""
    return shuffles.gsr_riffle(list(range(n)), lambda: uniform.below(2), uniform.below)


def drbg_bytes(seed, nbytes):
    """nbytes of the DRBG's output, seeded as the sampler seeds it."""
    _draw, entropy, shuffle = _firmware()
    decider = shuffle.Decider(entropy.SeededSource(seed), max_cards=1)
    out = bytearray(nbytes)
    chunk = bytearray(4096)
    for i in range(0, nbytes, len(chunk)):
        decider.drbg.generate_into(chunk)
        out[i:i + len(chunk)] = chunk[:nbytes - i]
    return bytes(out)
