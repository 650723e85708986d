"""The pit's shuffle-quality score (host_tools/analysis/shuffle_score.py) and
the shuffle models (host_tools/sim/shuffles.py).

The derived expectations, spreads and distributions are checked against a
Monte-Carlo oracle written here (random.shuffle and plain loops over ranks,
suits and decks), never against the score's own code; the score separates
one- and two-riffle shuffles (Gilbert-Shannon-Reeds) from uniform ones at
99 %, and flags uniform shoes no more often than its stated rate."""

import itertools
import math
import random

import pytest

from host_tools.analysis import shuffle_score as Q
from host_tools.sim import shuffles as S

from firmware.baccarat import cards

DEALT = 400  # cards dealt before the cover card, about
N = 416


def _physical():
    return [(c, d) for d in range(1, 9) for c in range(52)]


def _factory_kept(seq, physical=True):
    """Consecutive cards one rank apart in one suit (and one deck)."""
    k = 0
    for (a, da), (b, db) in zip(seq, seq[1:]):
        if cards.suit(a) == cards.suit(b) and abs(cards.rank(a) - cards.rank(b)) == 1:
            if not physical or da == db:
                k += 1
    return k


def _previous_kept(seq, prev):
    pairs = set()
    for a, b in zip(prev, prev[1:]):
        pairs.add((a, b))
        pairs.add((b, a))
    return sum(1 for a, b in zip(seq, seq[1:]) if (a, b) in pairs)


def _moments(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _close(xs, mean, sd, what):
    m, s = _moments(xs)
    se = s / math.sqrt(len(xs))
    assert abs(m - mean) < 4.5 * se, (what, m, mean, se)
    assert abs(s / sd - 1) < 0.1, (what, s, sd)


def _shoe(seq, decks=8, physical=True, number=1):
    events = S.events(seq if physical else [(c, 0) for c, _d in seq], decks)
    if not physical:
        for e in events:
            e.pop("deck", None)
    shoe = Q.shoes_from_events(events)[0]
    shoe.number = number
    return shoe


# ---------------------------------------------------- moments, by simulation

def test_factory_adjacency_moments_match_a_monte_carlo_oracle():
    rng = random.Random(1)
    deck = _physical()
    phys, faces = [], []
    for _ in range(3000):
        rng.shuffle(deck)
        seq = deck[:DEALT]
        phys.append(_factory_kept(seq, True))
        faces.append(_factory_kept(seq, False))
    shoe = _shoe(deck[:DEALT])
    got = Q.factory_adjacency(shoe)
    assert got["observed"] == _factory_kept(deck[:DEALT], True)
    _close(phys, got["expected"], got["sd"], "physical")
    got = Q.factory_adjacency(_shoe(deck[:DEALT], physical=False))
    assert got["observed"] == _factory_kept(deck[:DEALT], False)
    _close(faces, got["expected"], got["sd"], "faces")


def test_previous_adjacency_moments_match_a_monte_carlo_oracle():
    rng = random.Random(2)
    deck = _physical()
    rng.shuffle(deck)
    prev = deck[:DEALT]
    counts = []
    for _ in range(3000):
        rng.shuffle(deck)
        counts.append(_previous_kept(deck[:DEALT], prev))
    got = Q.previous_adjacency(_shoe(deck[:DEALT]), _shoe(prev))
    assert got["observed"] == _previous_kept(deck[:DEALT], prev)
    _close(counts, got["expected"], got["sd"], "previous")


def _rank_breaks(seq):
    """Per (deck, suit): rank neighbours dealt in the other order, folded."""
    total = 0
    for d in range(1, 9):
        for s in range(4):
            pos = {cards.rank(c): i for i, (c, dd) in enumerate(seq) if dd == d and cards.suit(c) == s}
            ranks = sorted(pos)
            b = sum(1 for x, y in zip(ranks, ranks[1:]) if pos[y] < pos[x])
            total += min(b, len(ranks) - 1 - b)
    return total


def test_rising_sequence_statistics_match_a_monte_carlo_oracle():
    rng = random.Random(3)
    deck = _physical()
    rng.shuffle(deck)
    prev = deck[:DEALT]
    fac, pre = [], []
    for _ in range(2000):
        rng.shuffle(deck)
        seq = deck[:DEALT]
        fac.append(_rank_breaks(seq))
        where = {c: i for i, c in enumerate(seq)}
        order = [where[c] for c in prev if c in where]
        b = sum(1 for x, y in zip(order, order[1:]) if y < x)
        pre.append(min(b, len(order) - 1 - b))
    f = Q.factory_rising(_shoe(seq))
    assert f["observed"] == fac[-1]
    _close(fac, f["expected"], f["sd"], "factory rising")
    p = Q.previous_rising(_shoe(seq), _shoe(prev))
    assert p["observed"] == pre[-1]
    # M varies a little with the overlap; the spread is checked on the same M.
    _close(pre, p["expected"], p["sd"], "previous rising")
    # The lower tail, where a weak shuffle lands: the exact p-value at the
    # simulation's 5 % quantile is about 5 % (block sizes vary a little
    # from shoe to shoe, hence the tolerance).
    lo = sorted(fac)[len(fac) // 20]
    simulated = sum(1 for x in fac if x <= lo) / len(fac)
    deck[:] = seq
    exact = Q.factory_rising(_shoe(seq))
    dist = [1.0]
    sizes = {}
    for c, d in seq:
        sizes[(d, c & 3)] = sizes.get((d, c & 3), 0) + 1
    for size in sizes.values():
        dist = Q._convolve(dist, Q.folded(size))
    assert abs(sum(dist[:exact["observed"] + 1]) - exact["p"]) < 1e-12
    assert abs(sum(dist[:lo + 1]) - simulated) < 0.02


def test_eulerian_numbers_against_brute_force():
    for n in range(1, 8):
        counts = [0] * n
        for perm in itertools.permutations(range(n)):
            counts[sum(1 for a, b in zip(perm, perm[1:]) if b < a)] += 1
        assert tuple(counts) == Q.eulerian(n)


def test_a_mis_derived_expectation_would_fail_the_oracle():
    """The moment checks have teeth: the face-level expectation (copies in
    other decks counted as neighbours) is refuted for physical cards."""
    rng = random.Random(5)
    deck = _physical()
    counts = []
    for _ in range(2000):
        rng.shuffle(deck)
        counts.append(_factory_kept(deck[:DEALT], True))
    wrong = Q.factory_adjacency(_shoe(deck[:DEALT], physical=False))
    with pytest.raises(AssertionError):
        _close(counts, wrong["expected"], wrong["sd"], "wrong")


# ------------------------------------------------ separation and false flags

def test_uniform_shoes_are_flagged_no_more_often_than_the_stated_rate():
    rng = random.Random(6)
    flagged = 0
    prev = None
    shoes = 600
    for i in range(shoes):
        seq = S.uniform(8, rng)[:DEALT]
        shoe = _shoe(seq, number=i + 1)
        flagged += Q.score(shoe, prev)["weak"]
        prev = shoe
    # At most ALPHA = 1 %: 6 expected at the rate itself; 15 or more would
    # have probability under 0.1 %.
    assert flagged < 15, flagged


@pytest.mark.parametrize("riffles", [1, 2])
def test_riffled_decks_are_flagged_at_99_percent(riffles):
    rng = random.Random(10 + riffles)
    results = [Q.score(_shoe(S.riffled_decks(8, riffles, rng)[:DEALT]))["weak"] for _ in range(300)]
    assert sum(results) >= 297


@pytest.mark.parametrize("riffles", [1, 2])
def test_a_riffled_previous_shoe_is_flagged_at_99_percent(riffles):
    """The discards riffled once or twice as a whole carry the previous
    shoe's order over (shuffle tracking)."""
    rng = random.Random(20 + riffles)
    weak = 0
    for _ in range(300):
        prev = S.uniform(8, rng)
        seq = S.riffled_stack(prev[:DEALT] + prev[DEALT:], riffles, rng)[:DEALT]
        weak += Q.score(_shoe(seq), _shoe(prev[:DEALT]))["weak"]
    assert weak >= 297


def test_without_the_deck_the_factory_adjacencies_still_flag_a_riffled_shoe():
    rng = random.Random(30)
    flagged = [Q.score(_shoe(S.riffled_decks(8, 2, rng)[:DEALT], physical=False))["weak"] for _ in range(200)]
    assert sum(flagged) >= 198


# ------------------------------------------------------------------ models

def test_gsr_riffle_keeps_at_most_two_rising_sequences():
    rng = random.Random(40)
    for _ in range(200):
        out = S.riffle(list(range(52)), rng)
        pos = {c: i for i, c in enumerate(out)}
        assert sum(1 for k in range(51) if pos[k + 1] < pos[k]) <= 1
        assert sorted(out) == list(range(52))


def test_every_model_is_a_whole_8_deck_set():
    rng = random.Random(41)
    for name in S.MODELS:
        assert sorted(S.model(name, 8, rng)) == sorted(_physical()), name
