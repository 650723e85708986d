"""Card-set file and registry under CPython (in the MicroPython VM:
tests/e2e/test_registry_vm.py).

The oracle is a plain dict built by the test from the same entries; the
registry's binary search over the file bytes must agree with it exactly.
"""

import hashlib
import os

import pytest

from host_tools.vm import ROOT
from support.cardsets import make_entries

from firmware.cardset import registry


def test_every_enrolled_id_maps_to_its_card_deck_and_batch():
    entries = make_entries(8, 8)
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 8, 8))
    assert (reg.count, reg.width, reg.decks_a, reg.decks_b) == (832, 7, 8, 8)
    for ident, card, deck, batch in entries:
        i = reg.find(ident, len(ident))
        assert i >= 0, ident.hex()
        assert (reg.card(i), reg.deck(i), reg.batch(i)) == (card, deck, batch)


def test_ids_not_enrolled_are_not_found_even_when_they_share_a_prefix():
    entries = make_entries(1, 0)
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 1, 0))
    ident = entries[10][0]
    buf = bytearray(ident)
    assert reg.find(buf, 4) == -1          # a 4-byte UID equal to the first 4 bytes
    buf[6] ^= 0x01
    assert reg.find(buf, 7) == -1          # one bit off
    assert reg.find(bytearray(7), 7) == -1


def test_printed_codes_of_different_lengths():
    entries = make_entries(2, 0, kind=registry.KIND_CODE)
    data = registry.encode(registry.KIND_CODE, entries, 2, 0)
    reg = registry.Registry(data)
    assert reg.width == max(len(e[0]) for e in entries)
    for ident, card, deck, batch in entries:
        buf = bytearray(32)
        buf[:len(ident)] = ident
        i = reg.find(buf, len(ident))
        assert (reg.card(i), reg.deck(i), reg.batch(i)) == (card, deck, batch)
        assert reg.find(buf, len(ident) + 1) == -1  # a trailing zero byte is a different code


def test_file_layout_matches_the_documented_bytes():
    entries = [(bytes([0x04, 1, 2, 3, 4, 5, k]), k, 1, registry.BATCH_A) for k in range(52)]
    data = registry.encode(registry.KIND_UID, entries, 1, 0)
    assert data[:16] == b"SHCS" + bytes([1, 1, 7, 0, 52, 0, 1, 0, 0, 0, 0, 0])
    assert len(data) == 16 + 52 * 11 + 32
    assert data[16:27] == bytes([7, 4, 1, 2, 3, 4, 5, 0, 0, 1, 1])
    assert data[-32:] == hashlib.sha256(data[:-32]).digest()


@pytest.mark.parametrize("covers", [0, 2, 8])
def test_cover_cards_are_found_as_cover_records_among_the_cards(covers):
    entries = make_entries(2, 1, seed=covers, covers=covers)
    data = registry.encode(registry.KIND_UID, entries, 2, 1)
    reg = registry.Registry(data)
    assert (reg.count, reg.covers) == (3 * 52 + covers, covers)
    assert data[12] == covers and data[8] | data[9] << 8 == 3 * 52 + covers
    oracle = {e[0]: e[1:] for e in entries}
    assert sum(1 for v in oracle.values() if v == (0xFF, 0, 0)) == covers
    for ident, want in oracle.items():
        i = reg.find(ident, len(ident))
        assert (reg.card(i), reg.deck(i), reg.batch(i)) == want
    # Sorted by ID with the cards, not appended after them.
    keys = [data[16 + k * 11:16 + k * 11 + 8] for k in range(reg.count)]
    assert keys == sorted(keys)


def _example_lines():
    """The hex lines of the example in docs/cardset.md: (bytes shown, label)."""
    text = open(os.path.join(ROOT, "docs", "cardset.md"), encoding="utf-8").read()
    block = text.split("### Example", 1)[1].split("```", 2)[1]
    lines = []
    for line in block.strip().splitlines():
        shown, _gap, label = line.partition("   ")
        lines.append((shown.split(), label.strip()))
    return lines


def test_file_layout_matches_the_documented_example():
    # The example in docs/cardset.md, rebuilt from its own description: one
    # deck of UIDs 04a1b2c3d4e5XX (XX the card number) and two cover cards.
    entries = [(bytes([0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, k]), k, 1, registry.BATCH_A) for k in range(52)]
    entries += [(bytes.fromhex("043c910a7e2280"), registry.COVER, 0, 0),
                (bytes.fromhex("04d7156b029f80"), registry.COVER, 0, 0)]
    data = registry.encode(registry.KIND_UID, entries, 1, 0)
    assert len(data) == 16 + 54 * 11 + 32 == 642
    checked = 0
    for shown, label in _example_lines():
        if label.startswith("header"):
            assert bytes.fromhex("".join(shown)) == data[:16]
        elif label.startswith("record "):
            k = int(label.split()[1].rstrip(":"))
            assert bytes.fromhex("".join(shown)) == data[16 + k * 11:27 + k * 11], label
        elif label.startswith("SHA-256"):
            cut = shown.index("…")
            head, tail = bytes.fromhex("".join(shown[:cut])), bytes.fromhex("".join(shown[cut + 1:]))
            assert data[-32:].startswith(head) and data[-32:].endswith(tail)
            assert data[-32:] == hashlib.sha256(data[:-32]).digest()
        else:
            continue
        checked += 1
    assert checked == 7  # header, five records, digest


def _resign(body):
    return bytes(body) + hashlib.sha256(bytes(body)).digest()


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:30] + b"X" + d[31:], "SHA-256 mismatch"),
    (lambda d: b"SHCX" + d[4:], "not a card-set file"),
    (lambda d: d[:-1], "SHA-256 mismatch"),
    (lambda d: d[:-32], "SHA-256 mismatch"),
    (lambda d: _resign(d[:4] + b"\x02" + d[5:-32]), "version 2"),
    (lambda d: _resign(d[:-32 - 11]), "bytes, header says"),
    (lambda d: _resign(d[:16] + d[27:38] + d[16:27] + d[38:-32]), "out of order or a repeated ID"),
    (lambda d: _resign(d[:24] + b"\x34" + d[25:-32]), "names card 52"),
    (lambda d: _resign(d[:24] + bytes([d[24 + 11]]) + d[25:-32]), "enrolled twice"),
])
def test_damaged_files_are_refused_with_a_precise_reason(damage, message):
    entries = [(bytes([0x04, 9, 9, 9, 9, 9, k]), k, 1, registry.BATCH_A) for k in range(52)]
    data = registry.encode(registry.KIND_UID, entries, 1, 0)
    with pytest.raises(registry.CardSetError, match=message):
        registry.Registry(damage(data))


def _one_deck_two_covers():
    entries = [(bytes([0x04, 9, 9, 9, 9, 9, k]), k, 1, registry.BATCH_A) for k in range(52)]
    entries += [(bytes([0x04, 9, 9, 9, 9, 9, 0xC0 + k]), registry.COVER, 0, 0) for k in range(2)]
    return registry.encode(registry.KIND_UID, entries, 1, 0)  # covers are records 52 and 53


def _with_header(d, offset, value):
    return d[:offset] + bytes([value]) + d[offset + 1:-32]


@pytest.mark.parametrize("damage, message", [
    (lambda d: _resign(_with_header(d, 12, 9)), r"card set: 9 cover cards, the shoe takes 0\.\.8"),
    (lambda d: _resign(_with_header(d, 12, 3)), "card set: 54 records for 1 decks and 3 cover cards"),
    # Header says one cover; the records hold two covers and 51 cards.
    (lambda d: _resign(_with_header(_with_header(d, 8, 53), 12, 1)[:16 + 51 * 11] + d[16 + 52 * 11:-32]),
     "card set: 2 cover-card records, the header says 1"),
    # A cover record carrying a deck, or a batch.
    (lambda d: _resign(d[:16 + 52 * 11 + 9] + b"\x01" + d[16 + 52 * 11 + 10:-32]),
     "card set: record 52 is a cover card with deck 1 batch 0, not deck 0 batch 0"),
    (lambda d: _resign(d[:16 + 53 * 11 + 10] + b"\x02" + d[16 + 53 * 11 + 11:-32]),
     "card set: record 53 is a cover card with deck 0 batch 2, not deck 0 batch 0"),
    # The reserved bytes after the cover count are still reserved.
    (lambda d: _resign(_with_header(d, 13, 1)), "reserved header bytes are not zero"),
])
def test_bad_cover_records_are_refused_with_a_precise_reason(damage, message):
    data = _one_deck_two_covers()
    assert registry.Registry(data).covers == 2
    with pytest.raises(registry.CardSetError, match=message):
        registry.Registry(damage(data))


def test_more_than_eight_cover_cards_cannot_be_written():
    with pytest.raises(registry.CardSetError, match=r"9 cover cards, the shoe takes 0\.\.8"):
        registry.encode(registry.KIND_UID, make_entries(1, 0, covers=9), 1, 0)


def test_a_set_missing_a_card_cannot_be_written():
    entries = make_entries(1, 0)[:-1]
    with pytest.raises(registry.CardSetError, match="51 records for 1 decks"):
        registry.encode(registry.KIND_UID, entries, 1, 0)
