"""A one-deck-per-batch card set and the shuffler's custody machine fed from
it under CPython, for the custody tests (tests/unit/test_shuffler_batch.py)
and the oracle of the same run in the MicroPython VM
(tests/e2e/test_shuffler_batch_vm.py)."""

from firmware.cardset import registry
from firmware.shuffler import custody, entropy, shuffle


A, B = registry.BATCH_A, registry.BATCH_B


def _uid(batch_, deck, card):
    return bytes([0x04, batch_, deck, card, 0x5A, 0xA5, 0x11])


def make_set(decks_a=1, decks_b=1):
    entries = [(_uid(b, d, c), c, d, b) for b, decks in ((A, decks_a), (B, decks_b))
               for d in range(1, decks + 1) for c in range(52)]
    entries += [(b"\x0c\x0c\x01", registry.COVER, 0, 0), (b"\x0c\x0c\x02", registry.COVER, 0, 0)]
    return registry.Registry(registry.encode(registry.KIND_UID, entries, decks_a, decks_b))


REG = make_set()


def rec(b, deck, card):
    uid = _uid(b, deck, card)
    return REG.find(uid, len(uid))


def clean_reads(b=A, decks=1):
    return [(rec(b, d, c), b) for d in range(1, decks + 1) for c in range(52)]


def machine(seed=5):
    return custody.Shuffler(REG, shuffle.Decider(entropy.SeededSource(seed), max_cards=52), max_cards=52)


def feed(m, b, reads):
    out = m.load(b)
    for r, colour in reads:
        out += list(m.read(r, colour))
    return out + m.end(b)
