"""The facts of one finished round that the wagers are decided on.

A round reaches settlement as card names (from `shoe settle` input or a
firmware `result` event). The exact analysis builds the same object from
point totals alone, because most wagers look at nothing else; the
card-based wagers (pairs, nines, Royal 9, Jackpot) read ``player``/``banker``.

Every fact of the round (winner, naturals, Dragon 7, Panda 8, One Up, pairs)
is asked of the firmware's ``baccarat.rules``, the code the shoe announces
with, so settlement and the shoe cannot disagree on a round.
"""

from .core import cards, rules

from host_tools.exits import ShoeError


WINNERS = tuple(name.decode() for name in rules.WINNER_NAMES)


class RoundError(ShoeError, ValueError):
    """The round cannot be settled as given (bad card, or not a Ch 10 deal)."""


class Hands:
    __slots__ = (
        "player",
        "banker",
        "player_total",
        "banker_total",
        "player_count",
        "banker_count",
        "player_natural",
        "banker_natural",
        "dragon7",
        "panda8",
    )

    def __init__(self, player_total, banker_total, player_count, banker_count, player=None, banker=None):
        self.player = player
        self.banker = banker
        self.player_total = player_total
        self.banker_total = banker_total
        self.player_count = player_count
        self.banker_count = banker_count
        self.player_natural = rules.natural(player_total, player_count)
        self.banker_natural = rules.natural(banker_total, banker_count)
        self.dragon7 = rules.dragon7(player_total, banker_total, banker_count)
        self.panda8 = rules.panda8(player_total, banker_total, player_count)

    @property
    def winner(self):
        """"player", "banker" or "tie", spelled as the shoe's result event spells it."""
        return WINNERS[rules.winner(self.player_total, self.banker_total)]

    @property
    def one_up(self):
        return rules.one_up(self.player_total, self.banker_total)

    def pair(self, hand):
        """Whether the first two cards of "player" or "banker" are a pair."""
        return rules.pair(self.player if hand == "player" else self.banker)

    def initial(self):
        """The first four cards in dealing order P1, B1, P2, B2 (Ch 8C)."""
        return (self.player[0], self.banker[0], self.player[1], self.banker[1])


def from_cards(player, banker):
    """Hands from card ints, checked against the Chapter 10 drawing rules."""
    for side, hand in (("player", player), ("banker", banker)):
        if len(hand) not in (2, 3):
            raise RoundError("%s hand has %d cards; a hand has 2 or 3 (Ch 8, 9C)" % (side, len(hand)))
    p2 = cards.hand_total(player, 2)
    b2 = cards.hand_total(banker, 2)
    natural = rules.is_natural(p2) or rules.is_natural(b2)  # Ch 10A: nobody draws
    if natural and (len(player) == 3 or len(banker) == 3):
        # The natural is the rule that was broken, whichever hand drew: naming
        # the drawing hand's own rule would send the reader to the wrong table.
        side, hand, total = ("player", player, p2) if rules.is_natural(p2) else ("banker", banker, b2)
        drew = "player" if len(player) == 3 else "banker"
        raise RoundError(
            "%s hand %s has 3 cards but must stand: %s %s is a natural %d, so nobody draws (Ch 10A)"
            % (drew, _names(player if drew == "player" else banker), side, _names(hand[:2]), total)
        )
    p_draws = not natural and rules.player_draws(p2)
    if p_draws != (len(player) == 3):
        raise RoundError(
            "player hand %s has %d cards but Ch 10 says it must %s (player %d, banker %d on two cards)"
            % (_names(player), len(player), "draw" if p_draws else "stand", p2, b2)
        )
    p3 = cards.points(player[2]) if p_draws else rules.NO_THIRD
    b_draws = not natural and rules.banker_draws(b2, p3)
    if b_draws != (len(banker) == 3):
        raise RoundError(
            "banker hand %s has %d cards but Ch 10 says it must %s (banker %d on two cards, player third card %s)"
            % (_names(banker), len(banker), "draw" if b_draws else "stand", b2, "none" if p3 < 0 else p3)
        )
    return Hands(
        cards.hand_total(player, len(player)),
        cards.hand_total(banker, len(banker)),
        len(player),
        len(banker),
        tuple(player),
        tuple(banker),
    )


def _names(hand):
    return " ".join(cards.name(c) for c in hand)


def parse_round(doc):
    """Hands from ``{"player": [...], "banker": [...]}`` (extra fields ignored)."""
    if not isinstance(doc, dict):
        raise RoundError("round must be a JSON object with \"player\" and \"banker\" card lists")
    hands = []
    for side in ("player", "banker"):
        names = doc.get(side)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise RoundError("round.%s must be a list of card names such as \"9H\"" % side)
        try:
            hands.append([cards.parse(n) for n in names])
        except ValueError as exc:
            raise RoundError("round.%s: %s" % (side, exc)) from None
    if doc.get("simulated"):
        raise RoundError("round is simulated (Ch 13C(2)(b)/13D): it carries no wagers")
    return from_cards(hands[0], hands[1])
