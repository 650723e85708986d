"""Seeded shoes dealt card by card, as the firmware's event stream.

Used to check the exact analysis against sampling, to drive the edge
monitor over a whole shoe, and as its benchmark workload.
"""

import json

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
    """The game's events of one seeded shoe, as the firmware makes them:
    the simulated dealer's script (host_tools/sim/dealer.py: burn per Ch 5F,
    rounds by Ch 8-10, the cover card ``cut_from_end`` cards from the
    bottom) dealt through a shoe stream (host_tools/sim/shoestream.py, the
    firmware's game and link under CPython). Link events (boot, checkpoint)
    are left out: the analysis reads the game."""
    from host_tools.sim import dealer
    from host_tools.sim.shoestream import ShoeStream
    stream = ShoeStream("SIM", lines=dealer.script(seed, decks=decks, cover_depth=cut_from_end))
    try:
        while True:
            try:
                body = stream.next()[1]
            except StopIteration:
                return
            event = json.loads(body)
            if event.get("source") is None:
                yield event
    finally:
        stream.close()
