"""Exact analysis: the published 8-deck figures, a plain recursive
enumeration on small shoes, closed forms from the rules text, and a seeded
simulation settled with the settlement code."""

import math
import random

import pytest

from host_tools.analysis import composition, exact, reference, returns
from host_tools.sim import seeded_shoes as simulate
from host_tools.settle import wagers
from host_tools.settle.core import cards
from host_tools.settle.hands import from_cards
from host_tools.settle.table import Table

SEQ_8 = 416 * 415 * 414 * 413 * 412 * 411


@pytest.fixture(scope="module")
def eight():
    return exact.analyse(composition.full(8))


def test_published_eight_deck_probabilities(eight):
    p = eight["probability"]
    assert (round(p["banker"], 6), round(p["player"], 6), round(p["tie"], 6)) == (0.458597, 0.446247, 0.095156)


def test_published_eight_deck_house_edges(eight):
    e = eight["house_edge"]
    published = {"banker": 1.0579, "player": 1.2351, "tie": 14.3596, "dragon7": 7.6113, "panda8": 10.1876}
    assert {k: round(100 * e[k], 4) for k in published} == published


def test_total_number_of_six_card_sequences():
    d = exact.main_distribution(composition.by_points(composition.full(8)))
    assert sum(d) == SEQ_8 == 4998398275503360


def _random_shoe(seed, decks, removed):
    rng = random.Random(seed)
    counts = composition.full(decks)
    pool = [c for c in range(52) for _ in range(decks)]
    for c in rng.sample(pool, removed):
        composition.remove(counts, c)
    return counts


@pytest.mark.parametrize("seed, decks, removed", [(1, 8, 0), (2, 8, 300), (3, 1, 30), (4, 6, 280)])
def test_probabilities_sum_to_one(seed, decks, removed):
    counts = _random_shoe(seed, decks, removed)
    n = sum(counts)
    d = exact.main_distribution(composition.by_points(counts))
    assert sum(d) == n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)
    p = exact.analyse(counts)["probability"]
    assert p["banker"] + p["player"] + p["tie"] == pytest.approx(1.0, abs=1e-12)


def _shoe(names):
    counts = [0] * 52
    for n in names.split():
        counts[cards.parse(n)] += 1
    return counts


@pytest.mark.parametrize("seed, removed", [(5, 40),   # 12 cards; 15 under -m slow (5x the dealing)
                                           pytest.param(5, 37, marks=pytest.mark.slow),
                                           pytest.param(6, 37, marks=pytest.mark.slow)])
def test_main_distribution_matches_plain_recursion(seed, removed):
    counts = _random_shoe(seed, 1, removed)  # dealt one physical card at a time
    assert exact.main_distribution(composition.by_points(counts)) == reference.main_distribution(counts)


def test_every_wager_matches_plain_recursion_on_a_small_shoe():
    # rich in nines, kings and spades so every four-card award can happen
    counts = _shoe("9S 9S 9S KS KS 9H KH 9D 5C AS AS 7C QS 3S")
    fast = exact.analyse(counts, {"designation": "standard", "tie_odds": 9})["house_edge"]
    plain = reference.house_edges(counts, {"designation": "standard", "tie_odds": 9})
    assert set(fast) == set(plain)
    for key in plain:
        assert fast[key] == pytest.approx(plain[key], abs=1e-12), key


def test_main_game_matches_plain_recursion_at_sixteen_decks():
    """The widest shoe, partly dealt, where the exact integer weights come
    closest to int64's range: every state's sequence count is the oracle's.
    The oracle deals one card per point value (the Ch 10 game reads nothing
    else), so it runs in about a second."""
    counts = _random_shoe(8, 16, 150)
    per_point = [0] * 52
    for c, k in enumerate(counts):
        per_point[cards.make(cards.rank(c) if cards.points(c) else cards.TEN, 0)] += k
    assert exact.main_distribution(composition.by_points(counts)) == reference.main_distribution(per_point)


def test_a_tables_pricer_gives_its_keys_as_analyse_does():
    """The edge monitor prices only what its table offers (exact.pricer);
    those keys are the very values of the full analysis."""
    counts = _random_shoe(9, 8, 200)
    table = {"designation": "ez", "royal9": "B"}
    full = exact.analyse(counts, table)["house_edge"]
    for keys in (("dragon7", "panda8"), ("jackpot_A", "royal9_B"), ("tie",), ("any_pair", "banker", "lucky_nines_C")):
        mine = exact.pricer(returns.settings_json(table), keys).edges(counts)
        assert mine == {k: full[k] for k in keys}
    with pytest.raises(ValueError, match="no such house_edge key: dragon9"):
        exact.pricer(returns.settings_json(table), ("dragon9",))


def test_any_pair_against_its_closed_form():
    # Ch 12Q: 11 to 1 for a pair, 12 to 1 for a pair of nines, in the named
    # hand's first two cards. With 8 decks the second card matches the first
    # with probability 31/415, and a pair is of nines 1 time in 13.
    pair = 31 / 415
    ev = pair * (12 / 13 * 12 + 1 / 13 * 13) - 1
    assert exact.analyse(composition.full(8))["house_edge"]["any_pair"] == pytest.approx(-ev, abs=1e-12)


def test_simulation_agrees_within_sampling_error():
    rng = random.Random(20240601)
    pool = [c for c in range(52) for _ in range(8)]
    table = Table({"designation": "ez"})
    bets = ("dragon7", "panda8", "lucky6", "dragon_bonus_player", "player")
    rounds = 30000
    wins = {"banker": 0, "player": 0, "tie": 0}
    returns = {b: [] for b in bets}
    for _ in range(rounds):
        six = iter(rng.sample(pool, 6))
        player, banker = simulate.deal_round(lambda: next(six))
        h = from_cards(player, banker)
        wins[h.winner] += 1
        for b in bets:
            outcome, award = wagers.resolve(b, h, table)
            returns[b].append(-1.0 if outcome == "lose" else 0.0 if outcome == "push" else award[1] / award[2])
    exact_ = exact.analyse(composition.full(8))
    for k, count in wins.items():
        p = exact_["probability"][k]
        assert abs(count / rounds - p) < 4 * math.sqrt(p * (1 - p) / rounds), k
    keys = {"dragon7": "dragon7", "panda8": "panda8", "lucky6": "lucky6",
            "dragon_bonus_player": "dragon_bonus_player_A", "player": "player"}
    for b, xs in returns.items():
        mean = sum(xs) / rounds
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (rounds - 1))
        assert abs(mean + exact_["house_edge"][keys[b]]) < 4 * sd / math.sqrt(rounds), b


def test_fewer_than_six_cards_cannot_be_priced():
    with pytest.raises(composition.CompositionError, match="13E"):
        exact.analyse(_shoe("9S 9S 9S KS KS"))


def test_jackpot_edges_against_the_published_figure(eight):
    """Paytable B is the published Jackpot Baccarat table (Wizard of Odds:
    return -0.158026 with 8 decks); it read 14.58 % while Four Card Royal
    took any four of T-J-Q-K-A. The other tables have no published figure;
    docs/wagers.md quotes these values."""
    e = eight["house_edge"]
    assert round(e["jackpot_B"], 6) == 0.158026
    assert {k: round(100 * e["jackpot_" + k], 4) for k in "ABCDE"} == {
        "A": 14.5193, "B": 15.8026, "C": 16.8194, "D": 12.0559, "E": 13.5962}
