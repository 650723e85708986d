"""The simulated dealer deals a shoe a careful dealer would: a permutation of
the set, the Ch 5F burn, the Ch 10 draws, the cover card at least 14 cards
above the bottom, and exactly one hand after the one the cover card shows in.

The Ch 10 oracle below is written from the rules text, not from the firmware.
"""

import collections

import pytest

from host_tools.sim import dealer

RANKS = "A23456789TJQK"


def value(name):
    return min(RANKS.index(name[0]) + 1, 10) % 10


def burn_value(name):
    return min(RANKS.index(name[0]) + 1, 10)


def oracle_cards_in_round(first_four):
    """Ch 10 from the text: naturals stand; Player draws on 0-5; the Banker,
    when the Player stood, draws on 0-5; otherwise per the Ch 10E table."""
    p = (value(first_four[0]) + value(first_four[2])) % 10
    b = (value(first_four[1]) + value(first_four[3])) % 10
    return p, b


def banker_draws_text(b, third):
    if third is None:
        return b <= 5
    table = {0: range(10), 1: range(10), 2: range(10), 3: [0, 1, 2, 3, 4, 5, 6, 7, 9],
             4: [2, 3, 4, 5, 6, 7], 5: [4, 5, 6, 7], 6: [6, 7], 7: []}
    return third in table[b]


def parse(lines):
    """Split a script into burn cards and rounds (each a list of card names)."""
    assert lines[0].startswith("shoe decks=8 ")
    burn, rounds, cover_after = [], [], None
    drawn = 0
    current = burn
    for line in lines[1:]:
        if line == "bets":
            current = []
            rounds.append(current)
        elif line == "cover":
            cover_after = drawn
            cover_round = len(rounds) - 1
        else:
            current.append(line.split()[0])
            drawn += 1
    return burn, rounds, cover_after, cover_round, drawn


@pytest.mark.parametrize("seed", [1, 7, 42, 2024])
def test_a_clean_shoe_follows_the_rules(seed):
    lines = dealer.script(seed)
    assert all(" up" not in line for line in lines)
    burn, rounds, cover_after, cover_round, drawn = parse(lines)
    every = [c for c in burn] + [c for r in rounds for c in r]
    # A permutation of eight decks: no card more often than eight times.
    assert max(collections.Counter(every).values()) <= 8 and drawn == len(every)
    # Ch 5F: the first card's value, ten for T/J/Q/K, in more cards face down.
    assert len(burn) == 1 + burn_value(burn[0])
    # Ch 5C(1): at least 14 cards below the cover card; Ch 9D: one more hand.
    assert 416 - cover_after >= 14
    assert cover_round == len(rounds) - 2
    for r in rounds:
        p, b = oracle_cards_in_round(r[:4])
        want = 4
        if p < 8 and b < 8:
            third = None
            if p <= 5:
                third = value(r[4])
                want += 1
            if banker_draws_text(b, third):
                want += 1
        assert len(r) == want, r


def test_seeds_are_reproducible_and_distinct():
    assert dealer.script(5) == dealer.script(5)
    assert dealer.script(5) != dealer.script(6)


def test_cover_and_cut_within_the_chapter_5_limits():
    for seed in range(200):
        d = dealer.Dealer(seed)
        assert 14 <= 416 - d.cover_at <= 20
    d = dealer.Dealer(3, decks=1, cover_depth=14)
    assert d.cover_at == 52 - 14
    assert sorted(d.stack) == sorted(list(range(52)))


def test_mistakes_are_seeded_and_shaped_as_declared():
    d = dealer.Dealer(11, irregularity_rate=0.2)
    lines = list(d.lines())
    kinds = collections.Counter(k for k, _ in d.mistakes)
    assert kinds[dealer.EARLY] > 0 and kinds[dealer.FACE_UP] > 0
    assert sum(1 for line in lines if line.endswith(" up")) == kinds[dealer.FACE_UP]
    assert list(dealer.Dealer(11, irregularity_rate=0.2).lines()) == lines



@pytest.mark.parametrize("seed, rate", [(7, 0.0), (11, 0.15)])
def test_the_core_agrees_with_the_dealer(seed, rate):
    """Each mistake the dealer made is the one irregularity the shoe reports,
    and the shoe ends by the cover card with nothing else flagged."""
    from host_tools import deal
    d = dealer.Dealer(seed, irregularity_rate=rate)
    events = deal.deal_events("\n".join(d.lines()) + "\n")
    rules_seen = collections.Counter(e["rule"] for e in events if e["type"] == "irregularity")
    made = collections.Counter(k for k, _ in d.mistakes)
    assert rules_seen["13A"] + rules_seen["13B2"] == made[dealer.EARLY]
    assert rules_seen["13D"] == made[dealer.FACE_UP]
    assert sum(rules_seen.values()) == sum(made.values())
    assert not [e for e in events if e["type"] == "error"]
    assert events[-1]["type"] == "shoe_end" and events[-1]["reason"] == "cover"


DECKS = (1, 2, 4, 6, 8)
RATES = (0.0, 0.03, 0.3, 1.0)


def _deals_whole(seed, decks, rate):
    """The dealer finishes the shoe by Ch 9D within the stack: the cover card
    shows once, exactly one round follows the one it showed in, no card is
    drawn more often than the decks hold it, and no mistake comes after the
    cover card."""
    d = dealer.Dealer(seed, decks=decks, irregularity_rate=rate)
    lines = list(d.lines())  # raised IndexError for seed 3118, one deck, rate 0.05
    assert lines.count("cover") == 1
    at = lines.index("cover")
    after = lines[at + 1:]
    assert after.count("bets") == 1, (seed, decks, rate, after)
    drawn = [line.split()[0] for line in lines[1:] if line not in ("bets", "cover")]
    assert len(drawn) <= 52 * decks and max(collections.Counter(drawn).values()) <= decks
    assert not any(line.endswith(" up") for line in after)
    return d, lines


def test_the_seed_that_ran_out_of_cards():
    _deals_whole(3118, 1, 0.05)


def test_every_seed_and_deck_count_deals_a_whole_shoe():
    """Property: 1200 seeds over every deck count and mistake rate (with
    rate 1.0 a mistake wherever one fits)."""
    for seed in range(1200):
        _deals_whole(seed, DECKS[seed % len(DECKS)], RATES[(seed // len(DECKS)) % len(RATES)])


@pytest.mark.slow
def test_every_seed_and_deck_count_deals_a_whole_shoe_long():
    for seed in range(20000):
        for decks in DECKS:
            _deals_whole(seed, decks, RATES[seed % len(RATES)])


@pytest.mark.parametrize("seed", [3118, 61, 334, 30])
def test_the_core_agrees_with_the_dealer_near_the_cover_card(seed):
    """Seeds that ran the dealer out of cards, through the firmware's game:
    one irregularity per mistake, nothing else flagged, the shoe ended by the
    cover card."""
    from host_tools import deal
    d, lines = _deals_whole(seed, 1, 0.3)
    events = deal.deal_events("\n".join(lines) + "\n")
    rules_seen = collections.Counter(e["rule"] for e in events if e["type"] == "irregularity")
    assert sum(rules_seen.values()) == len(d.mistakes)
    assert not [e for e in events if e["type"] == "error"]
    assert events[-1]["type"] == "shoe_end" and events[-1]["reason"] == "cover"
