"""Seeded shoes dealt card by card, as a firmware event stream.

Used to check the exact analysis against sampling, to drive the edge
monitor over a whole shoe, and as its benchmark workload. The stream uses
the event vocabulary of `shoe replay` (shoe, card, result, shoe_end).
"""

import random

from host_tools.settle.core import cards

from host_tools.analysis.reference import due


def deal_round(draw):
    """(player, banker) dealt by Ch 8-10 with ``draw()`` giving the next card."""
    player, banker = [], []
    hand = due(player, banker)
    while hand is not None:
        hand.append(draw())
        hand = due(player, banker)
    return player, banker


def shoe_events(seed, decks=8, cut_from_end=14):
    """Events of one seeded shoe: burn (Ch 5F), rounds until the cut card."""
    rng = random.Random(seed)
    shoe = [c for c in range(52) for _ in range(decks)]
    rng.shuffle(shoe)
    pos = [0]
    rnd = [0]

    def card(where):
        c = shoe[pos[0]]
        pos[0] += 1
        return {"type": "card", "round": rnd[0], "pos": where, "card": cards.name(c), "up": False}

    yield {"type": "shoe", "decks": decks, "seed": seed}
    first = card("BURN")
    yield first
    for _ in range(cards.burn_count(cards.parse(first["card"]))):
        yield card("BURN")
    while len(shoe) - pos[0] > cut_from_end:
        rnd[0] += 1
        events = []

        def draw():
            e = card("")
            events.append(e)
            return cards.parse(e["card"])

        player, banker = deal_round(draw)
        for e, where in zip(events, _positions(len(player), len(banker))):
            e["pos"] = where
            yield e
        yield {
            "type": "result",
            "round": rnd[0],
            "player": [cards.name(c) for c in player],
            "banker": [cards.name(c) for c in banker],
        }
    yield {"type": "shoe_end"}


def _positions(np, nb):
    out = ["P1", "B1", "P2", "B2"]
    if np == 3:
        out.append("P3")
    if nb == 3:
        out.append("B3")
    return out
