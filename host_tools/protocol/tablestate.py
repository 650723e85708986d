"""The one fold of a table's live state from its committed events.

The bridge's console, the pit service (its page and API) and the central
view all show a table as of its latest event: the round, the phase, the
card due next (or, with none due, what the shoe waits for), the cards left,
the round being dealt and the last result. ``TableState.fold`` is the only
code that turns events into those facts, so the three cannot disagree.

Phases are the firmware's own (baccarat/game.py ``PHASE_NAMES``, through
the event schema); positions likewise. ``VOCABULARY`` is what the page is
served (/api/vocabulary) so it never spells them again.
"""

from firmware.link import events_schema as E

NO_SHOE, BURNING, OPEN, DEALING, DISCARDING, STOPPED = E.PHASES
POSITIONS = E.POSITIONS
HAND_POSITIONS = E.HAND_POSITIONS
FIRST_CARD = HAND_POSITIONS[0]   # "P1": due once betting closes (Ch 8C)

# With no card due, what the shoe waits for (shown where the next card would be).
BETTING = "no more bets"   # between rounds (Ch 7D, 8B)
NO_SET = "new shoe"        # no card set loaded, or the last one ended

# Game events after which, with no card due, the shoe waits for "no more bets".
_IN_SHOE = ("shoe", "bets", "card", "assign", "counts", "result", "void", "cover", "last_hand")
_ROUND_KINDS = ("bets", "card", "assign", "result", "void", "counts")
RESULT_FIELDS = ("round", "winner", "player", "banker", "player_total", "banker_total", "natural",
                 "player_pair", "banker_pair", "simulated")

# What each place and wait means, in words a new supervisor reads (the
# overview's legend and the titles of its "Next card" column).
POSITION_WORDS = {
    "P1": "the Player's first card", "B1": "the Banker's first card",
    "P2": "the Player's second card", "B2": "the Banker's second card",
    "P3": "the Player's third card", "B3": "the Banker's third card",
    "BURN": "a card burned face down after the first (Ch 5F)",
    "DISCARD": "a card discarded (Ch 13C(2)(a))", "HELD": "a card held for the next round (Ch 13A, 13B(2))",
    BETTING: "betting is open: no card is due until the dealer presses No more bets",
    NO_SET: "no card set in the shoe: a new shoe is loaded next",
}

VOCABULARY = {
    "position_words": POSITION_WORDS,
    "phases": list(E.PHASES),
    "positions": list(POSITIONS),
    "hand_positions": list(HAND_POSITIONS),
    "player_positions": [p for p in HAND_POSITIONS if p.startswith("P")],
    "banker_positions": [p for p in HAND_POSITIONS if p.startswith("B")],
    "waits": [BETTING, NO_SET],
}


class TableState:
    """One table as its events tell it. Every field is a plain value (or a
    list/dict of them) that ``to_dict`` hands out as copies."""

    def __init__(self):
        self.seq = None          # the newest folded seq
        self.shoe = None         # {"designation", "decks", "cards"} of the shoe in play
        self.round = None
        self.phase = NO_SHOE
        self.next = None         # the position the next card goes to, if one is due
        self.waits = None        # with none due: what the shoe waits for, when known
        self.left = None         # cards left in the shoe, by the shoe's count
        self.current = None      # {"round", "cards": [[pos, card]], "status", "simulated"}
        self.counts = None       # (player, banker) point counts announced this round
        self.last_result = None  # the last result event's RESULT_FIELDS
        self.tilt = None         # the link's tilt reason, while tilted
        self.ended = None        # why the last shoe ended, once it has

    def fold(self, seq, event):
        """Take one committed, schema-valid game or link event. Events of
        other sources (the shuffler's) are not a table's round state."""
        if seq is not None:
            self.seq = seq
        source = event.get("source")
        kind = event.get("type")
        if source == "link":
            self._link(kind, event)
            return
        if source is not None:
            return
        if "next" in event:
            self.next = event["next"]
        if kind == "bets":
            # Betting closed: P1 is due, though the event does not say so
            # (a card held under 13A/13B(2) follows as an assign that does).
            self.next = FIRST_CARD
        if kind in _IN_SHOE:
            self.waits = BETTING
        if "left" in event and isinstance(event["left"], int):
            self.left = event["left"]
        if kind == "shoe":
            self.shoe = {k: event.get(k) for k in ("designation", "decks", "cards")}
            self.round, self.current, self.last_result, self.counts = None, None, None, None
            self.left = event.get("cards")
            self.phase, self.tilt, self.ended = BURNING, None, None
            return
        if kind == "shoe_end":
            self.next, self.waits, self.phase = None, NO_SET, NO_SHOE
            self.ended = event.get("reason") or ""
            return
        rnd = event.get("round")
        if isinstance(rnd, int) and kind in _ROUND_KINDS:
            if self.current is None or self.current["round"] != rnd:
                self.current = {"round": rnd, "cards": [], "status": "open",
                                "simulated": bool(event.get("simulated"))}
                self.counts = None
            self.round = rnd
        hand_card = kind in ("card", "assign") and event.get("pos") in HAND_POSITIONS
        if kind == "bets" or hand_card:
            self.phase = DEALING
        elif self.phase == BURNING and kind == "card" and event.get("next") is None:
            self.phase = OPEN  # the burn is done (Ch 5F): betting is open
        if hand_card and self.current:
            self.current["cards"].append([event["pos"], event["card"]])
        elif kind == "counts":
            self.counts = (event.get("player"), event.get("banker"))
        elif kind == "irregularity" and event.get("rule") in (E.COLD_DECK, E.ORDER_MISMATCH):
            self.phase, self.next = STOPPED, None  # no card is due until clear_stop (Ch 5A)
        elif kind == "stop_cleared":
            self.phase = OPEN
        elif kind == "result":
            self.current["status"] = "result"
            self.last_result = {k: event.get(k) for k in RESULT_FIELDS}
            self.phase, self.next = OPEN, None
        elif kind == "void":
            self.current["status"] = "void"
            self.phase, self.next = OPEN, None

    def _link(self, kind, event):
        if kind == "status":
            # The shoe's own account, asked for by `status`: it overrides the fold.
            self.next = event.get("next")
            self.left = event.get("left")
            phase = event.get("phase")
            if phase in E.PHASES:
                self.phase = phase
            if phase in (OPEN, NO_SHOE):
                self.waits = BETTING if phase == OPEN else NO_SET
            self.tilt = event.get("tilt") or self.tilt
        elif kind == "tilt":
            self.tilt = event.get("reason") or "tilt"
        elif kind == "tilt_cleared":
            self.tilt = None

    def due(self):
        """What the page shows where the next card would be: the position
        due, else what the shoe waits for."""
        return self.next if self.next is not None else self.waits

    def hands(self):
        """{"player": [cards], "banker": [cards]} of the round being dealt."""
        out = {"player": [], "banker": []}
        for pos, card in (self.current or {}).get("cards", ()):
            out["player" if pos.startswith("P") else "banker"].append(card)
        return out

    def to_dict(self):
        current = self.current
        if current is not None:
            current = dict(current, cards=[list(c) for c in current["cards"]])
        return {"seq": self.seq, "shoe": dict(self.shoe) if self.shoe else None,
                "round": self.round, "phase": self.phase, "next": self.due(),
                "next_card": self.next, "cards_left": self.left, "current": current,
                "counts": list(self.counts) if self.counts else None,
                "last_result": dict(self.last_result) if self.last_result else None,
                "tilt": self.tilt}
