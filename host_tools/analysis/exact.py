"""Exact probabilities and house edges of every wager for a composition.

Why it is fast without sampling:

* The Ch 10 game depends only on point values, so the main enumeration runs
  over the 10 point classes with their multiplicities, over unordered
  two-card hands (55 per side), and ends in 400 states (Player total, Banker
  total, card counts). Third cards are applied per pair of two-card totals,
  not per initial hand (see main_distribution). Every wager that reads only
  totals and card counts is priced from those 400 weights.
* Pairs, Lucky Nines and Royal 9 depend only on the first four cards, and on
  few card classes (13 ranks; nine-by-suit; nine/king/jack-queen-by-suit), so
  they are enumerated over those classes alone. Jackpot depends on the
  rank multiset of the four cards and whether they share one suit.
* Which outcome each state or class combination gives is independent of the
  composition, so it is worked out once, with the settlement resolvers, and
  only the weights are recomputed per composition. Results are cached.

All weights are exact integers: a state's weight is its number of ordered
six-card sequences, so the weights sum to N(N-1)...(N-5).
"""

from functools import lru_cache
import json

from host_tools.settle import paytables as pt
from host_tools.settle import wagers
from host_tools.settle.core import cards, rules
from host_tools.settle.hands import Hands
from host_tools.settle.table import Table

from .composition import CompositionError, by_points

# The firmware's Ch 10E decision as a flat table, [banker_total * 10 +
# player third-card points], because the enumeration asks it in a hot loop.
BANKER_DRAWS = tuple(rules.banker_draws(b, p) for b in range(10) for p in range(10))
NATURAL = tuple(rules.is_natural(t) for t in range(10))  # Ch 10A
PLAYER_DRAWS = tuple(rules.player_draws(t) for t in range(10))  # Ch 10B
BANKER_ALONE = tuple(rules.banker_draws(t, rules.NO_THIRD) for t in range(10))  # Ch 10D

MIN_CARDS = 6  # a round can need six cards; fewer cannot be priced (Ch 13E)

# STATES[i] = (player total, banker total, player cards, banker cards)
STATES = [(p, b, pn, bn) for p in range(10) for b in range(10) for pn in (2, 3) for bn in (2, 3)]


def main_distribution(n):
    """Sequence counts of the 400 STATES for point-class counts ``n``.

    The four initial cards are enumerated as unordered hands. The third
    cards are not: what they add depends on the cards left, which is the
    composition less the four initial cards, so it is linear in a few sums
    over the initial hands (of w, w*d and w*d*d, where d counts the removed
    cards per class). Those sums are gathered per (Player, Banker) two-card
    total, with the per-class vectors packed into one Python int (one bit
    field per class) so that adding a vector is one big-int operation; the
    third-card draws are then applied once per total pair, not once per
    initial hand.
    """
    n = list(n)
    total = sum(n)
    m = total - 4
    f_bits = max(64, (total**6).bit_length() + 1)  # a packed field never overflows
    unit = [1 << (f_bits * v) for v in range(10)]
    mask = (1 << f_bits) - 1
    stand = m * (m - 1)
    npk = sum(k * unit[v] for v, k in enumerate(n))
    d = [0] * 400
    s0 = [0] * 100
    t1 = [0] * 100
    u = [[0] * 10 for _ in range(100)]
    vv = [[0] * 10 for _ in range(100)]
    removed = [0] * 10
    for a in range(10):
        ka = n[a] - removed[a]
        if ka <= 0:
            continue
        removed[a] += 1
        for c in range(a, 10):
            kc = n[c] - removed[c]
            if kc <= 0:
                continue
            removed[c] += 1
            wp = ka * kc * (1 if a == c else 2)
            p = (a + c) % 10
            for b in range(10):
                kb = n[b] - removed[b]
                if kb <= 0:
                    continue
                removed[b] += 1
                for e in range(b, 10):
                    ke = n[e] - removed[e]
                    if ke <= 0:
                        continue
                    removed[e] += 1
                    w = wp * kb * ke * (1 if b == e else 2)
                    q = (b + e) % 10
                    if NATURAL[p] or NATURAL[q] or not (PLAYER_DRAWS[p] or BANKER_ALONE[q]):
                        d[(p * 10 + q) * 4] += w * stand  # nobody draws
                    else:
                        g = p * 10 + q
                        s0[g] += w
                        dp = unit[a] + unit[c] + unit[b] + unit[e]
                        t1[g] += w * dp
                        if PLAYER_DRAWS[p]:
                            ug, vg = u[g], vv[g]
                            for x in {a, c, b, e}:
                                wx = w * removed[x]
                                ug[x] += wx
                                vg[x] += wx * dp
                    removed[e] -= 1
                removed[b] -= 1
            removed[c] -= 1
        removed[a] -= 1
    draws = BANKER_DRAWS  # Ch 10E
    packed = {}  # (Player final total, Banker two-card total, state kind) -> packed over Banker third card
    for g in range(100):
        if not s0[g]:
            continue
        p, q = divmod(g, 10)
        left = npk * s0[g] - t1[g]  # sum of w * (remaining counts), packed over y
        if not PLAYER_DRAWS[p]:  # Player stands, Banker draws alone (Ch 10D)
            packed[(p, q, 1)] = packed.get((p, q, 1), 0) + left * (m - 1)
            continue
        ug, vg = u[g], vv[g]
        for x in range(10):
            rx = n[x] * s0[g] - ug[x]
            if not rx:
                continue
            p3 = (p + x) % 10
            if draws[q * 10 + x]:
                key = (p3, q, 3)
                packed[key] = packed.get(key, 0) + n[x] * left - (npk * ug[x] - vg[x]) - rx * unit[x]
            else:
                d[(p3 * 10 + q) * 4 + 2] += rx * (m - 1)
    for (p, q, kind), val in packed.items():
        for y in range(10):
            f = (val >> (f_bits * y)) & mask
            if f:
                d[(p * 10 + (q + y) % 10) * 4 + kind] += f
    return d


# --- which keys exist, priced against which table -------------------------

BANKER_KEYS = {
    "banker": "standard",
    "ez_banker": "ez",
    "fortune7_banker": "fortune7",
    "no_commission_banker": "no-commission",
}
KEY_OF_BANKER = {des: key for key, des in BANKER_KEYS.items()}
KEY_OF_BANKER["five-treasures"] = "banker"


def key_of(bet, table):
    """The house_edge key of a wager as ``table`` offers it."""
    if bet == "banker":
        return KEY_OF_BANKER[table.designation]
    group = pt.PAYTABLE_OF.get(bet)
    return bet + "_" + table.paytable(group) if group else bet


def _variants(settings):
    """(key, bet, Table) for every wager under every paytable."""
    base = {k: v for k, v in settings.items() if k in ("tie_odds", "royal9_wager", "royal9_meters")}
    chosen_royal = settings.get("royal9", "A")
    out = []
    for key, des in BANKER_KEYS.items():
        out.append((key, "banker", Table(dict(base, designation=des))))
    for bet in pt.BETS:
        if bet == "banker":
            continue
        group = pt.PAYTABLE_OF.get(bet)
        for letter in pt.PAYTABLES[group] if group else (None,):
            s = dict(base, designation="standard")
            if group:
                s[group] = letter
                if group == "royal9" and letter != chosen_royal:
                    s.pop("royal9_meters", None)  # given meters belong to the table's own paytable
            t = Table(s)
            out.append((key_of(bet, t), bet, t))
    return out


def gain(bet, hands, table, amount):
    """Return per unit staked, stake included and commission (Ch 12C, exact 5 %) taken:
    0 lose, 1 push, 1 + winnings/stake on a win. ``amount`` sizes fixed awards."""
    outcome, award = wagers.resolve(bet, hands, table, "player")
    if outcome != "win":
        return 0.0 if outcome == "lose" else 1.0
    kind = award[0]
    if kind == "odds":
        won = award[1] / award[2]
    elif kind == "fixed":
        won = award[1] / amount
    else:
        won = table.royal9_meters[award[1]] * award[2] / 100.0 / amount
    if wagers.commission(bet, table):
        won *= 1.0 - pt.VIG_PERCENT / 100.0
    return 1.0 + won


# --- class schemes for the four-card wagers --------------------------------

NINE, JACK, QUEEN, KING = wagers.NINE, wagers.JACK, wagers.QUEEN, wagers.KING


def _scheme_ranks():
    return (lambda c: cards.rank(c)), [cards.make(r, 0) for r in range(13)]


def _scheme_nines():
    def cls(c):
        return cards.suit(c) if cards.rank(c) == NINE else 4

    return cls, [cards.make(NINE, s) for s in range(4)] + [cards.make(1, 0)]


def _scheme_royal():
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
    reps += [cards.make(JACK, s) for s in range(4)] + [cards.make(1, 0)]
    return cls, reps


SCHEMES = {"any_pair": _scheme_ranks, "lucky_nines": _scheme_nines, "royal9": _scheme_royal}


def _combos(scheme, jobs):
    """Class combinations (a, c, b, e, orderings) that do not lose, with their gains per job."""
    _cls, reps = SCHEMES[scheme]()
    k = len(reps)
    pairs = [(a, c) for a in range(k) for c in range(a, k)]
    out = []
    for a, c in pairs:
        for b, e in pairs:
            h = Hands(0, 0, 2, 2, (reps[a], reps[c]), (reps[b], reps[e]))
            gains = [gain(bet, h, t, amount) for _key, bet, t, amount in jobs]
            if any(gains):
                out.append((_offsets((a, c, b, e)), (1 if a == c else 2) * (1 if b == e else 2), gains))
    return out


def _offsets(items):
    """(class, already drawn) per card, so an ordered draw weighs prod(count - drawn)."""
    seen = {}
    out = []
    for x in items:
        out.append((x, seen.get(x, 0)))
        seen[x] = seen.get(x, 0) + 1
    return tuple(out)


def _weight(k, offsets):
    (c0, o0), (c1, o1), (c2, o2), (c3, o3) = offsets
    return (k[c0] - o0) * (k[c1] - o1) * (k[c2] - o2) * (k[c3] - o3)


def _jackpot_combos(jobs):
    """Rank multisets of four cards with (gains if not flush, gains if flush)."""
    out = []
    for r1 in range(13):
        for r2 in range(r1, 13):
            for r3 in range(r2, 13):
                for r4 in range(r3, 13):
                    ranks = (r1, r2, r3, r4)
                    plain = [cards.make(r, 0 if i == 0 else 1) for i, r in enumerate(ranks)]
                    suited = [cards.make(r, 0) for r in ranks]
                    row = []
                    for four in (plain, suited):
                        h = Hands(0, 0, 2, 2, (four[0], four[2]), (four[1], four[3]))
                        row.append([gain(bet, h, t, amount) for _key, bet, t, amount in jobs])
                    if any(row[0]) or any(row[1]):
                        orders = 24
                        for r in set(ranks):
                            orders //= _falling(ranks.count(r), ranks.count(r))
                        flush_extra = [f - g for f, g in zip(row[1], row[0])]
                        out.append((_offsets(ranks), orders, row[0], flush_extra))
    return out


def _falling(k, j):
    w = 1
    for i in range(j):
        w *= k - i
    return w


@lru_cache(maxsize=8)
def _plan(settings_json):
    """Everything about pricing that does not depend on the composition."""
    settings = json.loads(settings_json)
    variants = _variants(settings)
    amount_of = settings.get("royal9_wager", pt.ROYAL9_WAGER)
    point_jobs, card_jobs = [], {"any_pair": [], "lucky_nines": [], "royal9": [], "jackpot": []}
    for key, bet, t in variants:
        job = (key, bet, t, amount_of)
        (card_jobs[bet] if bet in wagers.CARD_WAGERS else point_jobs).append(job)
    # gain of each point-only wager in each of the 400 states
    state_gains = []
    for key, bet, t, amount in point_jobs:
        state_gains.append((key, [gain(bet, Hands(p, b, pn, bn), t, amount) for p, b, pn, bn in STATES]))
    schemes = {}
    for s, make in SCHEMES.items():
        cls, reps = make()
        schemes[s] = (cls, len(reps), card_jobs[s], _combos(s, card_jobs[s]))
    return point_jobs, state_gains, schemes, card_jobs["jackpot"], _jackpot_combos(card_jobs["jackpot"])


def _settings_json(settings):
    s = dict(settings or {})
    s.setdefault("designation", "standard")
    Table(s)  # validate now, with the table's own message
    return json.dumps(s, sort_keys=True)


def analyse(counts, settings=None):
    """``{"probability": {...}, "house_edge": {...}}`` for 52 card counts."""
    return _analyse(tuple(counts), _settings_json(settings))


@lru_cache(maxsize=256)
def _analyse(counts, settings_json):
    total = sum(counts)
    if total < MIN_CARDS:
        raise CompositionError("%d cards left; a round can need 6, so it may not complete (Ch 13E)" % total)
    _point_jobs, state_gains, schemes, jack_jobs, jack_combos = _plan(settings_json)
    d = main_distribution(by_points(counts))
    seq6 = _falling(total, 6)
    edge = {}
    for key, g in state_gains:
        edge[key] = 1.0 - sum(w * x for w, x in zip(d, g) if w) / seq6
    seq4 = _falling(total, 4)
    for cls, classes, jobs, combos in schemes.values():
        k = [0] * classes
        for c, n in enumerate(counts):
            k[cls(c)] += n
        acc = [0.0] * len(jobs)
        for offsets, orders, gains in combos:
            w = _weight(k, offsets)
            if w:
                w *= orders
                for i, x in enumerate(gains):
                    if x:
                        acc[i] += w * x
        for (key, *_rest), s in zip(jobs, acc):
            edge[key] = 1.0 - s / seq4
    # Jackpot: weight of each rank multiset, plus the extra gain when all
    # four cards share a suit (flush weight per suit from that suit's counts).
    acc = [0.0] * len(jack_jobs)
    ranks_n = [sum(counts[r * 4 : r * 4 + 4]) for r in range(13)]
    suit_n = [[counts[r * 4 + s] for r in range(13)] for s in range(4)]
    for offsets, orders, plain_gain, flush_extra in jack_combos:
        allw = _weight(ranks_n, offsets)
        if not allw:
            continue
        flush = _weight(suit_n[0], offsets) + _weight(suit_n[1], offsets)
        flush += _weight(suit_n[2], offsets) + _weight(suit_n[3], offsets)
        for i in range(len(jack_jobs)):
            acc[i] += orders * (allw * plain_gain[i] + flush * flush_extra[i])
    for (key, *_rest), s in zip(jack_jobs, acc):
        edge[key] = 1.0 - s / seq4
    return {"probability": _probabilities(d, seq6), "house_edge": dict(sorted(edge.items()))}


def _probabilities(d, seq6):
    prob = {"banker": 0, "player": 0, "tie": 0, "natural": 0, "dragon7": 0, "panda8": 0}
    for w, (p, b, pn, bn) in zip(d, STATES):
        if not w:
            continue
        h = Hands(p, b, pn, bn)
        prob[h.winner] += w
        if h.player_natural or h.banker_natural:
            prob["natural"] += w
        if h.dragon7:
            prob["dragon7"] += w
        if h.panda8:
            prob["panda8"] += w
    return {k: v / seq6 for k, v in prob.items()}
