"""How each Chapter 7 wager is decided, and which Chapter 12 award it earns.

``resolve(bet, hands, table)`` returns ``(outcome, award)``: outcome is
"win", "lose" or "push"; award (only for a win) is one of

* ``("odds", win, stake)``  -- pays ``amount * win / stake``;
* ``("fixed", cents)``      -- pays a fixed amount (Royal 9);
* ``("meter", name, pct)``  -- pays ``pct`` % of a progressive meter.

The readings of ambiguous rules text are explained in docs/wagers.md; each
function cites the section it implements.
"""

from . import paytables as pt
from .core import cards

LOSE = ("lose", None)
PUSH = ("push", None)
NINE = 8  # rank index of the nine (ace = 0)
JACK, QUEEN, KING = 10, 11, 12
HEARTS, SPADES = 2, 3


def _win(odds, stake=1):
    return ("win", ("odds", odds, stake))


# Dragon 7 (Ch 1B(1)), Panda 8 (1B(5)), One Up, naturals, pairs and the
# winner are facts of the round: ``hands.Hands`` takes them from the
# firmware's baccarat.rules, which the shoe announces with. The Fortune 7 of
# EZ/Fortune 7 tables and the Five Treasures Fortune 7 wager ("Banker wins
# with three cards totalling 7") are read as the Dragon 7 hand, Golden 8 as
# the Panda 8 hand (docs/rules.md, docs/wagers.md).


def _three_card(count, total, wanted):
    return count == 3 and total == wanted


def _blazing(h):
    """Ch 7A(14): both hands total 7 with two cards each, or three each."""
    if h.player_total != 7 or h.banker_total != 7 or h.player_count != h.banker_count:
        return None
    return "two" if h.player_count == 2 else "three"


def _heavenly(h):
    """Ch 7A(13), 12P(3): how many hands hold three cards totalling 9."""
    return _three_card(h.player_count, h.player_total, 9) + _three_card(h.banker_count, h.banker_total, 9)


def player(h, table):  # Ch 7A(2), 12A
    w = h.winner
    if w == "tie":
        return PUSH
    return _win(*pt.EVEN) if w == "player" else LOSE


def banker(h, table):  # Ch 7A(1), 12C, 12S
    w = h.winner
    if w == "tie":
        return PUSH
    if w == "player":
        return LOSE
    if table.designation in ("ez", "fortune7") and h.dragon7:
        return PUSH  # Ch 7A(1)(c)(ii)/(iii)
    if table.designation == "no-commission" and h.banker_total == 6:
        return _win(*pt.NO_COMMISSION_SIX)
    return _win(*pt.EVEN)


def tie(h, table):  # Ch 7A(3), 12B
    return _win(table.tie_odds) if h.winner == "tie" else LOSE


def _dragon_bonus(mine, theirs, mine_natural, theirs_natural, table):  # Ch 7A(4), 12F
    pay = pt.DRAGON_BONUS[table.paytable("dragon_bonus")]
    if mine_natural:
        if theirs_natural and mine == theirs:
            return PUSH
        return _win(pay["natural"]) if mine > theirs or not theirs_natural else LOSE
    margin = mine - theirs
    return _win(pay[margin]) if margin >= 4 else LOSE


def dragon_bonus_player(h, table):
    return _dragon_bonus(h.player_total, h.banker_total, h.player_natural, h.banker_natural, table)


def dragon_bonus_banker(h, table):
    return _dragon_bonus(h.banker_total, h.player_total, h.banker_natural, h.player_natural, table)


def dragon7_wager(h, table):  # Ch 7A(5), 12G
    return _win(pt.DRAGON7) if h.dragon7 else LOSE


def panda8_wager(h, table):  # Ch 7A(6), 12H
    return _win(pt.PANDA8) if h.panda8 else LOSE


def fortune7(h, table):  # Ch 7A(7), 12I
    return _win(pt.FORTUNE7) if h.dragon7 else LOSE


def one_up(h, table):  # Ch 7A(8), 12J: Player beats Banker by exactly one point
    if not h.one_up:
        return LOSE
    return _win(pt.ONE_UP["one_nil" if h.player_total == 1 else "by_one"])


def fortune7_5t(h, table):  # Ch 7A(11), 12P(1)
    return _win(pt.FORTUNE7_5T) if h.dragon7 else LOSE


def golden8(h, table):  # Ch 7A(12), 12P(2)
    return _win(pt.GOLDEN8) if h.panda8 else LOSE


def heavenly9(h, table):  # Ch 7A(13), 12P(3)
    n = _heavenly(h)
    if n == 0:
        return LOSE
    return _win(pt.HEAVENLY9["both" if n == 2 else "one"])


def blazing7s(h, table):  # Ch 7A(14), 12P(4); Paytable A pays only three-card 7-7
    kind = _blazing(h)
    odds = pt.BLAZING7S[table.paytable("blazing7s")].get(kind)
    return _win(odds) if odds else LOSE


def cover_all(h, table):  # Ch 7A(15), 12P(5)
    hit = h.dragon7 or h.panda8 or _heavenly(h) > 0 or _blazing(h) is not None
    return _win(pt.COVER_ALL) if hit else LOSE


def lucky6(h, table):  # Ch 7A(18), 12T
    if h.winner != "banker" or h.banker_total != 6:
        return LOSE
    return _win(pt.LUCKY6["two" if h.banker_count == 2 else "three"])


def any_pair(h, table, hand):
    """Ch 7A(16), 12Q: the named hand's first two cards are of one rank.

    The wager names its hand: "the Player's Hand or the Banker's Hand" paid
    at 11 to 1 is a one-hand pair bet (a pair in either hand would make
    11 to 1 a player-favoured game); see docs/wagers.md.
    """
    if not h.pair(hand):
        return LOSE
    first = h.player[0] if hand == "player" else h.banker[0]
    return _win(pt.ANY_PAIR["nines" if cards.rank(first) == NINE else "pair"])


def lucky_nines(h, table):  # Ch 7A(17), 12R
    suits = [cards.suit(c) for c in h.initial() if cards.rank(c) == NINE]
    n = len(suits)
    if n == 0:
        return LOSE
    if n == 4:
        kind = "four"
    elif n == 1:
        kind = "nine_diamonds" if suits[0] == 1 else "nine"
    else:
        same = suits.count(suits[0]) == n
        kind = ("three" if n == 3 else "two") + ("_suited" if same else "")
    return _win(dict(pt.LUCKY_NINES[table.paytable("lucky_nines")])[kind])


# Jackpot's "Four Card Royal" (Ch 12M(1)(a)) is the published Jackpot Baccarat
# game's "mini royal": A, K, Q and J of one suit (docs/wagers.md, Jackpot).
# T-J-Q-K of one suit is a straight flush.
_FOUR_CARD_ROYAL = [cards.ACE, cards.KING - 2, cards.KING - 1, cards.KING]


def jackpot_hand(four):
    """Ch 7A(10), 12M: the best poker hand the four initial cards make, or None.

    The Chapter names the hands without defining them; each is read as the
    published Jackpot Baccarat game defines it (docs/wagers.md, Jackpot)."""
    ranks = sorted(cards.rank(c) for c in four)
    counts = sorted(ranks.count(r) for r in set(ranks))
    flush = len(set(cards.suit(c) for c in four)) == 1
    distinct = len(counts) == 4
    high = sorted(14 if r == cards.ACE else r + 1 for r in ranks)  # ace high
    straight = distinct and (ranks[3] - ranks[0] == 3 or high[3] - high[0] == 3)
    if flush and ranks == _FOUR_CARD_ROYAL:
        return "four_card_royal"
    if counts == [4]:
        return "four_of_a_kind"
    if straight and flush:
        return "straight_flush"
    if counts[-1] == 3:
        return "three_of_a_kind"
    if flush:
        return "flush"
    if straight:
        return "straight"
    if counts == [2, 2]:
        return "two_pair"
    if counts == [1, 1, 2]:
        pair = max(set(ranks), key=ranks.count)
        if pair == cards.ACE:
            return "pair_of_aces"
        if pair >= cards.TEN:
            return "pair_ten_to_king"
    return None


def jackpot(h, table):
    kind = jackpot_hand(h.initial())
    if kind is None:
        return LOSE
    odds = dict(pt.JACKPOT[table.paytable("jackpot")])[kind]
    return _win(odds) if odds else PUSH


def _royal(hand):
    """(is Royal 9, suited, face rank, suit) of a hand's first two cards (Ch 7A(9))."""
    a, b = hand[0], hand[1]
    if cards.rank(b) == NINE:
        a, b = b, a
    face = cards.rank(b)
    if cards.rank(a) != NINE or face not in (JACK, QUEEN, KING):
        return None
    return (cards.suit(a) == cards.suit(b), face, cards.suit(a))


def royal9_events(h):
    """Every Ch 12K event the round makes (the reading is in docs/wagers.md)."""
    p, b = _royal(h.player), _royal(h.banker)
    found = set()
    if p is None and b is None:
        return found
    found.add("any_royal9")

    def king9(x):  # a suited King 9: its suit, else None
        return x[2] if x and x[0] and x[1] == KING else None

    pk, bk = king9(p), king9(b)
    p_personal, b_personal = pk == HEARTS, bk == SPADES
    if (p and p[0]) or (b and b[0]):
        found.add("any_suited_royal9")
    if p and b:
        found.add("royal9_tie")
        if p[0] and b[0]:
            found.add("suited_royal9_tie")
    if p_personal:
        found.add("player_personal_king9")
    if b_personal:
        found.add("banker_personal_king9")
    if p_personal and b_personal:
        found.add("exact_match")
    elif pk in (HEARTS, SPADES) and bk in (HEARTS, SPADES):
        found.add("any_two_personal")
    if (p_personal or b_personal) and pk == bk:
        found.add("personal_vs_identical_king9")
    return found


def royal9(h, table):  # Ch 7A(9), 12K: the highest award the round makes
    found = royal9_events(h)
    for event, award in pt.ROYAL9[table.paytable("royal9")]:
        if event in found:
            return ("win", award)
    return LOSE


RESOLVERS = {
    "player": player,
    "banker": banker,
    "tie": tie,
    "dragon_bonus_player": dragon_bonus_player,
    "dragon_bonus_banker": dragon_bonus_banker,
    "dragon7": dragon7_wager,
    "panda8": panda8_wager,
    "fortune7": fortune7,
    "one_up": one_up,
    "royal9": royal9,
    "jackpot": jackpot,
    "fortune7_5t": fortune7_5t,
    "golden8": golden8,
    "heavenly9": heavenly9,
    "blazing7s": blazing7s,
    "cover_all": cover_all,
    "any_pair": any_pair,
    "lucky_nines": lucky_nines,
    "lucky6": lucky6,
}

# Wagers decided by the first four cards alone; every other wager needs only
# the totals and card counts of the two hands.
CARD_WAGERS = ("royal9", "jackpot", "any_pair", "lucky_nines")


# Wagers placed on a chosen hand ("hand": "player" or "banker").
HAND_WAGERS = ("any_pair",)


def resolve(bet, hands, table, hand=None):
    if bet in HAND_WAGERS:
        return RESOLVERS[bet](hands, table, hand)
    return RESOLVERS[bet](hands, table)


def commission(bet, table):
    """Ch 12C: only a Banker wager on a commission table pays vigorish."""
    return bet == "banker" and table.designation in ("standard", "five-treasures")
