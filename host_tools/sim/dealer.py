"""The simulated dealer: a seeded, shuffled, cut shoe dealt by the rules.

It writes the dealing-script lines that `shoe deal`, `shoe emulate` and
`shoe demo` feed to the core, so every test and benchmark can deal a
realistic shoe from a seed alone. It draws as a careful dealer would: burn
per Ch 5F, "no more bets" before each round, the cards each hand is due by
Ch 10 (asked of the firmware's own rules module, so the dealer and the shoe
can never disagree on a draw), the cover card where the cut placed it, and,
with a seeded probability, the mistakes real dealers make.

Choices where the rules leave room (all documented for the reader):
- The cut card goes uniformly between 10 cards from the top and 10 from the
  bottom (Ch 5B(4)); the cut moves the cards above it to the bottom (Ch 5C).
- The second cover card goes 14 to 20 cards above the bottom (Ch 5C(1) sets
  only the minimum; pits commonly use about 14-16).
- Irregularities are drawn only where the whole round they disrupt fits
  before the cover card (``MISTAKE_CARDS``), so a shoe always ends by Ch 9D
  and never runs dry: after the cover card at most the rest of one round and
  one more round are dealt (12 cards), and it lies at least 14 from the bottom.
"""

import argparse
import random
import sys

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.baccarat import cards, rules

# Kinds of dealer mistake, each with the section the shoe must cite.
EARLY = "early"      # a card drawn before "no more bets": 13A, held as next P1
FACE_UP = "face_up"  # one of the first four cards leaves face up: 13D
KINDS = (EARLY, FACE_UP)

# The most cards a round with a mistake takes: a face-up card after up to
# three of the round's cards (void, 13D), its simulated round, then the round.
MISTAKE_CARDS = 3 + 6 + 6

COVER_MIN = 14   # Ch 5C(1)
COVER_MAX = 20
CUT_MIN = 10     # Ch 5B(4)


class Dealer:
    """One shoe from shuffle to the last hand. `lines()` yields the script."""

    def __init__(self, seed, decks=8, designation="standard", exposed="simulated",
                 irregularity_rate=0.0, cover_depth=None):
        self.rng = random.Random(seed)
        self.decks = decks
        self.designation = designation
        self.exposed = exposed
        self.rate = irregularity_rate
        stack = [c for _ in range(decks) for c in range(cards.CARDS_PER_DECK)]
        self.rng.shuffle(stack)
        cut = self.rng.randint(CUT_MIN, len(stack) - CUT_MIN)
        self.stack = stack[cut:] + stack[:cut]
        depth = cover_depth if cover_depth is not None else self.rng.randint(COVER_MIN, COVER_MAX)
        # Cards drawn before the cover card shows.
        self.cover_at = len(self.stack) - depth
        self.pos = 0
        self.cover_seen = False
        self.mistakes = []  # (kind, round index) for tests and the demo summary

    def _draw(self, out, up=False):
        """Append the next card's line (and "cover" first if it is next); return the card."""
        if self.pos == self.cover_at and not self.cover_seen:
            self.cover_seen = True
            out.append("cover")
        c = self.stack[self.pos]
        self.pos += 1
        out.append(cards.name(c) + (" up" if up else ""))
        return c

    def lines(self):
        yield "shoe decks=%d designation=%s exposed=%s" % (
            self.decks, self.designation, self.exposed)
        out = []
        first = self._draw(out)  # Ch 5F: exposed by rule, leaves the shoe face down
        for _ in range(cards.burn_count(first)):
            self._draw(out)
        for line in out:
            yield line
        rounds_left = None  # counts down once the cover card has shown
        index = 0
        while rounds_left != 0:
            out = []
            self._round(out, index)
            index += 1
            for line in out:
                yield line
            if self.cover_seen:
                rounds_left = 1 if rounds_left is None else rounds_left - 1

    def _mistake(self):
        if self.cover_seen or self.rate <= 0:
            return None
        if self.rng.random() >= self.rate or self.cover_at - self.pos < MISTAKE_CARDS:
            return None  # (the roll is made either way: a seed deals the same shoe as before)
        return self.rng.choice(KINDS)

    def _round(self, out, index):
        mistake = self._mistake()
        hands = [[], []]  # player, banker
        if mistake == EARLY:
            self.mistakes.append((EARLY, index))
            hands[0].append(self._draw(out))
            out.append("bets")
        else:
            out.append("bets")
        if mistake == FACE_UP:
            self.mistakes.append((FACE_UP, index))
            # The disclosed card voids this round's cards (13D); a simulated
            # round is then dealt at once and betting reopens for this round.
            face_up_at = self.rng.randrange(4)
            for i in range(face_up_at):
                hands[i & 1].append(self._draw(out))
            self._simulated_round(out, self._draw(out, up=True))
            out.append("bets")
            hands = [[], []]
        while len(hands[0]) + len(hands[1]) < 4:
            n = len(hands[0]) + len(hands[1])
            hands[n & 1].append(self._draw(out))
        self._third_cards(out, hands)

    def _simulated_round(self, out, first):
        hands = [[first], []]
        while len(hands[0]) + len(hands[1]) < 4:
            n = len(hands[0]) + len(hands[1])
            hands[n & 1].append(self._draw(out))
        self._third_cards(out, hands)

    def _third_cards(self, out, hands):
        player = cards.hand_total(hands[0], 2)
        banker = cards.hand_total(hands[1], 2)
        if rules.is_natural(player) or rules.is_natural(banker):
            return
        third = rules.NO_THIRD
        if rules.player_draws(player):
            third = cards.points(self._draw(out))
        if rules.banker_draws(banker, third):
            self._draw(out)


def script(seed, **options):
    """The whole shoe's script as a list of lines."""
    return list(Dealer(seed, **options).lines())


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m host_tools.sim.dealer",
        description="print a seeded dealing script (feed it to `shoe deal`)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--decks", type=int, default=8)
    parser.add_argument("--designation", default="standard")
    parser.add_argument("--exposed", default="simulated", choices=("simulated", "burn"))
    parser.add_argument("--irregularities", type=float, default=0.0,
                        help="probability per round of a dealer mistake")
    args = parser.parse_args(argv)
    for line in Dealer(args.seed, args.decks, args.designation, args.exposed,
                       args.irregularities).lines():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
