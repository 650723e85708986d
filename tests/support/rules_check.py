"""Deal value tuples through the firmware Game and compare each round with
the independent oracle. Runs under CPython and inside the MicroPython VM
(``micropython rules_check.py full|sample``) and prints one JSON summary.

``full`` checks all 10**6 (P1, B1, P2, B2, P3, B3) tuples; the Game is run
once per distinct dealt prefix (a tuple whose P3/B3 are never dealt gives the
same round as its prefix), and every tuple is compared with the oracle.
``sample`` is for the slower VM: all 10**4 initial deals plus a sweep that
hits every Banker-total x Player-third-card cell of Ch 10E.
"""

import json
import sys

from baccarat import cards, game
import oracle_ch10


def card_for(value, position):
    # 0 is a ten-value card (10, J, Q, K by position); 1 is an ace.
    rank = (9 + position % 4) if value == 0 else value - 1
    return cards.make(rank, position % 4)


class Checker:
    def __init__(self):
        self.results = []
        self.g = game.Game(self.emit)
        self.rounds_in_shoe = 0
        self.checked = 0
        self.games = 0
        self.bad = []
        self.cells = {}
        self.cache = {}
        self.use_cache = False

    def emit(self, buf, n):
        if buf[9] == 0x72 and buf[10] == 0x65 and buf[11] == 0x73:  # "res"ult
            self.results.append(json.loads(bytes(buf[:n])))

    def fresh_shoe(self):
        g = self.g
        g.new_shoe(16)
        g.card(cards.make(0, 0), True)  # ace: one more burn card
        g.card(cards.make(1, 0), False)
        self.rounds_in_shoe = 0

    def play(self, v):
        if self.rounds_in_shoe == 0 or self.rounds_in_shoe > 120:
            self.fresh_shoe()
        self.rounds_in_shoe += 1
        g = self.g
        self.results = []
        g.bets()
        i = 0
        while g.next_due() != game.NONE:
            if i >= 6:
                return None  # the game wants more cards than baccarat allows
            g.card(card_for(v[i], i), False)
            i += 1
        if len(self.results) != 1:
            return None
        return self.results[0]

    def check(self, v):
        player, banker, pt, bt, winner = oracle_ch10.deal(v)
        key = tuple(v[: len(player) + len(banker)])
        got = self.cache.get(key)
        if got is None:
            r = self.play(v)
            self.games += 1
            if r is None:
                got = "no single result"
            else:
                got = ([cards.points(cards.parse(x)) for x in r["player"]],
                       [cards.points(cards.parse(x)) for x in r["banker"]],
                       r["player_total"], r["banker_total"], r["winner"],
                       r["player_cards"], r["banker_cards"])
            if self.use_cache:
                self.cache[key] = got
        want = (player, banker, pt, bt, winner, len(player), len(banker))
        self.checked += 1
        if got != want and len(self.bad) < 5:
            self.bad.append([list(v), str(got), str(want)])
        bc = (v[1] + v[3]) % 10
        third = player[2] if len(player) == 3 else -1
        if (v[0] + v[2]) % 10 < 8 and bc < 8:
            self.cells[bc * 11 + third + 1] = 1


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "sample"
    ch = Checker()
    if mode == "full":
        ch.use_cache = True
        for n in range(1000000):
            v = (n // 100000 % 10, n // 10000 % 10, n // 1000 % 10, n // 100 % 10, n // 10 % 10, n % 10)
            ch.check(v)
            if n % 100000 == 99999:
                ch.cache = {}  # the prefixes of the next P1 are all new
    else:
        for n in range(10000):
            # All initial deals; P3 and B3 vary with the deal.
            v = (n // 1000 % 10, n // 100 % 10, n // 10 % 10, n % 10, (n * 7 + 3) % 10, (n * 3 + 1) % 10)
            ch.check(v)
        # Every Banker total 0-7 against every Player third card 0-9, with the
        # Player on each drawing total 0-5, and the stand column (Player 6, 7).
        for bt in range(8):
            for third in range(10):
                for pt in range(6):
                    ch.check((pt, bt, 0, 0, third, (bt + third) % 10))
            for pt in (6, 7):
                ch.check((pt, bt, 0, 0, 5, 5))
    print(json.dumps({"mode": mode, "checked": ch.checked, "games": ch.games,
                      "mismatches": ch.bad, "cells": len(ch.cells)}))


main()
