"""Card names and values (Ch 6) under CPython (in the MicroPython VM:
tests/e2e/test_cards_vm.py)."""

import pytest

from firmware.baccarat import cards


@pytest.mark.parametrize("text,name", [("9H", "9H"), ("TD", "TD"), ("10D", "TD"), ("KS", "KS"),
                                       ("as", "AS"), ("qc", "QC")])
def test_parse_and_print(text, name):
    assert cards.name(cards.parse(text)) == name


@pytest.mark.parametrize("bad", ["", "1H", "11D", "ZZ", "9X", "10", "9HH"])
def test_bad_names_rejected(bad):
    with pytest.raises(ValueError):
        cards.parse(bad)


def test_point_values_follow_chapter_6():
    # Ch 6A: 2-9 face value; 10, J, Q, K zero; ace one.
    expect = {"A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
              "T": 0, "J": 0, "Q": 0, "K": 0}
    for r, v in expect.items():
        for s in "CDHS":
            assert cards.points(cards.parse(r + s)) == v
    # Ch 6C: a two-digit total keeps its right digit (9 + 8 = 17 -> 7).
    hand = bytes([cards.parse("9H"), cards.parse("8S"), cards.parse("KD")])
    assert cards.hand_total(hand, 3) == 7
