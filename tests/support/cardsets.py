"""Card sets the tests enrol: random distinct IDs for any decks and batches,
and one fixed 8-deck batch A whose UIDs spell deck and card (so a failing
test names the card it was dealing)."""

import random

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.cardset import registry

A = registry.BATCH_A


def make_entries(decks_a, decks_b, seed=1, kind=registry.KIND_UID, covers=0):
    """Random distinct IDs for every card of the decks, then ``covers`` cover
    cards as (ID, COVER, 0, 0)."""
    rng = random.Random(seed)
    slots = [(card, deck, batch)
             for batch, decks in ((registry.BATCH_A, decks_a), (registry.BATCH_B, decks_b))
             for deck in range(1, decks + 1) for card in range(52)]
    slots += [(registry.COVER, 0, 0)] * covers
    entries = []
    used = set()
    for card, deck, batch in slots:
        while True:
            if kind == registry.KIND_UID:
                ident = bytes([0x04]) + bytes(rng.randrange(256) for _ in range(6))
            else:
                ident = ("C%d" % rng.randrange(10 ** rng.randrange(3, 12))).encode()
            if ident not in used:
                break
        used.add(ident)
        entries.append((ident, card, deck, batch))
    return entries


def uid(deck, card):
    """The batch A tag of ``card`` (0-51) of ``deck`` (1-8)."""
    return bytes([0x04, A, deck, card, 0x77, 0x10, 0x01])


ENTRIES = [(uid(d, c), c, d, A) for d in range(1, 9) for c in range(52)] + \
    [(b"\x0c\x01", registry.COVER, 0, 0), (b"\x0c\x02", registry.COVER, 0, 0)]
SET_BYTES = registry.encode(registry.KIND_UID, ENTRIES, 8, 0)
REG = registry.Registry(SET_BYTES)
