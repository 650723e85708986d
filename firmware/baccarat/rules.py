"""Chapter 10: whether a third card is dealt.

Kept as two tiny pure functions so the round state machine, the simulated
dealer on the pit PC and the odds analysis all ask the same code, and so a
regulator can compare it line by line with the chapter text.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

NO_THIRD = const(-1)

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
