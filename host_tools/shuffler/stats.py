"""Distribution functions and the randomness statistics of a shuffle, written
from the statistics (docs/shuffler.md, "Randomness tests"), not from the
firmware: each test says what a uniformly random permutation must show.

A shuffle is given as ``order``: order[p] is the feed index (0 = first card
fed, in new-deck order) of the card delivered at position p, top first.
No SciPy on the pit PC: the chi-square tail is the regularized upper
incomplete gamma function, computed as in Numerical Recipes (series below
a + 1, continued fraction above).
"""

import bisect
import math

CONFIDENCE = 0.99
ALPHA = 1 - CONFIDENCE


def igamc(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a), the upper regularized gamma."""
    if x <= 0:
        return 1.0
    lead = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(100000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * lead)
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return lead * h


def chi2_sf(x, df):
    return igamc(df / 2.0, x / 2.0)


def normal_sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2))


def two_sided(z):
    return math.erfc(abs(z) / math.sqrt(2))


class Result:
    """One test's outcome: statistic, p-value, pass at 99 %, and a line."""

    def __init__(self, name, statistic, p, detail=""):
        self.name = name
        self.statistic = statistic
        self.p = p
        self.detail = detail

    @property
    def passed(self):
        return self.p >= ALPHA

    def line(self):
        return "%-28s stat %12.3f  p %.4g  %s  %s" % (
            self.name, self.statistic, self.p, "pass" if self.passed else "FAIL", self.detail)

    def __repr__(self):
        return self.line()


# -- card by position ----------------------------------------------------
def card_by_position(orders, n, groups=52):
    """Pearson chi-square of the table (fed card group x position group).

    Cards and positions are put in ``groups`` groups of k = n / groups
    consecutive ones (k = 1 for one deck: the plain 52 x 52 table), so the
    expected count per cell, S k / groups, stays large for 8 decks.

    The correction: the cards of one shuffle are not independent draws but a
    permutation. Summed over S shuffles the block counts have covariance
    k^2/(n-1) (I - J/G) x (I - J/G), so Pearson's statistic is distributed as
    n/(n-1) times a chi-square with (G-1)^2 degrees of freedom, not as the
    chi-square itself (mean n/(n-1) (G-1)^2, not (G-1)^2): it is scaled by
    (n-1)/n before the tail is read. Without that a fair 52-card shuffler
    fails this test about 5 times in 100 at "99 %" (0.053).
    """
    k = n // groups
    if k * groups != n:
        raise ValueError("n must be a multiple of groups")
    counts = [0] * (groups * groups)
    s = 0
    for order in orders:
        s += 1
        for p in range(n):
            counts[(order[p] // k) * groups + p // k] += 1
    expected = s * k / groups
    pearson = sum((c - expected) ** 2 for c in counts) / expected
    stat = pearson * (n - 1) / n
    df = (groups - 1) ** 2
    return Result("card-by-position %dx%d" % (groups, groups), stat, chi2_sf(stat, df),
                  "df %d, S %d, E %.1f/cell" % (df, s, expected))


# -- rising sequences ------------------------------------------------------
def rising_sequences(order, n):
    """1 + the number of k with fed card k+1 delivered above fed card k."""
    pos = [0] * n
    for p in range(n):
        pos[order[p]] = p
    return 1 + sum(1 for k in range(n - 1) if pos[k + 1] < pos[k])


def rising_test(orders, n):
    """Mean (n+1)/2 and variance (n+1)/12 per shuffle (Eulerian numbers:
    the descents of a uniform permutation); z-test on the mean."""
    vals = [rising_sequences(o, n) for o in orders]
    s = len(vals)
    mean = sum(vals) / s
    z = (mean - (n + 1) / 2) / math.sqrt((n + 1) / 12 / s)
    return Result("rising sequences", z, two_sided(z),
                  "mean %.3f, expect %.1f, S %d" % (mean, (n + 1) / 2, s))


# -- adjacent pairs kept ---------------------------------------------------
def kept_pairs(order, n):
    """How many fed neighbours k, k+1 are still neighbours in that order."""
    return sum(1 for p in range(n - 1) if order[p + 1] == order[p] + 1)


def pairs_test(orders, n):
    """Each of the n-1 pairs is kept with probability 1/n and any two with
    1/(n(n-1)), so the count has mean (n-1)/n and variance (n^2-n-1)/n^2."""
    vals = [kept_pairs(o, n) for o in orders]
    s = len(vals)
    mean = sum(vals) / s
    mu = (n - 1) / n
    var = (n * n - n - 1) / (n * n)
    z = (mean - mu) / math.sqrt(var / s)
    return Result("adjacent pairs kept", z, two_sided(z),
                  "mean %.4f, expect %.4f, S %d" % (mean, mu, s))


# -- top and bottom cards --------------------------------------------------
def end_card_test(orders, n, which, bins=52):
    """Where the first (which=0) or last (which=n-1) fed card is delivered:
    uniform over n positions, read in ``bins`` equal bins; multinomial, so
    plain Pearson with bins-1 degrees of freedom."""
    width = n // bins
    counts = [0] * bins
    s = 0
    for order in orders:
        s += 1
        for p in range(n):
            if order[p] == which:
                counts[p // width] += 1
                break
    e = s / bins
    stat = sum((c - e) ** 2 for c in counts) / e
    label = "top card's position" if which == 0 else "bottom card's position"
    return Result(label, stat, chi2_sf(stat, bins - 1), "df %d, S %d" % (bins - 1, s))


# -- Diaconis-Fulman-Holmes guessing ---------------------------------------
def guess_score(order, n):
    """Correct guesses of a guesser who knows the feed order and sees each
    card after guessing it. Strategy (DFH 2013, for shelf and riffle
    shuffles): follow the run the last card is in; if the last step went
    down, guess the largest unseen card below the last one, else the
    smallest unseen card above it; start with the last card fed (the top of
    a shelf that was loaded on top)."""
    unseen = list(range(n))
    score = 0
    last = -1
    down = True
    for p in range(n):
        if last < 0:
            guess = unseen[-1]
        else:
            i = bisect.bisect_left(unseen, last)
            if down:
                guess = unseen[i - 1] if i > 0 else unseen[i]
            else:
                guess = unseen[i] if i < len(unseen) else unseen[i - 1]
        card = order[p]
        if card == guess:
            score += 1
        unseen.pop(bisect.bisect_left(unseen, card))
        if last >= 0:
            down = card < last
        last = card
    return score


def guessing_test(orders, n):
    """Against a uniform permutation any guesser naming an unseen card is
    right at step t with probability 1/(n-t), independently: the score has
    mean H_n = 1 + 1/2 + ... + 1/n (4.54 for 52 cards) and variance
    sum 1/k - 1/k^2. One-sided z-test: a guesser doing better is the fault."""
    vals = [guess_score(o, n) for o in orders]
    s = len(vals)
    mean = sum(vals) / s
    mu = sum(1.0 / k for k in range(1, n + 1))
    var = sum(1.0 / k - 1.0 / (k * k) for k in range(1, n + 1))
    z = (mean - mu) / math.sqrt(var / s)
    return Result("DFH guessing score", z, normal_sf(z),
                  "mean %.3f, expect %.3f, S %d" % (mean, mu, s))


def shuffle_battery(orders, n):
    """All the shuffle tests over one list of shuffles."""
    groups = 52
    return [card_by_position(orders, n, groups), rising_test(orders, n), pairs_test(orders, n),
            end_card_test(orders, n, 0), end_card_test(orders, n, n - 1),
            guessing_test(orders, n)]


# -- SP 800-22 tests over the DRBG's bits -----------------------------------
# Implemented from NIST SP 800-22 Rev. 1a, 2.1-2.3: no maintained package of
# them exists (nistrng, nist80022, sp80022suite and sts-pylib saw their last
# release in 2019-2021), so the three are written here from the text.
def bits_of(data):
    out = []
    for byte in data:
        for b in range(7, -1, -1):
            out.append((byte >> b) & 1)
    return out


def monobit(bits):
    """2.1 Frequency (monobit): S_n = sum(2b - 1), p = erfc(|S_n| / sqrt(2n))."""
    n = len(bits)
    s = 2 * sum(bits) - n
    sobs = abs(s) / math.sqrt(n)
    return Result("SP800-22 monobit", sobs, math.erfc(sobs / math.sqrt(2)), "n %d" % n)


def block_frequency(bits, m=128):
    """2.2 Frequency within a block: chi2 = 4M sum (pi_i - 1/2)^2 over
    N = n // M blocks, p = igamc(N/2, chi2/2)."""
    nblocks = len(bits) // m
    chi = 0.0
    for i in range(nblocks):
        pi = sum(bits[i * m:(i + 1) * m]) / m
        chi += (pi - 0.5) ** 2
    chi *= 4 * m
    return Result("SP800-22 block frequency", chi, igamc(nblocks / 2, chi / 2), "M %d, N %d" % (m, nblocks))


def runs(bits):
    """2.3 Runs: with pi the proportion of ones (the test needs
    |pi - 1/2| < 2/sqrt(n), else p = 0), V = 1 + the number of changes,
    p = erfc(|V - 2n pi(1-pi)| / (2 sqrt(2n) pi (1-pi)))."""
    n = len(bits)
    pi = sum(bits) / n
    if abs(pi - 0.5) >= 2 / math.sqrt(n):
        return Result("SP800-22 runs", 0.0, 0.0, "frequency prerequisite failed")
    v = 1 + sum(1 for k in range(n - 1) if bits[k] != bits[k + 1])
    num = abs(v - 2 * n * pi * (1 - pi))
    den = 2 * math.sqrt(2 * n) * pi * (1 - pi)
    return Result("SP800-22 runs", v, math.erfc(num / den), "n %d" % n)


def bit_battery(data):
    bits = bits_of(data)
    return [monobit(bits), block_frequency(bits), runs(bits)]
