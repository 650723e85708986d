"""`shoe bench coldeck`: the cold-deck test's false-alarm rate, by simulation.

docs/rules.md ("Cold decks") derives the shoe's threshold: a run of RUN = 7
cards of one suit in rank sequence, whose expected count per uniformly
shuffled 8-deck shoe, B(7) = 2.35e-8, bounds the false-alarm probability.
This benchmark checks that claim without the firmware's code: numpy shuffles
the shoes (one Fisher-Yates per row, Generator.permuted) and finds the runs
with array operations, then

- for every run length k from 2 up to the threshold, compares the observed
  mean count of runs of at least k cards (counted at their starts, both
  directions) with the derived B(k), as a z score over the shoes' own
  spread: a wrong per-position probability shows here, at lengths where
  runs are common;
- counts shoes that would have raised the alarm at the threshold, with a
  Poisson confidence interval for the rate. It FAILS when the derived bound
  at the threshold exceeds the target (1e-6 per shoe), when the data refute
  a rate within the target (the 99 % lower limit above it), or when a z score
  passes 5. `--run 5` (a deliberately weakened threshold) fails both ways.
- runs the firmware's own detector (Game.ordered, both its alarm positions
  and counts) over the first shoes of the sample, at weakened limits where
  alarms are common, and requires the same alarms as the array code.
"""

import argparse
import math
import sys
import time
from fractions import Fraction

import numpy as np


STEP = 4  # the next rank of one suit, in codes rank*4 + suit (baccarat/cards.py)


def bound(run, decks):
    """B(L, D): 2 directions x (N - L + 1) starts x the exact probability that
    a start begins a run of L cards (docs/rules.md), as a Fraction."""
    n = 52 * decks
    p = Fraction(14 - run, 13)
    for j in range(1, run):
        p *= Fraction(decks, n - j)
    return 2 * (n - run + 1) * p


def _poisson_cdf(k, lam):
    """P(X <= k) for X ~ Poisson(lam), summed in log space."""
    if k < 0:
        return 0.0
    if lam == 0:
        return 1.0
    total = 0.0
    for i in range(k + 1):
        total += math.exp(-lam + i * math.log(lam) - math.lgamma(i + 1))
    return min(total, 1.0)


def _solve(f, lo, hi):
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid):
            hi = mid
        else:
            lo = mid
    return hi


def poisson_limits(k, lower_conf=0.99, upper_conf=0.95):
    """(lower, upper) one-sided limits on a Poisson mean from k events."""
    top = max(10.0, 3.0 * k + 50)
    lower = 0.0 if k == 0 else _solve(lambda lam: 1 - _poisson_cdf(k - 1, lam) >= 1 - lower_conf, 0.0, top)
    upper = _solve(lambda lam: _poisson_cdf(k, lam) <= 1 - upper_conf, 0.0, top)
    return lower, upper


def shoes(rng, count, decks):
    """``count`` uniformly shuffled shoes as an int8 array, one row each."""
    a = np.tile(np.arange(52, dtype=np.int8), (count, decks))
    return rng.permuted(a, axis=1, out=a)


def run_windows(batch, longest):
    """For k = 2..longest: (ascending, descending) boolean arrays, True at
    each start of k cards in one suit's rank sequence."""
    diff = batch[:, 1:].astype(np.int16) - batch[:, :-1]
    up, down = diff == STEP, diff == -STEP
    w_up, w_down = up, down
    out = {2: (w_up, w_down)}
    for k in range(2, longest):
        w_up = w_up[:, :-1] & up[:, k - 1:]
        w_down = w_down[:, :-1] & down[:, k - 1:]
        out[k + 1] = (w_up, w_down)
    return out


def alarm_positions(batch, run):
    """Per shoe, the sorted card indexes where a run first reaches ``run``
    cards (once per run), computed from the windows: a start whose previous
    card does not continue the same sequence."""
    w = run_windows(batch, run)
    diff = batch[:, 1:].astype(np.int16) - batch[:, :-1]
    out = [[] for _ in range(batch.shape[0])]
    for direction, (wk, step) in enumerate(((w[run][0], STEP), (w[run][1], -STEP))):
        cont = np.zeros_like(wk)
        cont[:, 1:] = diff[:, :wk.shape[1] - 1] == step  # card i-1 -> i is the same step
        rows, starts = np.nonzero(wk & ~cont)
        for r, s in zip(rows.tolist(), starts.tolist()):
            out[r].append(s + run - 1)
    for lst in out:
        lst.sort()
    return out


def firmware_alarms(stack, run, decks):
    """The firmware's own detector (Game.ordered) over one shoe."""
    from firmware.baccarat import game
    g = game.Game(lambda buf, n: None)
    g.new_shoe(decks)
    return [i for i, c in enumerate(stack) if g.ordered(c, run)]


def main(argv):
    from firmware.baccarat import game
    parser = argparse.ArgumentParser(prog="shoe bench coldeck", description=__doc__.split("\n")[0])
    parser.add_argument("--shoes", type=int, default=1_000_000, help="uniformly shuffled shoes (default 10^6)")
    parser.add_argument("--decks", type=int, default=8)
    parser.add_argument("--run", type=int, default=game.RUN,
                        help="the threshold under test (default the firmware's RUN = %d)" % game.RUN)
    parser.add_argument("--target", type=float, default=1e-6, help="allowed false alarms per shoe")
    parser.add_argument("--batch", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--crosscheck", type=int, default=2000,
                        help="shoes also run through the firmware's detector (0: none)")
    args = parser.parse_args(argv)
    if args.shoes < 1 or args.batch < 1 or not 2 <= args.run <= 13 or not 1 <= args.decks <= 16:
        parser.error("need --shoes >= 1, --batch >= 1, --run 2..13, --decks 1..16")
    rng = np.random.default_rng(args.seed)
    lengths = list(range(2, args.run + 1))
    total = {k: 0 for k in lengths}
    sq = {k: 0.0 for k in lengths}
    alarms = 0
    done = 0
    checked = 0
    mismatches = 0
    compared = 0
    t0 = time.perf_counter()
    while done < args.shoes:
        n = min(args.batch, args.shoes - done)
        batch = shoes(rng, n, args.decks)
        w = run_windows(batch, args.run)
        for k in lengths:
            per = w[k][0].sum(axis=1, dtype=np.int64) + w[k][1].sum(axis=1, dtype=np.int64)
            total[k] += int(per.sum())
            sq[k] += float((per.astype(np.float64) ** 2).sum())
        alarms += int((w[args.run][0].any(axis=1) | w[args.run][1].any(axis=1)).sum())
        if checked < args.crosscheck:
            m = min(args.crosscheck - checked, n)
            for limit in sorted({3, 4, args.run}):
                want = alarm_positions(batch[:m], limit)
                for r in range(m):
                    compared += len(want[r])
                    if firmware_alarms(batch[r].tolist(), limit, args.decks) != want[r]:
                        mismatches += 1
            checked += m
        done += n
    seconds = time.perf_counter() - t0

    ok = True
    print("cold-deck bench: %d uniformly shuffled %d-deck shoes (numpy %s, seed %d), %.1f s"
          % (done, args.decks, np.__version__, args.seed, seconds))
    print("run length k: observed runs per shoe vs derived B(k) (docs/rules.md), z over the shoes' spread")
    for k in lengths:
        mean = total[k] / done
        var = max(sq[k] / done - mean * mean, 0.0)
        expected = float(bound(k, args.decks))
        se = math.sqrt(var / done) if var > 0 else math.sqrt(expected / done)
        z = (mean - expected) / se if se > 0 else 0.0
        flag = ""
        if total[k] >= 20 and abs(z) > 5:
            ok = False
            flag = "  <- disagrees with the derivation"
        print("  k=%2d  observed %.4e  derived %.4e  (%d runs)  z=%+.2f%s" % (k, mean, expected, total[k], z, flag))
    b = float(bound(args.run, args.decks))
    lo, hi = poisson_limits(alarms)
    print("threshold %d: derived bound B = %.3e per shoe (target %.0e)%s"
          % (args.run, b, args.target, "" if b <= args.target else "  <- over the target"))
    print("false alarms: %d in %d shoes, rate %.3e; 95%% upper limit %.3e, 99%% lower limit %.3e"
          % (alarms, done, alarms / done, hi / done, lo / done))
    if b > args.target:
        ok = False
    if lo / done > args.target:
        ok = False
        print("  the simulation refutes a false-alarm rate within the target")
    if args.crosscheck:
        print("firmware detector (Game.ordered) on %d of these shoes at limits %s: %d alarms compared, "
              "%d shoe(s) differ from the array code"
              % (checked, ",".join(str(x) for x in sorted({3, 4, args.run})), compared, mismatches))
        if mismatches:
            ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
