"""Shuffle quality of one shoe, from the record: how much order survived.

A weak hand shuffle (Ch 5A wants the cards "randomly intermixed") leaves two
kinds of trace in the order the cards leave the shoe, each measured against
a reference order:

- **factory**: the order decks come in (each suit's ranks in sequence,
  ascending or descending, suits in any order; factory and the Ch 4
  suit-and-sequence orders alike);
- **previous**: the previous shoe's dealt order of the same cards (the
  last earlier shoe of the same batch in the record: with a shuffler the
  batches alternate, Ch 3B), which is what a weak shuffle of the discards
  carries over and what a shuffle tracker follows.

Against each, two statistics:

- **kept adjacencies** A: consecutive cards of this shoe that were
  neighbours in the reference (factory: the same suit one rank apart; with
  the physical card known, of the same deck too. previous: dealt one after
  the other, either order). Under a uniform shuffle, for a reference graph
  G on the N cards of the set (m edges, S2 the sum of squared degrees) and
  n cards dealt, with p = 2m/(N(N-1)), q1 = (S2 - 2m)/(N(N-1)(N-2)),
  q2 = (4m^2 + 4m - 4 S2)/(N(N-1)(N-2)(N-3)):
  E[A] = (n-1) p and
  Var[A] = (n-1) p(1-p) + 2(n-2)(q1 - p^2) + (n-2)(n-3)(q2 - p^2)
  (indicators of adjacent positions share a card: paths a-b-c; others are
  two disjoint edges). The p-value is the upper tail: Poisson(E[A]) when
  E[A] <= 20 (a count of rare successions), else normal with that variance.
- **rising sequences**: how many runs of the reference order the shoe
  splits into (Bayer-Diaconis: a riffle at most doubles them). previous:
  B = the number of reference neighbours (k, k+1) dealt out of order; for a
  uniform shuffle B is Eulerian (mean (M-1)/2, variance (M+1)/12 for M
  cards in both shoes), and the statistic min(B, M-1-B) (structure in either
  direction) has its exact distribution from the Eulerian numbers.
  factory: the same per (deck, suit) block of 13 ranks, summed over
  blocks; blocks are independent under a uniform shuffle, so the sum's
  distribution is the exact convolution. Needs the physical card (the card
  event's ``deck``); without it only the factory adjacencies are scored.

The shoe's p-value is the Bonferroni combination min(1, K * min p_i) over
its K statistics; the shoe is flagged weak when it is below ALPHA, so a
uniformly shuffled shoe is flagged at most ALPHA of the time.
"""

import functools
import json
import math

from host_tools.exits import ShoeError

from firmware.baccarat import cards
from firmware.link import events_schema as E

ALPHA = 0.01  # a uniformly shuffled shoe is flagged weak at most this often
POISSON_MAX = 20.0
STEP = 4  # the next rank of one suit in card codes (baccarat/cards.py)

_SHOE = E.require("shoe", "decks", "batch")
_CARD = E.require("card", "card", "deck")


class ScoreError(ShoeError, ValueError):
    """Input that cannot be scored; the message is one line."""


class Shoe:
    """One shoe of the record: its set (decks, batch) and the cards in the
    order they left, each as (code, deck) with deck 0 when unknown."""

    def __init__(self, number, decks, batch):
        self.number = number
        self.decks = decks
        self.batch = batch
        self.cards = []

    @property
    def physical(self):
        return bool(self.cards) and all(d > 0 for _c, d in self.cards)


def shoes_from_events(events):
    """Game events (dicts, as `shoe export` or `shoe deal` give them) ->
    [Shoe]. Raises ScoreError naming the first bad event."""
    out = []
    for i, ev in enumerate(events, 1):
        if not isinstance(ev, dict):
            raise ScoreError("event %d: not a JSON object" % i)
        if ev.get("source") is not None:
            continue
        kind = ev.get("type")
        if kind == "shoe":
            decks, batch = ev.get("decks"), ev.get("batch", "A")
            if not isinstance(decks, int) or isinstance(decks, bool) or not 1 <= decks <= 16:
                raise ScoreError("event %d: a shoe event needs decks 1..16, got %r" % (i, decks))
            out.append(Shoe(len(out) + 1, decks, batch))
        elif kind == "card":
            if not out:
                raise ScoreError("event %d: a card before any shoe event" % i)
            name, deck = ev.get("card"), ev.get("deck", 0)
            try:
                c = cards.parse(name) if isinstance(name, str) else None
            except ValueError:
                c = None
            if c is None:
                raise ScoreError("event %d: card %r is not a card such as 9H" % (i, name))
            if not isinstance(deck, int) or isinstance(deck, bool) or not 0 <= deck <= 16:
                raise ScoreError("event %d: deck %r is not 1..16" % (i, deck))
            out[-1].cards.append((c, deck))
    return out


# ------------------------------------------------------------ distributions

def _poisson_sf(k, mu):
    """P(X >= k) for X ~ Poisson(mu); the far tail summed upward in log
    space, so a tiny p-value is not lost to 1 - cdf."""
    if k <= 0:
        return 1.0
    if mu <= 0:
        return 0.0
    if k > mu:
        total = 0.0
        i = k
        while True:
            term = math.exp(-mu + i * math.log(mu) - math.lgamma(i + 1))
            total += term
            if term < total * 1e-17 or i > k + 1000:
                return min(1.0, total)
            i += 1
    term = math.exp(-mu)
    cdf = 0.0
    for i in range(k):
        cdf += term
        term *= mu / (i + 1)
    return max(0.0, 1.0 - cdf)


def _normal_sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2))


@functools.lru_cache(maxsize=None)
def eulerian(n):
    """Eulerian numbers A(n, k), k = 0..n-1: permutations of n with k descents."""
    row = [1]
    for m in range(2, n + 1):
        new = [0] * m
        for k in range(m):
            a = (k + 1) * row[k] if k < len(row) else 0
            b = (m - k) * row[k - 1] if k >= 1 else 0
            new[k] = a + b
        row = new
    return tuple(row) if n >= 1 else (1,)


@functools.lru_cache(maxsize=None)
def folded(n):
    """Distribution of min(B, n-1-B), B the descents of a uniform
    permutation of n, as a tuple of probabilities indexed by value."""
    if n <= 1:
        return (1.0,)
    row = eulerian(n)
    total = math.factorial(n)
    out = [0.0] * ((n - 1) // 2 + 1)
    for k, a in enumerate(row):
        out[min(k, n - 1 - k)] += a / total
    return tuple(out)


def _convolve(a, b):
    out = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _moments(dist):
    mean = sum(i * p for i, p in enumerate(dist))
    var = sum((i - mean) ** 2 * p for i, p in enumerate(dist))
    return mean, math.sqrt(max(var, 0.0))


def _stat(observed, expected, sd, p):
    return {"observed": observed, "expected": round(expected, 4), "sd": round(sd, 4), "p": p}


# ------------------------------------------------------------ adjacencies

def adjacency_moments(n, nodes, m, s2):
    """E[A] and sd[A] for n cards dealt from ``nodes`` cards, reference graph
    with m edges and sum of squared degrees s2 (module docstring)."""
    N = nodes
    if n < 2 or N < 4:
        return 0.0, 0.0
    p = 2.0 * m / (N * (N - 1))
    q1 = (s2 - 2.0 * m) / (N * (N - 1) * (N - 2))
    q2 = (4.0 * m * m + 4.0 * m - 4.0 * s2) / (N * (N - 1) * (N - 2) * (N - 3))
    var = (n - 1) * p * (1 - p) + 2 * (n - 2) * (q1 - p * p) + (n - 2) * (n - 3) * (q2 - p * p)
    return (n - 1) * p, math.sqrt(max(var, 0.0))


def _tail(observed, mean, sd):
    if mean <= POISSON_MAX:
        return _poisson_sf(observed, mean)
    if sd <= 0:
        return 1.0 if observed <= mean else 0.0
    return _normal_sf((observed - 0.5 - mean) / sd)


def _face_graph(decks, related):
    """m and S2 of the graph on the 52*decks labelled cards in which two
    distinct cards are joined when their faces are ``related`` (a symmetric
    set of (f, g) pairs, (f, f) allowed)."""
    deg_sum = 0
    s2 = 0
    for f in range(52):
        d = sum(decks for g in range(52) if (f, g) in related) - (1 if (f, f) in related else 0)
        deg_sum += d * decks
        s2 += d * d * decks
    return deg_sum // 2, s2


def _factory_faces():
    rel = set()
    for f in range(52):
        for g in (f + STEP, f - STEP):
            if 0 <= g < 52:
                rel.add((f, g))
    return rel


_FACTORY = frozenset(_factory_faces())


def factory_adjacency(shoe):
    """Kept factory adjacencies: consecutive cards one rank apart in one
    suit (and one deck, when the physical card is known)."""
    seq = shoe.cards
    n = len(seq)
    N = 52 * shoe.decks
    if shoe.physical:
        # One deck's graph: 4 suits x 12 edges; degrees 1 (ace, king) or 2.
        m, s2 = 48 * shoe.decks, 184 * shoe.decks
        observed = sum(1 for (a, da), (b, db) in zip(seq, seq[1:]) if da == db and (a, b) in _FACTORY)
    else:
        m, s2 = _face_graph(shoe.decks, _FACTORY)
        observed = sum(1 for (a, _), (b, _) in zip(seq, seq[1:]) if (a, b) in _FACTORY)
    mean, sd = adjacency_moments(n, N, m, s2)
    return _stat(observed, mean, sd, _tail(observed, mean, sd))


def previous_adjacency(shoe, prev):
    """Kept adjacencies of the previous shoe's dealt order (either order)."""
    seq = shoe.cards
    n = len(seq)
    N = 52 * shoe.decks
    if shoe.physical and prev.physical:
        edges = set()
        for a, b in zip(prev.cards, prev.cards[1:]):
            if a != b:
                edges.add((a, b))
                edges.add((b, a))
        deg = {}
        for a, _b in edges:
            deg[a] = deg.get(a, 0) + 1
        m = len(edges) // 2
        s2 = sum(d * d for d in deg.values())
        observed = sum(1 for a, b in zip(seq, seq[1:]) if (a, b) in edges)
    else:
        rel = set()
        for (a, _), (b, _) in zip(prev.cards, prev.cards[1:]):
            rel.add((a, b))
            rel.add((b, a))
        m, s2 = _face_graph(shoe.decks, rel)
        observed = sum(1 for (a, _), (b, _) in zip(seq, seq[1:]) if (a, b) in rel)
    mean, sd = adjacency_moments(n, N, m, s2)
    return _stat(observed, mean, sd, _tail(observed, mean, sd))


# -------------------------------------------------------- rising sequences

def _breaks(positions_in_reference_order):
    """Reference neighbours dealt out of order, and how many cards."""
    p = positions_in_reference_order
    return sum(1 for x, y in zip(p, p[1:]) if y < x), len(p)


def factory_rising(shoe):
    """Per (deck, suit) block, rank neighbours dealt out of order, folded
    over the two directions, summed; exact p-value P(S <= s)."""
    blocks = {}
    for pos, (c, d) in enumerate(shoe.cards):
        blocks.setdefault((d, c & 3), []).append((c >> 2, pos))
    dist = [1.0]
    s = 0
    for key in sorted(blocks):
        ranked = [pos for _r, pos in sorted(blocks[key])]
        b, size = _breaks(ranked)
        s += min(b, size - 1 - b)
        dist = _convolve(dist, folded(size))
    mean, sd = _moments(dist)
    return _stat(s, mean, sd, min(1.0, sum(dist[:s + 1])))


def previous_rising(shoe, prev):
    """The previous shoe's order, rank neighbours there dealt out of order
    here, folded; exact p-value P(min(B, M-1-B) <= s)."""
    where = {}
    for pos, card in enumerate(shoe.cards):
        where[card] = pos
    ranked = [where[card] for card in prev.cards if card in where]
    b, size = _breaks(ranked)
    s = min(b, size - 1 - b) if size else 0
    dist = folded(max(size, 1))
    mean, sd = _moments(dist)
    return _stat(s, mean, sd, min(1.0, sum(dist[:s + 1])))


# ------------------------------------------------------------- the score

def score(shoe, prev=None, alpha=ALPHA):
    """The shoe's statistics against both references (``prev`` None: the
    first shoe of its batch in the record), its combined p-value and the
    verdict."""
    stats = {"factory_adjacency": factory_adjacency(shoe)}
    if shoe.physical:
        stats["factory_rising"] = factory_rising(shoe)
    if prev is not None and prev.cards:
        stats["previous_adjacency"] = previous_adjacency(shoe, prev)
        if shoe.physical and prev.physical:
            stats["previous_rising"] = previous_rising(shoe, prev)
    p = min(1.0, len(stats) * min(s["p"] for s in stats.values()))
    return {"shoe": shoe.number, "decks": shoe.decks, "batch": shoe.batch, "cards": len(shoe.cards),
            "physical": shoe.physical, "previous": prev.number if prev is not None else None,
            "stats": stats, "p": p, "alpha": alpha, "weak": p < alpha}


def score_all(shoes, alpha=ALPHA):
    """Every shoe scored, each against the last earlier shoe of its batch."""
    last = {}
    out = []
    for shoe in shoes:
        if shoe.cards:
            out.append(score(shoe, last.get(shoe.batch), alpha))
            last[shoe.batch] = shoe
    return out


def score_events(events, alpha=ALPHA):
    return score_all(shoes_from_events(events), alpha)


def parse_lines(data):
    """Bytes of event JSON lines -> events; ScoreError names the bad line."""
    events = []
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScoreError("line %d: not UTF-8 text (byte 0x%02x at column %d)"
                             % (number, raw[exc.start], exc.start + 1))
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise ScoreError("line %d: not a JSON event: %s" % (number, str(exc).splitlines()[0][:80]))
    return events
