"""Continuous entropy health tests (firmware/shuffler/health.py), checked
against SP 800-90B 4.4's formulas: the cutoffs are recomputed here from the
binomial distribution, a stuck and a biased source must fail, a good one
must pass, and a failure must reach the shuffler's decisions as a typed
fault."""

import math

import pytest

from firmware.emulator import shuffler_board
from firmware.shuffler import entropy, health, shuffle

H = health.CLAIMED_H_BITS
ALPHA_LOG2 = health.ALPHA_LOG2


def test_rct_cutoff_is_sp800_90b_formula():
    assert health.RCT_CUTOFF == 1 + math.ceil(ALPHA_LOG2 / H)
    # a run of C identical samples from a source with min-entropy H has
    # probability at most 2**(-H (C - 1)) <= alpha
    assert H * (health.RCT_CUTOFF - 1) >= ALPHA_LOG2


def _upper_tail_times_16n(k, n=512):
    """16**n * P(Binomial(n, 1/16) > k), in exact integers."""
    return sum(math.comb(n, j) * 15 ** (n - j) for j in range(k + 1, n + 1))


def test_apt_cutoff_is_critbinom_of_the_window():
    # C = 1 + CRITBINOM(W, 2**-H, 1 - alpha): the smallest k whose binomial
    # CDF reaches 1 - alpha, so P(X > k) <= alpha < P(X > k - 1).
    assert H == 4 and health.WINDOW == 512
    k = health.APT_CUTOFF - 1
    scale = 16 ** 512
    assert _upper_tail_times_16n(k) * 2 ** ALPHA_LOG2 <= scale
    assert _upper_tail_times_16n(k - 1) * 2 ** ALPHA_LOG2 > scale


class Biased:
    """Every other byte is 0x00: min-entropy about 1 bit per sample."""

    def __init__(self):
        self.inner = entropy.SeededSource(11)
        self.n = 0

    def read(self, buf):
        self.inner.read(buf)
        for i in range(len(buf)):
            if (self.n + i) % 2 == 0:
                buf[i] = 0
        self.n += len(buf)
        return buf


class ThreeBits:
    """Uniform over 8 values: 3 bits per sample, under the 4 claimed."""

    def __init__(self):
        self.inner = entropy.SeededSource(12)

    def read(self, buf):
        self.inner.read(buf)
        for i in range(len(buf)):
            buf[i] &= 7
        return buf


def _feed(source, total, chunk=256):
    h = health.Health()
    buf = bytearray(chunk)
    for _ in range(total // chunk):
        source.read(buf)
        h.feed(buf)
    return h


def test_stuck_source_fails_the_repetition_count_test():
    with pytest.raises(health.EntropyFault) as err:
        _feed(entropy.StuckSource(0xA5), 1024)
    assert err.value.test == health.RCT and err.value.reason == "entropy_rct"
    assert err.value.value == 0xA5 and err.value.count == health.RCT_CUTOFF


def test_biased_source_fails_the_adaptive_proportion_test():
    with pytest.raises(health.EntropyFault) as err:
        _feed(Biased(), 4096)
    assert err.value.test == health.APT and err.value.value == 0


def test_source_below_the_claimed_entropy_fails_within_a_few_windows():
    with pytest.raises(health.EntropyFault) as err:
        _feed(ThreeBits(), 512 * 64)
    assert err.value.test == health.APT


def test_good_source_passes_a_long_run():
    # 400 000 samples = 781 windows. False alarm probability: at most
    # 2**-32 per sample for the RCT and 2**-30 per window for the APT, so
    # under 1e-4 for this whole run (and the seed makes it deterministic).
    h = _feed(entropy.SeededSource(2026), 400_000, chunk=4000)
    assert h.fault is None and h.samples == 400_000


def test_a_failure_latches():
    h = health.Health()
    with pytest.raises(health.EntropyFault):
        h.feed(bytes(16))
    with pytest.raises(health.EntropyFault):
        h.feed(bytes(range(16)))


def test_tests_span_read_boundaries():
    # 8 identical samples, then 1 more in the next read: a run is a run.
    h = health.Health()
    h.feed(b"\x01\x02" + b"\x07" * 8)
    with pytest.raises(health.EntropyFault):
        h.feed(b"\x07")


def test_decider_refuses_to_start_on_a_stuck_source():
    with pytest.raises(health.EntropyFault):
        shuffle.Decider(entropy.StuckSource(0))


def test_a_source_failing_later_stops_the_next_batch_decision():
    src = shuffler_board.Entropy(5)   # good until told to stick, like a ring oscillator that locks
    d = shuffle.Decider(src, max_cards=52)
    d.shuffle(52)
    src.stuck = True
    with pytest.raises(health.EntropyFault) as err:
        d.decide(52)
    assert err.value.reason == "entropy_rct"
    assert d.batches == 1
