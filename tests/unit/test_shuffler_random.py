"""Randomness of the shuffler's decisions, tested from the statistics.

What a uniformly random permutation of n cards must show (host_tools/
shuffler/stats.py derives each null distribution): card-by-position counts
(chi-square, corrected for the cards of one shuffle being a permutation),
rising sequences (mean (n+1)/2), adjacent pairs kept (mean (n-1)/n), where
the first and last cards fed end up (uniform), and the Diaconis-Fulman-
Holmes guessing score (mean H_n). Each at 99 %, on 4000 shuffles of one deck
and 400 of eight decks, made by the firmware's own code (CPython) from a
fixed seed, so a run is reproducible. Then the DRBG's bits through SP
800-22's monobit, block-frequency and runs tests.

Teeth: the same battery must fail a modulo draw, one pass of a 10-shelf
machine and one riffle; and the bit tests must fail biased streams.
`-m slow` repeats the fair battery ten times larger.
"""

import pytest

from host_tools.shuffler import stats
from host_tools.qa import shuffler_variants as variants

SEED = 20261122
SIZES = {1: 4000, 8: 400}
NAMES = ["card-by-position", "rising sequences", "adjacent pairs kept", "top card's position",
         "bottom card's position", "DFH guessing score"]

_cache = {}


def battery(decks, variant, count=None, seed=SEED):
    key = (decks, variant, count, seed)
    if key not in _cache:
        orders = variants.orders(decks, count or SIZES[decks], seed, variant)
        _cache[key] = {r.name.split(" 52x")[0]: r for r in stats.shuffle_battery(orders, decks * 52)}
    return _cache[key]


@pytest.mark.parametrize("decks", [1, 8])
def test_the_shuffler_passes_every_test(decks):
    results = battery(decks, "fair")
    assert sorted(results) == sorted(NAMES)
    for r in results.values():
        assert r.passed, r.line()


# Which tests each broken shuffler must fail (all at p < 0.01). Each test of
# the battery is failed by at least one of them, so none is toothless.
MUST_FAIL = {
    (1, "modulo"): {"card-by-position"},
    (8, "modulo"): {"card-by-position", "top card's position", "bottom card's position",
                    "DFH guessing score"},
    (1, "shelf"): {"card-by-position", "adjacent pairs kept", "top card's position",
                   "bottom card's position", "DFH guessing score"},
    (8, "shelf"): {"card-by-position", "adjacent pairs kept", "top card's position",
                   "bottom card's position", "DFH guessing score"},
    (1, "riffle"): {"card-by-position", "rising sequences", "adjacent pairs kept",
                    "DFH guessing score"},
    (8, "riffle"): {"card-by-position", "rising sequences", "adjacent pairs kept",
                    "DFH guessing score"},
}


@pytest.mark.parametrize("decks,variant", sorted(MUST_FAIL))
def test_a_broken_shuffler_fails(decks, variant):
    results = battery(decks, variant)
    failed = {name for name, r in results.items() if not r.passed}
    assert MUST_FAIL[(decks, variant)] <= failed, "\n".join(r.line() for r in results.values())


def test_every_test_has_teeth():
    covered = set()
    for need in MUST_FAIL.values():
        covered |= need
    assert covered == set(NAMES)


def test_one_shelf_pass_lets_a_guesser_name_about_nine_cards():
    # Diaconis, Fulman and Holmes: about 9.5 correct guesses per deck after
    # one pass of a 10-shelf machine, against H_52 = 4.54 for a fair shuffle.
    r = battery(1, "shelf")["DFH guessing score"]
    mean = float(r.detail.split("mean ")[1].split(",")[0])
    assert 8.5 < mean < 10.5


# -- the DRBG's bits, SP 800-22 -------------------------------------------
BITS_BYTES = 125_000  # 10**6 bits, the size SP 800-22 recommends


def test_drbg_output_passes_sp800_22_tests():
    for r in stats.bit_battery(variants.drbg_bytes(SEED, BITS_BYTES)):
        assert r.passed, r.line()


def _biased_streams():
    good = bytearray(variants.drbg_bytes(SEED + 1, BITS_BYTES))
    ones = bytearray(good)
    for i in range(0, len(ones), 25):
        ones[i] = 0xFF                       # 1 byte in 25 all ones: 52 % ones
    sticky = bytearray(len(good))
    for i in range(len(good)):               # every bit repeated: too few runs
        src = good[i // 2] >> (4 * (1 - i % 2))
        b = 0
        for k in range(4):
            bit = (src >> (3 - k)) & 1
            b = (b << 2) | (bit * 3)
        sticky[i] = b
    blocky = bytearray(good)
    for i in range(len(blocky)):             # 128-bit blocks alternately 1- and 0-heavy
        other = good[(i * 7 + 3) % len(good)]
        blocky[i] = (blocky[i] | other) if (i // 16) % 2 == 0 else (blocky[i] & other)
    return {"ones": ones, "sticky": sticky, "blocky": blocky}


def test_sp800_22_tests_fail_biased_bits():
    results = {name: {r.name: r for r in stats.bit_battery(data)}
               for name, data in _biased_streams().items()}
    assert not results["ones"]["SP800-22 monobit"].passed
    assert not results["sticky"]["SP800-22 runs"].passed
    assert results["sticky"]["SP800-22 monobit"].passed
    assert not results["blocky"]["SP800-22 block frequency"].passed
    assert results["blocky"]["SP800-22 monobit"].passed


# -- the distribution functions themselves ----------------------------------
def test_chi2_tail_matches_known_values():
    # chi-square critical values at 0.01 (tables): df 1 -> 6.635, df 10 -> 23.209
    assert abs(stats.chi2_sf(6.6349, 1) - 0.01) < 1e-4
    assert abs(stats.chi2_sf(23.2093, 10) - 0.01) < 1e-4
    # large df: mean df, sd sqrt(2 df); 2601 df at +2.326 sd is about 0.01
    x = 2601 + 2.3263 * (2 * 2601) ** 0.5
    assert 0.008 < stats.chi2_sf(x, 2601) < 0.012


# -- the bigger battery ------------------------------------------------------
# One battery is 12 tests at 99 %: a fair shuffler fails at least one of them
# about 11 % of the time (seed SEED + 7 with 4000 eight-deck shuffles does:
# rising sequences, p = 0.005). So the big battery repeats the default one
# on 10 independent seeds and applies SP 800-22 4.2.1's proportion rule:
# with m = 10 runs the pass proportion must be at least
# 0.99 - 3 sqrt(0.99 * 0.01 / 10) = 0.896, i.e. 9 runs of 10, per test.
RUNS = 10


@pytest.mark.slow
@pytest.mark.parametrize("decks", [1, 8])
def test_the_shuffler_passes_the_proportion_rule_over_ten_batteries(decks):
    passes = {name: 0 for name in NAMES}
    for k in range(RUNS):
        for name, r in battery(decks, "fair", seed=SEED + 100 + k).items():
            passes[name] += r.passed
    assert all(v >= 9 for v in passes.values()), passes


@pytest.mark.slow
def test_drbg_output_passes_sp800_22_on_ten_streams():
    # The same proportion rule over ten streams of 10**6 bits.
    passes = {}
    for k in range(RUNS):
        for r in stats.bit_battery(variants.drbg_bytes(SEED + 100 + k, BITS_BYTES)):
            passes[r.name] = passes.get(r.name, 0) + r.passed
    assert all(v >= 9 for v in passes.values()), passes
