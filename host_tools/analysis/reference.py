"""Plain recursive enumeration: the independent check on exact.py.

It deals every ordered sequence of cards one position at a time, exactly as
a dealer would (P1, B1, P2, B2, then the firmware's Ch 10 rules), and
settles every wager on every finished round with the settlement resolvers.
No grouping, no precomputed tables, no shortcuts: slow, and obviously right.
It shares with exact.py only what a key prices and what a settled round
returns (returns.py). Tests compare exact.py with it on small shoes;
`shoe bench analysis` times it against exact.py on a full shoe.
"""

import math

from host_tools.settle.core import cards, rules
from host_tools.settle.hands import from_cards

from .returns import STATES, gain, jobs, settings_json


def due(player, banker):
    """The hand (list) that takes the next card, or None when the round is complete."""
    n = len(player) + len(banker)
    if n < 4:  # Ch 8C: P1, B1, P2, B2
        return player if len(player) == len(banker) else banker
    p2 = cards.hand_total(player, 2)
    b2 = cards.hand_total(banker, 2)
    if rules.is_natural(p2) or rules.is_natural(b2):  # Ch 10A
        return None
    if len(player) == 2 and rules.player_draws(p2):
        return player
    if len(banker) == 2:
        p3 = cards.points(player[2]) if len(player) == 3 else rules.NO_THIRD
        if rules.banker_draws(b2, p3):
            return banker
    return None


def deal(counts, visit):
    """Call ``visit(player, banker, weight)`` for every round ``counts`` can deal.

    ``counts`` maps card int -> count (a 52-list, or 13 ranks given as their
    clubs card). ``weight`` is the number of ordered six-card sequences that
    begin with this round, so the weights sum to N(N-1)...(N-5).
    """
    counts = list(counts)
    total = sum(counts)

    def step(player, banker, weight):
        hand = due(player, banker)
        if hand is None:
            used = len(player) + len(banker)
            rest = 1
            for i in range(6 - used):
                rest *= total - used - i
            visit(player, banker, weight * rest)
            return
        for c, k in enumerate(counts):
            if k:
                counts[c] -= 1
                hand.append(c)
                step(player, banker, weight * k)
                hand.pop()
                counts[c] += 1

    step([], [], 1)


def main_distribution(counts):
    """The 400-state sequence counts, by plain dealing (compare exact.main_distribution)."""
    index = {s: i for i, s in enumerate(STATES)}
    d = [0] * len(STATES)

    def visit(player, banker, weight):
        p, b = cards.hand_total(player, len(player)), cards.hand_total(banker, len(banker))
        d[index[(p, b, len(player), len(banker))]] += weight

    deal(counts, visit)
    return d


def house_edges(counts, settings=None):
    """Every house_edge key of exact.analyse, by settling every dealt round."""
    every = jobs(settings_json(settings))
    acc = [{} for _ in every]  # per job: return -> exact integer weight, so no rounding builds up

    def visit(player, banker, weight):
        h = from_cards(player, banker)
        for i, (_key, bet, t, amount) in enumerate(every):
            g = gain(bet, h, t, amount)
            acc[i][g] = acc[i].get(g, 0) + weight

    deal(counts, visit)
    total = sum(counts)
    seq6 = 1
    for i in range(6):
        seq6 *= total - i
    return {job[0]: 1.0 - math.fsum(g * w for g, w in a.items()) / seq6 for job, a in zip(every, acc)}
