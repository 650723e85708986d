"""Every payout in Chapter 12, as data.

Odds are ``(win, stake)`` pairs: ``(40, 1)`` is 40 to 1, ``(1, 2)`` is the
No Commission Banker-6 payout of 1 to 2. Royal 9 pays dollar amounts and
meter shares, not odds, so its awards say which kind they are. Amounts are
integer cents. Settlement and the exact analysis both read this module; no
payout figure appears anywhere else in the code.
"""

from .core import rules

# Ch 12B: the tie pays at least 8 to 1; the operator may pay more.
TIE_MIN = 8
# Ch 12A and 12C: Player and Banker pay even money.
EVEN = (1, 1)
# Ch 12S: a winning No Commission Banker wager totalling 6 pays 1 to 2.
NO_COMMISSION_SIX = (1, 2)
# Ch 12C/D: 5 % of the amount won, rounded up to a multiple of 25 cents.
VIG_PERCENT = 5
VIG_ROUND_CENTS = 25

# Ch 12F: Dragon Bonus, keyed by winning margin of a non-natural hand,
# plus the natural winner. A natural tie is a push (F(1)(h)).
DRAGON_BONUS = {
    "A": {9: 30, 8: 10, 7: 6, 6: 4, 5: 2, 4: 1, "natural": 1},
    "B": {9: 20, 8: 8, 7: 7, 6: 4, 5: 3, 4: 1, "natural": 1},
    "C": {9: 30, 8: 10, 7: 4, 6: 4, 5: 2, 4: 2, "natural": 1},
}

DRAGON7 = 40  # Ch 12G
PANDA8 = 25  # Ch 12H
FORTUNE7 = 40  # Ch 12I
ONE_UP = {"one_nil": 30, "by_one": 9}  # Ch 12J(1), (2)

# Ch 12K: Royal 9 awards in the order the text lists them (highest first).
# ("meter", name, percent) pays that share of a progressive meter;
# ("fixed", cents) pays a fixed amount.
ROYAL9 = {
    "A": (
        ("exact_match", ("meter", "star", 100)),
        ("any_two_personal", ("meter", "star", 10)),
        ("banker_personal_king9", ("meter", "spade", 100)),
        ("player_personal_king9", ("meter", "heart", 100)),
        ("suited_royal9_tie", ("fixed", 150000)),
        ("royal9_tie", ("fixed", 25000)),
        ("any_suited_royal9", ("fixed", 5000)),
        ("any_royal9", ("fixed", 2500)),
    ),
    "C": (
        ("exact_match", ("meter", "star", 100)),
        ("banker_personal_king9", ("meter", "spade", 100)),
        ("player_personal_king9", ("meter", "heart", 100)),
        ("personal_vs_identical_king9", ("fixed", 500000)),
        ("suited_royal9_tie", ("fixed", 150000)),
        ("royal9_tie", ("fixed", 25000)),
        ("any_suited_royal9", ("fixed", 5000)),
        ("any_royal9", ("fixed", 2500)),
    ),
}
# Ch 12K(2): Paytable B lists the same awards as A; it differs only in the
# Star meter's reset (12L(2)(b)).
ROYAL9["B"] = ROYAL9["A"]

# Ch 12L: the least initial/reset meter amounts per paytable, in cents.
ROYAL9_RESET = {
    "A": {"star": 5000000, "spade": 35000, "heart": 35000},
    "B": {"star": 2500000, "spade": 35000, "heart": 35000},
    "C": {"star": 5000000, "spade": 45000, "heart": 45000},
}
# Royal 9 pays fixed amounts, so the wager has one fixed size (a table
# setting); $5 unless the table says otherwise.
ROYAL9_WAGER = 500

# Ch 12N/O: the Must Hit meter goes to a random Royal 9 participant; its
# (reset, maximum) must be at least one of these pairs, in cents.
MUST_HIT_LEAST = ((25000, 100000), (10000, 50000), (10000, 20000))

# Ch 12M: Jackpot Baccarat, highest hand first; None is a push.
_JACKPOT_ORDER = (
    "four_card_royal",
    "four_of_a_kind",
    "straight_flush",
    "three_of_a_kind",
    "flush",
    "straight",
    "two_pair",
    "pair_of_aces",
    "pair_ten_to_king",
)


def _jackpot(royal, quads, straight_flush, straight, two_pair):
    odds = (royal, quads, straight_flush, 15, 10, straight, two_pair, 2, None)
    return tuple(zip(_JACKPOT_ORDER, odds))


JACKPOT = {
    "A": _jackpot(500, 100, 50, 5, 4),
    "B": _jackpot(250, 75, 50, 5, 4),
    "C": _jackpot(300, 50, 40, 5, 4),
    "D": _jackpot(500, 100, 50, 6, 5),
    "E": _jackpot(500, 100, 50, 6, 4),
}

# Ch 12P: Five Treasures.
FORTUNE7_5T = 40
GOLDEN8 = 25
HEAVENLY9 = {"both": 75, "one": 10}
BLAZING7S = {"A": {"three": 400}, "B": {"three": 200, "two": 50}}
COVER_ALL = 6

ANY_PAIR = {"nines": 12, "pair": 11}  # Ch 12Q

# Ch 12R: Lucky Nines, highest first.
_NINES_ORDER = ("four", "three_suited", "three", "two_suited", "two", "nine_diamonds", "nine")


def _nines(four, three_suited, three, two_suited, two):
    return tuple(zip(_NINES_ORDER, (four, three_suited, three, two_suited, two, 2, 1)))


LUCKY_NINES = {
    "A": _nines(500, 250, 20, 8, 5),
    "B": _nines(500, 250, 30, 12, 5),
    "C": _nines(1000, 500, 35, 16, 5),
    "D": _nines(2000, 500, 15, 10, 4),
}

LUCKY6 = {"two": 12, "three": 20}  # Ch 12T

# The table-setting key that chooses a paytable, and its letters.
PAYTABLES = {
    "dragon_bonus": DRAGON_BONUS,
    "royal9": ROYAL9,
    "jackpot": JACKPOT,
    "blazing7s": BLAZING7S,
    "lucky_nines": LUCKY_NINES,
}

# Bet name -> the paytable setting that governs it (bets not listed have one
# fixed payout).
PAYTABLE_OF = {
    "dragon_bonus_player": "dragon_bonus",
    "dragon_bonus_banker": "dragon_bonus",
    "royal9": "royal9",
    "jackpot": "jackpot",
    "blazing7s": "blazing7s",
    "lucky_nines": "lucky_nines",
}

# Side wagers Chapter 7 allows "if offered by a facility operator" on any table.
OPTIONAL = (
    "dragon_bonus_player",
    "dragon_bonus_banker",
    "royal9",
    "jackpot",
    "any_pair",
    "lucky_nines",
    "lucky6",
)

# Ch 7A: the wagers each designation adds to Player, Banker and Tie, in
# layout order. The designations themselves are the shoe's list
# (baccarat.rules.DESIGNATIONS): a table the shoe can be set to is a table
# settlement can price, and the other way round.
_OWN_WAGERS = {
    "ez": ("dragon7", "panda8"),
    "fortune7": ("fortune7", "one_up"),
    "five-treasures": ("fortune7_5t", "golden8", "heavenly9", "blazing7s", "cover_all"),
}
DESIGNATIONS = {name: ("player", "banker", "tie") + _OWN_WAGERS.get(name, ()) + OPTIONAL
                for name in rules.DESIGNATIONS}

BETS = (
    "player",
    "banker",
    "tie",
    "dragon_bonus_player",
    "dragon_bonus_banker",
    "dragon7",
    "panda8",
    "fortune7",
    "one_up",
    "royal9",
    "jackpot",
    "fortune7_5t",
    "golden8",
    "heavenly9",
    "blazing7s",
    "cover_all",
    "any_pair",
    "lucky_nines",
    "lucky6",
)
