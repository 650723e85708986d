"""Named round outcomes dealt to an emulated shoe, for the page tests: each
round exactly four cards, with the ties, naturals and pairs the roads draw."""

# Each outcome as (Player hand, Banker hand): a two-card total, or a pair
# ("4p": two fours). Every hand stands on its two cards (Ch 10: Player stands
# on 6-7; Banker stands on 6-7 when the Player stood; 8-9 are naturals), so a
# round is exactly four cards.
ROUNDS = {
    "B": (6, 7),
    "P": (7, 6),
    "T": (7, 7),
    "Pn": ("4p", 7),    # Player 4-4 = 8: natural and player pair
    "Bn": (7, 9),       # Banker natural 9
    "Bp": (7, "4p"),    # Banker 4-4 = 8: natural and banker pair
}
# A shoe whose Big Road has a leading tie, ties slashed on a cell, pairs,
# naturals and a streak of nine Bankers (a dragon tail on a 6-row board).
SEQUENCE = ["T", "B", "B", "Pn", "T", "T", "P", "B", "B", "B", "B", "B", "B", "Bn", "B", "Bp",
            "P", "B", "P", "P", "T", "B"]
LETTERS = "".join(s[0] for s in SEQUENCE)
RANKS = "A23456789TJQK"


def _points(rank):
    return min(RANKS.index(rank) + 1, 10) % 10


class Dealer:
    """Deals named outcomes to an emulated shoe. Each hand is the two
    different ranks with the wanted total that are least used so far, in the
    least used suits, so no card is dealt more often than 8 decks hold it
    (an excess copy would be an irregularity, Ch 3A)."""

    def __init__(self, emu):
        self.emu = emu
        self.used = {}

    def card(self, rank):
        code = min((rank + s for s in "SHDC"), key=lambda c: self.used.get(c, 0))
        self.used[code] = self.used.get(code, 0) + 1
        return code

    def _rank_used(self, rank):
        return sum(self.used.get(rank + s, 0) for s in "SHDC")

    def hand(self, want):
        if want == "4p":
            return [self.card("4"), self.card("4")]
        pairs = [(a, b) for a in RANKS for b in RANKS if a < b and (_points(a) + _points(b)) % 10 == want]
        a, b = min(pairs, key=lambda p: max(self._rank_used(p[0]), self._rank_used(p[1])))
        return [self.card(a), self.card(b)]

    def new_shoe(self):
        self.used = {}
        for line in ("shoe decks=8", self.card("A"), self.card("2"), "bets"):
            self.emu.deal(line)

    def round(self, outcome, bets=True):
        player, banker = (self.hand(w) for w in ROUNDS[outcome])
        for card in (player[0], banker[0], player[1], banker[1]):  # P1, B1, P2, B2 (Ch 8C)
            self.emu.deal(card)
        if bets:
            self.emu.deal("bets")
