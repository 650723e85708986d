"""`shoe bench coldeck` (host_tools/qa/bench/coldeck.py) on a small sample:
its array code finds the runs an independent loop over ranks and suits
finds, it passes the shoe's threshold and fails a deliberately weakened one,
and its Poisson limits are the textbook ones."""

import random

import numpy as np

from host_tools.qa.bench import coldeck as bench

from firmware.baccarat import cards


def _loop_alarms(stack, run):
    """Where a run of one suit in rank sequence first reaches ``run`` cards,
    by a plain loop over ranks and suits."""
    out, length, d = [], 1, 0
    for i in range(1, len(stack)):
        a, b = stack[i - 1], stack[i]
        s = cards.rank(b) - cards.rank(a) if cards.suit(a) == cards.suit(b) else 0
        if s in (1, -1) and s == d:
            length += 1
        elif s in (1, -1):
            length, d = 2, s
        else:
            length, d = 1, 0
        if length == run:
            out.append(i)
    return out


def test_array_code_finds_the_runs_a_plain_loop_finds():
    rng = np.random.default_rng(3)
    batch = bench.shoes(rng, 300, 8)
    # Plant ordered stretches so long runs occur too.
    r = random.Random(3)
    for row in range(0, 300, 3):
        start = r.randrange(0, 400)
        suit = r.randrange(4)
        ranks = range(13) if r.random() < 0.5 else range(12, -1, -1)
        seq = [cards.make(k, suit) for k in ranks][:416 - start]
        batch[row, start:start + len(seq)] = seq
    for run in (3, 4, 7):
        got = bench.alarm_positions(batch, run)
        for row in range(300):
            assert got[row] == _loop_alarms(batch[row].tolist(), run), (run, row)
    assert any(bench.alarm_positions(batch, 7))


def test_shoes_are_permutations_of_the_full_set():
    batch = bench.shoes(np.random.default_rng(1), 50, 8)
    for row in batch:
        assert sorted(row.tolist()) == sorted(list(range(52)) * 8)


def test_bench_passes_the_shoes_threshold_and_fails_a_weakened_one(capsys):
    assert bench.main(["--shoes", "20000", "--crosscheck", "100"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("PASS") and "0 shoe(s) differ" in out
    # Run 4: about 4.6e-3 alarms per shoe, over the 1e-6 target by both the
    # derivation and the simulation's own 99 % lower limit.
    assert bench.main(["--shoes", "20000", "--run", "4", "--crosscheck", "0"]) == 1
    out = capsys.readouterr().out
    assert out.strip().endswith("FAIL") and "refutes" in out


def test_poisson_limits_match_the_textbook_values():
    # Garwood limits, half the tabulated chi-square quantiles: 0 events ->
    # 95 % upper chi2(0.95; 2)/2 = 2.9957; 10 events -> 99 % lower
    # chi2(0.01; 20)/2 = 8.2604/2, 95 % upper chi2(0.95; 22)/2 = 33.9244/2.
    assert abs(bench.poisson_limits(0)[1] - 2.9957) < 1e-3
    lower, upper = bench.poisson_limits(10)
    assert abs(lower - 4.1302) < 1e-3 and abs(upper - 16.9622) < 1e-3
