"""An oracle for a baccarat round written from the rules text alone.

It deliberately shares nothing with firmware/: the tests compare the
firmware's rounds against it, so it must be an independent reading of
Chapters 6, 9C, 10 and 11A. It runs under CPython and MicroPython.
"""


def point_count(values):
    # Ch 6B/6C: total the values; a two-digit total keeps its right digit.
    return sum(values) % 10


# Ch 10E(3)(a)-(x), transcribed clause by clause: for the Player's third card
# point count, the Banker point counts (after two cards) among 3-6 on which the
# Banker's hand "shall draw a third card".
BANKER_DRAWS_ON = {
    0: (3,),            # (a)(i); (ii)-(iv) stay
    1: (3,),            # (b)
    2: (3, 4),          # (c)
    3: (3, 4),          # (d)
    4: (3, 4, 5),       # (e)
    5: (3, 4, 5),       # (f)
    6: (3, 4, 5, 6),    # (g)
    7: (3, 4, 5, 6),    # (h)
    8: (),              # (v)-(ix): stays on 3, 4, 5 and 6
    9: (3,),            # (x)-(xiv)
}


def deal(v):
    """v: six point values (P1, B1, P2, B2, P3, B3). Returns
    (player values, banker values, player total, banker total, winner)."""
    player = [v[0], v[2]]   # Ch 8C(1): first and third cards to the Player
    banker = [v[1], v[3]]   # Ch 8C(2): second and fourth to the Banker
    pc = point_count(player)
    bc = point_count(banker)
    nxt = 4
    natural = pc in (8, 9) or bc in (8, 9)  # Ch 1B(3)
    if not natural:  # Ch 10A: a natural ends the dealing
        player_third = None
        if pc < 6:  # Ch 10B(1)
            player_third = v[nxt]
            player.append(player_third)
            nxt += 1
        if player_third is None:
            banker_draws = bc <= 5  # Ch 10D
        elif bc < 3:
            banker_draws = True  # Ch 10E(1)
        elif bc == 7:
            banker_draws = False  # Ch 10E(2)
        else:
            banker_draws = bc in BANKER_DRAWS_ON[player_third]  # Ch 10E(3)
        if banker_draws:
            banker.append(v[nxt])
    pt = point_count(player)
    bt = point_count(banker)
    if pt > bt:
        winner = "player"
    elif bt > pt:
        winner = "banker"
    else:
        winner = "tie"  # Ch 11A(1)
    return player, banker, pt, bt, winner
