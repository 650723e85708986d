"""Exact probabilities and house edges of every wager for a composition.

Why it is fast without sampling: how many ordered six-card sequences deal a
given round depends on the composition only through falling factorials of
the counts of the cards the round draws. A round that draws, in some order,
the classes c1..ck of card (k of the six) from N cards of which n_v are of
class v is dealt by prod_v n_v (n_v - 1) ... (one factor per card of class
v) times (N - k)(N - k - 1)...(N - 5) sequences (any cards for the places
it leaves). That weight depends only on the multiset of classes drawn.

So every round is enumerated once, by class, and grouped by (what it pays,
the multiset it draws); for a composition, the weight of each multiset is a
vectorised product of six gathered factors, and every wager's expected
return is a fixed matrix applied to those weights:

* The main game (Ch 10) reads point values only: 10 classes, the rounds
  dealt by the firmware's own drawing rules (baccarat.rules) into the 400 end
  states (returns.STATES) that the point-only wagers read.
* Pairs, Lucky Nines, Royal 9 and Jackpot read only the four initial cards,
  through a few classes of card (13 ranks; nine by suit; nine, king and
  jack-or-queen by suit); Jackpot adds whether all four share one suit,
  weighed per suit from that suit's counts.

Everything that does not depend on the composition (the rounds, which
outcome each gives, the matrices) is built once per table setting
(``_plan``). Weights are exact int64 integers (16 decks' N(N-1)...(N-5) is
below 2**59, and each term of a sum is below the sum); returns are summed in
float64.
"""

from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np

from host_tools.settle import wagers
from host_tools.settle.core import cards, rules
from host_tools.settle.hands import Hands

from .composition import CompositionError
from .returns import STATES, gain, jobs, pricing_json, settings_json

MIN_CARDS = 6  # a round can need six cards; fewer cannot be priced (Ch 13E)
DRAWN = 6  # places of a six-card sequence
INITIAL = 4  # P1, B1, P2, B2 (Ch 8C)


# --- the grouped enumeration ------------------------------------------------

class _Groups:
    """Multisets of card classes, each as one flat index per drawn place.

    A multiset is keyed by ``sum(unit(v))`` over its cards (a count per
    class in base ``places + 1``), so a round adds its cards' units instead
    of sorting them. A place holding the j-th card of class v (j from 0)
    gathers ``n_v - j``; a place the round leaves (it drew fewer than
    ``places`` cards) gathers ``N - place``, any card left. The product of
    a multiset's gathered factors is its weight."""

    def __init__(self, classes, places):
        self.classes, self.places = classes, places
        self.base = places + 1
        self.index = {}
        self.rows = []

    def unit(self, v):
        return self.base ** v

    def column(self, key):
        """The column of the multiset ``key`` (a sum of units)."""
        col = self.index.get(key)
        if col is None:
            col = self.index[key] = len(self.rows)
            flat, rest = [], key
            for v in range(self.classes):
                rest, count = divmod(rest, self.base)
                flat += [v * self.places + j for j in range(count)]
            flat += [self.classes * self.places + j for j in range(len(flat), self.places)]
            self.rows.append(flat)
        return col

    def freeze(self):
        """Per place, the flat indices of every column (place-major: contiguous gathers)."""
        self.gather = np.ascontiguousarray(np.array(self.rows, dtype=np.intp).T)
        self.drawn = np.arange(self.places)
        self.by_rows = {}
        return self

    def weights(self, counts_by_class, total):
        """Exact int64 weight of every multiset, per row of ``counts_by_class``
        (rows x classes: one composition, or one suit of it, per row)."""
        k = np.asarray(counts_by_class, dtype=np.int64).reshape(-1, self.classes)
        rows = k.shape[0]
        table = np.empty((rows, self.classes + 1, self.places), dtype=np.int64)
        table[:, : self.classes] = k[:, :, None] - self.drawn
        table[:, self.classes] = total - self.drawn
        flat = table.ravel()
        g = self._gather(rows)
        w = flat.take(g[0])
        for place in range(1, self.places):
            w *= flat.take(g[place])
        return w

    def _gather(self, rows):
        """The gather indices for ``rows`` tables laid end to end: (place, row, column)."""
        g = self.by_rows.get(rows)
        if g is None:
            step = (self.classes + 1) * self.places
            g = self.by_rows[rows] = self.gather[:, None, :] + step * np.arange(rows)[None, :, None]
        return g


def _rounds(unit):
    """Every round by point class: (end state, multiset key, multiplicity).

    Each two-card hand is taken once as an unordered pair (multiplicity 2
    for two classes); who draws is asked of the firmware's Ch 10 rules."""
    index = {s: i for i, s in enumerate(STATES)}
    pairs = [(a, c, 1 if a == c else 2) for a in range(10) for c in range(a, 10)]
    for a, c, mp in pairs:
        p = (a + c) % 10
        for b, e, mb in pairs:
            q = (b + e) % 10
            four, w = unit[a] + unit[c] + unit[b] + unit[e], mp * mb
            if rules.is_natural(p) or rules.is_natural(q):  # Ch 10A: nobody draws
                yield index[(p, q, 2, 2)], four, w
            elif rules.player_draws(p):  # Ch 10B
                for x in range(10):
                    if rules.banker_draws(q, x):  # Ch 10E
                        for y in range(10):
                            yield index[((p + x) % 10, (q + y) % 10, 3, 3)], four + unit[x] + unit[y], w
                    else:
                        yield index[((p + x) % 10, q, 3, 2)], four + unit[x], w
            elif rules.banker_draws(q, rules.NO_THIRD):  # Ch 10D
                for y in range(10):
                    yield index[(p, (q + y) % 10, 2, 3)], four + unit[y], w
            else:
                yield index[(p, q, 2, 2)], four, w


class _MainGame:
    """The 400 end states as a sparse (state x multiset) matrix of multiplicities."""

    def __init__(self):
        self.groups = _Groups(10, DRAWN)
        cells = {}
        for state, key, w in _rounds([self.groups.unit(v) for v in range(10)]):
            cell = (state, key)
            cells[cell] = cells.get(cell, 0) + w
        order = sorted(cells)
        self.states = np.array([s for s, _k in order], dtype=np.intp)
        self.cols = np.array([self.groups.column(k) for _s, k in order], dtype=np.intp)
        self.groups.freeze()
        self.mult = np.array([cells[k] for k in order], dtype=np.int64)
        # reduceat over each state's run of cells; states no round ends in stay 0
        self.rows, self.starts = np.unique(self.states, return_index=True)

    def weights(self, points, total):
        return self.groups.weights(points, total)[0]

    def distribution(self, points, total):
        """Exact sequence counts of the 400 states (each below N(N-1)...(N-5))."""
        d = np.zeros(len(STATES), dtype=np.int64)
        d[self.rows] = np.add.reduceat(self.mult * self.weights(points, total)[self.cols], self.starts)
        return d

    def fold(self, per_state):
        """``per_state`` (rows x 400) times the multiplicities: (rows x multiset),
        so a row's sum over states is one product with the weights."""
        per_state = np.asarray(per_state)
        out = np.zeros((len(self.groups.rows), per_state.shape[0]), dtype=per_state.dtype)
        np.add.at(out, self.cols, (per_state[:, self.states] * self.mult).T)
        return np.ascontiguousarray(out.T)


@lru_cache(maxsize=1)
def _main_game():
    return _MainGame()


POINT_OF_CARD = np.array([cards.points(c) for c in range(52)], dtype=np.intp)


def main_distribution(n):
    """Sequence counts (ints) of the 400 STATES for point-class counts ``n``;
    they sum to N(N-1)...(N-5)."""
    n = [int(k) for k in n]
    return [int(x) for x in _main_game().distribution(n, sum(n))]


# --- the four-card wagers ----------------------------------------------------

NINE, JACK, QUEEN, KING = wagers.NINE, wagers.JACK, wagers.QUEEN, wagers.KING
OTHER = cards.make(cards.ACE, 0)  # stands for every card a scheme does not name


def _class_map(cls):
    return np.array([cls(c) for c in range(52)], dtype=np.intp)


def _rank_scheme():
    """13 ranks: Any Pair, and Jackpot's ranks (its flush is weighed apart)."""
    return _class_map(cards.rank), [cards.make(r, 0) for r in range(13)]


def _nines_scheme():
    """Nines by suit, and anything else: Lucky Nines."""
    return (_class_map(lambda c: cards.suit(c) if cards.rank(c) == NINE else 4),
            [cards.make(NINE, s) for s in range(4)] + [OTHER])


def _royal_scheme():
    """Nines, kings and jacks-or-queens by suit, and anything else: Royal 9."""
    def cls(c):
        r, s = cards.rank(c), cards.suit(c)
        if r == NINE:
            return s
        if r == KING:
            return 4 + s
        if r in (JACK, QUEEN):
            return 8 + s
        return 12

    reps = [cards.make(NINE, s) for s in range(4)] + [cards.make(KING, s) for s in range(4)]
    return _class_map(cls), reps + [cards.make(JACK, s) for s in range(4)] + [OTHER]


class _FourCards:
    """The four-card wagers of one class scheme: (multiset x job) summed returns.

    ``sets`` lists (jobs, as_a_set, flush). ``as_a_set``: those wagers read
    the four cards as a set (who holds which does not matter), so each
    multiset is settled once, times its orderings. ``flush``: they also read
    whether all four share one suit, so what a flush adds is weighed apart,
    per suit, from that suit's counts."""

    def __init__(self, make, sets):
        self.class_of, reps = make()
        self.classes = len(reps)
        self.groups = _Groups(self.classes, INITIAL)
        self.jobs = [j for jobs_, _set, _flush in sets for j in jobs_]
        plain, extra = {}, {}
        first = 0
        for jobs_, as_a_set, flush in sets:
            pad = [0.0] * first, [0.0] * (len(self.jobs) - first - len(jobs_))
            for four, w in (_sets if as_a_set else _deals)(self.classes):
                col = self.groups.column(sum(self.groups.unit(x) for x in four))
                a, c, b, e = (reps[x] for x in four)
                if flush:  # the Banker's cards of another suit: no flush among the plain returns
                    h = Hands(0, 0, 2, 2, (a, c), (_suit(b, 1), _suit(e, 1)))
                else:
                    h = Hands(0, 0, 2, 2, (a, c), (b, e))
                row = [w * gain(bet, h, t, amount) for _k, bet, t, amount in jobs_]
                _add(plain, col, pad[0] + row + pad[1])
                if flush:  # the same ranks all of one suit (the scheme's cards are)
                    s = Hands(0, 0, 2, 2, (a, c), (b, e))
                    more = [w * gain(bet, s, t, amount) - x for (_k, bet, t, amount), x in zip(jobs_, row)]
                    _add(extra, col, pad[0] + more + pad[1])
            first += len(jobs_)
        self.groups.freeze()
        self.plain = _dense(plain, len(self.groups.rows), len(self.jobs))
        self.extra = _dense(extra, len(self.groups.rows), len(self.jobs)) if extra else None
        # one bincount gives the scheme's class counts (row 0) and, for a
        # flush, each suit's (rows 1-4)
        suit = np.array([cards.suit(c) for c in range(52)], dtype=np.intp)
        self.bins = np.concatenate([self.class_of, (1 + suit) * self.classes + self.class_of][: 2 if extra else 1])
        self.rows = 5 if extra else 1

    def returns(self, counts, total):
        """Sum over four-card sequences of each job's return (float per job);
        ``counts`` are the 52 card counts as floats."""
        k = np.bincount(self.bins, weights=np.tile(counts, len(self.bins) // 52), minlength=self.rows * self.classes)
        w = self.groups.weights(k.astype(np.int64), total).astype(np.float64)
        acc = w[0] @ self.plain
        if self.extra is not None:
            acc += w[1:].sum(axis=0) @ self.extra
        return acc


def _deals(k):
    """(P1, P2, B1, B2 classes, orderings): each hand's two cards taken once, unordered."""
    pairs = [(a, c, 1 if a == c else 2) for a in range(k) for c in range(a, k)]
    for a, c, mp in pairs:
        for b, e, mb in pairs:
            yield (a, c, b, e), mp * mb


def _sets(k):
    """(four classes, orderings) for each multiset of four classes."""
    for four in combinations_with_replacement(range(k), INITIAL):
        orders = 24
        for x in set(four):
            orders //= _falling(four.count(x), four.count(x))
        yield four, orders


def _add(rows, col, row):
    rows[col] = [x + y for x, y in zip(rows[col], row)] if col in rows else row


def _suit(card, suit):
    return cards.make(cards.rank(card), suit)


def _dense(rows, n, width):
    m = np.zeros((n, width), dtype=np.float64)
    for col, row in rows.items():
        m[col] = row
    return m


# --- the plan, once per table setting ----------------------------------------

class _Plan:
    """Everything about pricing that does not depend on the composition."""

    def __init__(self, settings_text):
        every = jobs(settings_text)
        point = [j for j in every if j[1] not in wagers.CARD_WAGERS]
        self.point_keys = [j[0] for j in point]
        # return of each point-only wager in each of the 400 states
        self.point_gains = np.array(
            [[gain(bet, Hands(p, b, pn, bn), t, amount) for p, b, pn, bn in STATES] for _k, bet, t, amount in point])
        by = {bet: [j for j in every if j[1] == bet] for bet in wagers.CARD_WAGERS}
        self.four = [
            _FourCards(_rank_scheme, [(by["any_pair"], False, False), (by["jackpot"], True, True)]),
            _FourCards(_nines_scheme, [(by["lucky_nines"], True, False)]),
            _FourCards(_royal_scheme, [(by["royal9"], False, False)]),
        ]
        # folded through the main game's multiplicities: one product with the weights
        main = _main_game()
        self.point_returns = main.fold(self.point_gains)
        self.probability = main.fold(_probability_rows())


PROBABILITIES = ("banker", "player", "tie", "natural", "dragon7", "panda8")


def _probability_rows():
    """(probability x state) 0/1 matrix: which end states count for each probability."""
    rows = np.zeros((len(PROBABILITIES), len(STATES)), dtype=np.int64)
    for i, (p, b, pn, bn) in enumerate(STATES):
        h = Hands(p, b, pn, bn)
        rows[PROBABILITIES.index(h.winner), i] = 1
        rows[3, i] = h.player_natural or h.banker_natural
        rows[4, i] = h.dragon7
        rows[5, i] = h.panda8
    return rows


@lru_cache(maxsize=8)
def _plan(settings_text):
    _main_game()
    return _Plan(settings_text)


def _falling(k, j):
    w = 1
    for i in range(j):
        w *= k - i
    return w


def analyse(counts, settings=None):
    """``{"probability": {...}, "house_edge": {...}}`` for 52 card counts."""
    return _analyse(tuple(int(k) for k in counts), settings_json(settings))


@lru_cache(maxsize=256)
def _analyse(counts, settings_text):
    return price(counts, settings_text)


def price(counts, settings_text):
    """What ``analyse`` returns, never from its cache (the bench times this)."""
    return pricer(settings_text).analyse(counts)


@lru_cache(maxsize=32)
def pricer(settings_text, keys=None):
    """The Pricer of ``keys`` (a tuple; None: every key) under one table setting,
    shared by every monitor that asks for the same."""
    return Pricer(_plan(pricing_json(settings_text)), keys)


class Pricer:
    """House edges of chosen keys only: what a table offers, for its monitor."""

    def __init__(self, plan, keys=None):
        want = None if keys is None else set(keys)
        known = set(plan.point_keys).union(j[0] for part in plan.four for j in part.jobs)
        if want is not None and not want <= known:
            raise ValueError("no such house_edge key: %s" % ", ".join(sorted(want - known)))
        rows = [i for i, k in enumerate(plan.point_keys) if want is None or k in want]
        self.point_keys = [plan.point_keys[i] for i in rows]
        self.point_returns = np.ascontiguousarray(plan.point_returns[rows])
        self.probability = plan.probability
        self.four = []
        for part in plan.four:
            cols = [i for i, j in enumerate(part.jobs) if want is None or j[0] in want]
            if cols:
                self.four.append((part, cols, [part.jobs[i][0] for i in cols]))

    def edges(self, counts):
        """{key: house edge} for 52 card counts (a list or tuple of ints)."""
        return self._price(counts, False)[0]

    def analyse(self, counts):
        """``{"probability": ..., "house_edge": ...}`` as ``analyse`` gives it."""
        edge, w, seq6 = self._price(counts, True)
        prob = (self.probability @ w).tolist()  # exact: each sum is at most N(N-1)...(N-5)
        return {"probability": {k: v / seq6 for k, v in zip(PROBABILITIES, prob)},
                "house_edge": dict(sorted(edge.items()))}

    def _price(self, counts, always_main):
        total = sum(counts)
        if total < MIN_CARDS:
            raise CompositionError("%d cards left; a round can need 6, so it may not complete (Ch 13E)" % total)
        n = np.asarray(counts, dtype=np.float64)
        edge = {}
        w = seq6 = None
        if self.point_keys or always_main:
            points = np.bincount(POINT_OF_CARD, weights=n, minlength=10).astype(np.int64)
            w = _main_game().weights(points, total)
            seq6 = _falling(total, DRAWN)
            edge.update(zip(self.point_keys, (1.0 - self.point_returns @ w.astype(np.float64) / seq6).tolist()))
        seq4 = _falling(total, INITIAL)
        for part, cols, keys in self.four:
            back = part.returns(n, total)[cols]
            edge.update(zip(keys, (1.0 - back / seq4).tolist()))
        return edge, w, seq6
