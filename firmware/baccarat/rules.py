"""Chapter 10 (whether a third card is dealt) and the facts of a finished
round that Chapter 1B defines: winner, naturals, pairs, Dragon 7, Panda 8,
and this product's reading of Fortune 7 and One Up.

Small pure functions, so that the round state machine, the simulated dealer
on the pit PC, settlement and the odds analysis all ask the same code and
cannot disagree on a round, and so that a regulator can compare each one line
by line with the chapter text. They take totals, counts and card ints and
allocate nothing, so the shoe calls them on every card.

The table designations live here too: the shoe announces by them, settlement
pays by them, and the command and script parsers accept exactly these names.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

NO_THIRD = const(-1)

# Ch 1A: the table designations, by code. The code is what the shoe stores
# (journal, game state); the name is what every message and setting says.
# New designations go at the end: a journaled code must keep its meaning.
STANDARD = const(0)
EZ = const(1)
FORTUNE7 = const(2)
NO_COMMISSION = const(3)
FIVE_TREASURES = const(4)  # Ch 1A(8), 7A(11)-(15): side wagers only, no call of its own (11A)
DESIGNATIONS = ("standard", "ez", "fortune7", "no-commission", "five-treasures")

# 13C(2): the Rules Submission's choice for a card disclosed after both hands stood.
EXPOSED_SIMULATED = const(0)  # 13C(2)(b)
EXPOSED_BURN = const(1)  # 13C(2)(a)
EXPOSED_MODES = ("simulated", "burn")

# Who won a round (Ch 11A), by code; the names are how events spell them.
PLAYER = const(0)
BANKER = const(1)
TIE = const(2)
WINNER_NAMES = (b"player", b"banker", b"tie")

# Ch 10E(3): for a Banker point count of 3, 4, 5 and 6 (rows), the Player's
# third-card point counts 0..9 (columns) on which the Banker draws ("1") or
# stays ("0"). Ch 10E(1) (Banker 0-2 draws) and 10E(2) (Banker 7 stays) are
# handled in banker_draws; 8 and 9 are naturals and never reach it.
_BANKER_3_TO_6 = (
    b"1111111101",  # 10E(3)(a)-(x), Banker 3: stays only when Player's third is 8
    b"0011111100",  # Banker 4: draws on 2-7
    b"0000111100",  # Banker 5: draws on 4-7
    b"0000001100",  # Banker 6: draws on 6-7
)


def is_natural(total):
    """Ch 1B(3): a point count of 8 or 9 on the first two cards."""
    return total >= 8


def player_draws(player_total):
    """Ch 10B: with no natural, the Player draws on 0-5 and stays on 6 or 7."""
    return player_total < 6


def banker_draws(banker_total, player_third):
    """Ch 10D/10E. ``player_third`` is the point count of the Player's third
    card, or NO_THIRD when the Player stood."""
    if player_third < 0:
        return banker_total <= 5  # 10D
    if banker_total < 3:
        return True  # 10E(1)
    if banker_total >= 7:
        return False  # 10E(2)
    return _BANKER_3_TO_6[banker_total - 3][player_third] == 0x31  # "1"


def winner(player_total, banker_total):
    """Ch 1B, 11A: the hand with the higher point count wins; equal is a tie."""
    if player_total > banker_total:
        return PLAYER
    if banker_total > player_total:
        return BANKER
    return TIE


def natural(total, count):
    """Ch 1B(3) for a finished hand: 8 or 9 on two cards. A three-card hand
    never started as a natural, because nobody draws against one (Ch 10A),
    so the final total and card count are enough; settlement and the odds
    analysis see only those."""
    return count == 2 and total >= 8


def pair(hand):
    """Ch 7A(16): the first two cards of a hand are of one rank (a card int
    is ``rank << 2 | suit``, see baccarat.cards)."""
    return hand[0] >> 2 == hand[1] >> 2


def dragon7(player_total, banker_total, banker_count):
    """Ch 1B(1): a three-card Banker 7 against a Player under 7.

    This product reads the undefined "Fortune 7" (Ch 7A(1)(a), 11A(4), and the
    Five Treasures Fortune 7 wager, 7A(11)) as this same hand: docs/rules.md."""
    return banker_count == 3 and banker_total == 7 and player_total < 7


def panda8(player_total, banker_total, player_count):
    """Ch 1B(5): a three-card Player 8 against a Banker under 8 (also the
    Five Treasures Golden 8, 7A(12))."""
    return player_count == 3 and player_total == 8 and banker_total < 8


def one_up(player_total, banker_total):
    """The undefined "One Up" (Ch 11A(5)) read as the Player winning by
    exactly one point, the two cases Ch 12J pays: docs/rules.md."""
    return player_total - banker_total == 1
