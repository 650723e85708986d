"""The shuffle decisions: unbiased draws, the elevator's gaps give every
order exactly once, and new-deck feed order. `shoe shuffler sample` and the
same decisions in the MicroPython VM: tests/e2e/test_shuffler_sample.py."""

import itertools
from array import array

import pytest

from firmware.baccarat import cards
from host_tools.shuffler import command
from firmware.shuffler import draw, entropy, shuffle


class ByteCycle:
    def __init__(self, nbytes):
        self.nbytes = nbytes
        self.stream = self._gen()

    def _gen(self):
        while True:
            for v in range(256 ** self.nbytes):
                yield from v.to_bytes(self.nbytes, "big")

    def generate_into(self, buf):
        for i in range(len(buf)):
            buf[i] = next(self.stream)
        return buf


@pytest.mark.parametrize("width, n", [(1, n) for n in (2, 3, 7, 52, 100, 129, 255, 256)]
                         + [(2, n) for n in (257, 300, 416)])
def test_draws_are_exactly_uniform_over_a_cycle(width, n):
    # Over all values of ``width`` bytes, every accepted result appears equally often.
    u = draw.Uniform(ByteCycle(width), pool=256 * width)
    mask = (1 << (n - 1).bit_length()) - 1
    accepted = sum(1 for v in range(256 ** width) if (v & mask) < n)
    counts = [0] * n
    for _ in range(accepted):
        counts[u.below(n)] += 1
    assert u.bytes_used <= width * 256 ** width  # the draws used one cycle of values
    assert len(set(counts)) == 1


def test_below_refuses_out_of_range():
    u = draw.Uniform(ByteCycle(1))
    assert u.below(1) == 0 and u.bytes_used == 0
    for bad in (0, -3, draw.MAX_N + 1):
        with pytest.raises(ValueError):
            u.below(bad)


def _reference(gaps):
    """The elevator by definition: insert card i with gaps[i] cards above it."""
    stack = []
    for i, g in enumerate(gaps):
        stack.insert(g, i)
    return stack


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_every_gap_list_gives_a_different_order_and_every_order_is_reached(n):
    # The bijection of docs/shuffler.md: n! gap lists onto n! orders.
    seen = set()
    order = array("H", [0] * n)
    for gaps in itertools.product(*[range(i + 1) for i in range(n)]):
        got = tuple(shuffle.deliver(array("H", gaps), n, order))
        assert list(got) == _reference(gaps)
        seen.add(got)
    assert seen == set(itertools.permutations(range(n)))


def test_deliver_matches_the_definition_on_eight_decks():
    d = shuffle.Decider(entropy.SeededSource(9))
    for _ in range(5):
        order = d.shuffle(416)
        assert list(order[:416]) == _reference(list(d.gaps[:416]))


def test_deliver_extremes():
    n = 10
    top = shuffle.deliver(array("H", [0] * n), n, array("H", [0] * n))
    bottom = shuffle.deliver(array("H", range(n)), n, array("H", [0] * n))
    assert list(top) == list(range(n - 1, -1, -1))  # each card on top: reversed
    assert list(bottom) == list(range(n))          # each card at the bottom: kept
    with pytest.raises(ValueError):
        shuffle.deliver(array("H", [0, 2]), 2, array("H", [0, 0]))


def test_plan_refuses_a_batch_over_its_buffer():
    d = shuffle.Decider(entropy.SeededSource(1), max_cards=52)
    with pytest.raises(ValueError):
        d.decide(53)


def test_feed_order_is_the_ch4_inspection_order():
    # docs/cardset.md: spades, hearts, clubs, diamonds, each ace to king.
    names = [cards.name(shuffle.fed_card(k)) for k in range(104)]
    expected = [r + s for s in "SHCD" for r in "A23456789TJQK"]
    assert names == expected + expected


def test_sample_seed_changes_the_shuffle():
    a = command.sample_bytes(1, 1, 1)
    assert a == command.sample_bytes(1, 1, 1) and a != command.sample_bytes(1, 1, 2)
