"""The shoe's game core: one deterministic state machine from inputs to events.

Inputs are what the shoe can sense (a card leaving, face up or down, the
cover card, the empty sensor) and what the dealer presses ("no more bets",
"exposed card", "new shoe"). Outputs are JSON events handed to ``emit``.
There is no clock and no I/O here, so the same inputs always give the same
events: the power-loss journal restores a shoe by feeding its inputs again,
and the MicroPython VM and CPython must agree byte for byte.

How each rule is applied is fixed by the product brief (its Chapter 13 table);
every place that applies a section says so next to the code and names the
section in the event it emits.

Nothing is allocated per card on the normal path: hands, counts and the held
queue are preallocated bytearrays, the facts of a round come from the pure
functions of ``baccarat.rules`` (which settlement uses too), and events are
written into one preallocated buffer by ``baccarat.events``, the only module
that knows their bytes.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from baccarat import cards, events, rules

# Positions a card can take. Indexes into POS_NAMES.
P1 = const(0)
B1 = const(1)
P2 = const(2)
B2 = const(3)
P3 = const(4)
B3 = const(5)
BURN = const(6)
DISCARD = const(7)
HELD = const(8)
NONE = const(-1)
POS_NAMES = (b"P1", b"B1", b"P2", b"B2", b"P3", b"B3", b"BURN", b"DISCARD", b"HELD")

# Table designations (Ch 1, 11A) and the 13C(2) Rules Submission choice are
# defined once, in baccarat.rules; these names are how the rest of the
# firmware and the host reach them. A name's code is its index in the tuple.
STANDARD = rules.STANDARD
EZ = rules.EZ
FORTUNE7 = rules.FORTUNE7
NO_COMMISSION = rules.NO_COMMISSION
FIVE_TREASURES = rules.FIVE_TREASURES
DESIGNATIONS = rules.DESIGNATIONS
EXPOSED_SIMULATED = rules.EXPOSED_SIMULATED
EXPOSED_BURN = rules.EXPOSED_BURN
EXPOSED_MODES = rules.EXPOSED_MODES

# Phases of the shoe.
NO_SHOE = const(0)  # nothing loaded, or the set is spent (shoe end, 13E)
BURNING = const(1)  # Ch 5F
OPEN = const(2)  # betting open, no card due (Ch 7D, 8B)
DEALING = const(3)  # a round (real or simulated) is being dealt
DISCARDING = const(4)  # 13C(2)(a): one more card goes face down to discard

# Cover-card progress (Ch 9D).
COVER_NONE = const(0)
COVER_SEEN = const(1)  # complete this hand
COVER_LAST = const(2)  # "last hand" announced, one more hand to play

MAX_HELD = const(4)  # held cards fill P1, B1, P2, B2 of the next round (13A)
MIN_COVER_DEPTH = const(14)  # Ch 5C(1)

# The cold-deck test (Ch 5A "randomly intermixed"; docs/rules.md, "Cold
# decks", derives it). Decks come in with each suit's ranks in sequence,
# ascending or descending, suits in any order. With codes rank*4 + suit, the
# next rank of the same suit is the code +4 (one rank down: -4), and no other
# pair of cards differs by exactly 4. RUN cards in one such sequence stop the
# game: for a uniformly shuffled shoe the expected number of runs of 7 (a
# union bound on the false alarm) is 2.35e-8 per 8-deck shoe, and at most
# 4.6e-8 for 1 to 16 decks; 6 would give 1.38e-6, over the 1e-6 allowed.
# An unshuffled stack, cut anywhere, completes a run of 7 by its 13th card.
RUN = const(7)
STEP = const(4)
STOP_COLD = const(0)   # Game.stop_rule: what stopped the game
STOP_ORDER = const(1)
_STOP_RULES = (events.COLD_DECK, events.ORDER_MISMATCH)
_STOP_SECTIONS = (events.COLD_DECK_SECTION, events.ORDER_MISMATCH_SECTION)
NO_CARD = const(255)
_STOPPED = b"stopped until clear_stop"
UP = const(1)
DOWN = const(2)



class Game:
    def __init__(self, emit, out_size=768):
        # No attribute for emit or the event buffer: self.events has both.
        self.events = events.Events(self, emit, out_size, POS_NAMES, HELD)
        self.player = bytearray(3)
        self.banker = bytearray(3)
        self.seen = bytearray(cards.CARDS_PER_DECK)  # copies seen, per face
        self.held = bytearray(MAX_HELD)
        # The deck (1..16, in the enrolled card set) of the card being drawn,
        # 0 when unknown; its card event carries it, so the record names the
        # physical card (face and deck within the shoe's batch). Set by the
        # caller before each card(): the session from the card set (a script
        # has none: its card events carry no deck).
        self.deck_of = 0
        self.reset()

    def reset(self):
        """Back to the state a new Game starts in: no shoe, nothing of the
        last one, the default settings; the buffers are kept. The link's
        refill (link/recovery.py) replays into one game it made at boot and
        resets, rather than making a game mid-shoe."""
        self.line = -1  # set by a script driver so errors can name their line
        self.phase = NO_SHOE
        self.decks = 0
        self.designation = STANDARD
        self.exposed_mode = EXPOSED_SIMULATED
        self.batch = 1
        self._clear_shoe()

    def _clear_shoe(self):
        self.round = 0
        self.real_rounds = 0
        self.left = 0
        self.burn_left = 0
        self.np = 0
        self.nb = 0
        self.simulated = False
        self.counted = False
        self.n_held = 0
        self.held_rule = 0  # the section of the most recent held card (13A or 13B2)
        self.b2_window = False  # 13B(2)/13C(2) apply to the next stray card
        self.cover_state = COVER_NONE
        self.last = -1  # last card drawn and where it went, for "exposed"
        self.last_pos = NONE
        self.last_first_burn = False
        # Ch 5A: the cards were not randomly intermixed. No card is due and
        # no round opens until a supervisor's clear_stop.
        self.stopped = False
        # What stopped it (STOP_COLD or STOP_ORDER), whether the next card
        # is the one the order check stopped on, which still takes its
        # place (mismatch below), and whether the card being placed
        # completed a cold-deck run.
        self.stop_rule = STOP_COLD
        self.admit = False
        self.cold = False
        # The cold-deck test's state (ordered): the previous card (NO_CARD
        # before the first), the run's direction (0 none, UP, DOWN) and its
        # length in cards.
        self.run_prev = NO_CARD
        self.run_step = 0
        self.run_len = 1
        for i in range(cards.CARDS_PER_DECK):
            self.seen[i] = 0

    # ----------------------------------------------------------------- inputs

    def new_shoe(self, decks=8, designation=STANDARD, exposed=EXPOSED_SIMULATED, batch=1, checked=b""):
        """A new card set is in the shoe (Ch 5): reset and expect the burn.
        ``batch`` (1 A, 2 B) is only recorded: which batch of the enrolled
        set is dealt matters to the record (Ch 3B), not to the rules; so are
        ``checked``, the shoe event's order fields (cardset/ordercheck.py)."""
        why = self.new_shoe_refusal(decks)
        if why is not None:
            self.error(why)
            return
        if self.phase == DEALING and not self.simulated and self.np + self.nb > 0:
            # The set is replaced under a round: it cannot be completed, so it
            # is void and its wagers go back, as 13E does for an empty shoe.
            self._void(b"new_shoe", b"returned")
        self._clear_shoe()
        self.decks = decks
        self.designation = designation
        self.exposed_mode = exposed
        self.batch = batch
        self.left = decks * cards.CARDS_PER_DECK
        self.phase = BURNING
        self.burn_left = -1  # -1: the first, exposed burn card is due
        self.events.shoe(BURN, checked)

    # What each dealer or supervisor input is refused for, as bytes (None:
    # taken). The inputs check with these, and so does the link before it
    # accepts a pit command (link/session.py ``refusal``), so a command the
    # game would refuse is answered as refused, with this reason.

    def new_shoe_refusal(self, decks):
        if decks < 1 or decks > 16:
            return b"new shoe: decks must be 1 to 16"
        if self.stopped:
            # The stop names suspect cards; only the supervisor lifts it, so a
            # "new shoe" press cannot carry a cold deck past it.
            return _STOPPED
        return None

    def bets_refusal(self):
        if self.stopped:
            return _STOPPED
        if self.phase == NO_SHOE:
            return b"no more bets: no card set loaded"
        if self.phase != OPEN and self.phase != DEALING:
            return b"no more bets: the burn or a 13C(2)(a) discard is not finished"
        return None

    def exposed_refusal(self):
        pos = self.last_pos
        if self.last < 0:
            return b"exposed: no card has been drawn"
        if pos == BURN and not self.last_first_burn:
            return None
        if pos <= B2 and pos >= P1 and self.phase == DEALING and not self.simulated:
            return None
        if pos == HELD and self.n_held > 0:
            return None
        return b"exposed: nothing to apply (the last card is face up by rule, or its round is complete)"

    def clear_stop_refusal(self):
        return None if self.stopped else b"clear_stop: not stopped"

    def bets(self):
        """The dealer announced "no more bets" (Ch 7D, 8B)."""
        why = self.bets_refusal()
        if why is not None:
            self.error(why)
            return
        if self.phase == DEALING:
            return  # betting is already closed: pressing again does nothing
        self.b2_window = False
        self._start_round(False)
        self.events.bets()
        self._deal_held()
        if self.phase == DEALING and self.left == 0:
            self._exhausted()

    def _deal_held(self):
        """Cards held under 13A/13B(2) are the first cards of this round."""
        n = self.n_held
        self.n_held = 0
        i = 0
        while i < n:
            pos = self._due()
            self._place(self.held[i], pos)
            self.events.assign(pos, self.held[i], self.next_due(), True)
            self._after_place(pos)
            i += 1

    def card(self, c, up=False):
        """A card left the shoe; ``up`` when it was disclosed (face up)."""
        if self.phase == NO_SHOE:
            self.error(b"card drawn with no card set loaded")
            return
        self.left -= 1
        self.seen[c] += 1
        if self.stopped and not self.admit:
            # The gate is closed while stopped; a card that leaves anyway is
            # recorded and takes no part in play.
            self.events.card(DISCARD, c, up, NONE)
            self._remember(c, DISCARD)
            self.events.irregularity(_STOP_RULES[self.stop_rule], _STOP_SECTIONS[self.stop_rule],
                                     c, b"drawn while stopped")
            return
        self.admit = False  # the card the order check stopped on takes its place (mismatch)
        # Ch 5A, 4: RUN cards in suit sequence say the deck was not shuffled. The card still takes its place, and its event
        # already says no card is due: the game stops (the gate closes) until
        # a supervisor's clear_stop. A card that ends the shoe stops nothing.
        self.cold = self.ordered(c)  # no local of its own: see events.Events "Calls"
        if self.cold:
            self.stopped = True
            self.stop_rule = STOP_COLD
        if self.seen[c] > self.decks:
            # Ch 3A, 4: the set holds `decks` copies of each card. Flag it and
            # play on: a foreign card never silently changes the game.
            self.events.irregularity(b"excess_card", b"Ch 3A, 4", c, b"more copies than the set holds; dealt as drawn")
        if self.phase == BURNING:
            self._burn(c, up)
        elif self.phase == DISCARDING:
            self.phase = OPEN
            self.events.card(DISCARD, c, up, NONE)
            self._remember(c, DISCARD)
        elif self.phase == DEALING:
            pos = self._due()
            if up and pos <= B2 and not self.simulated:
                # 13D: P1, B1, P2, B2 leave face down; a disclosed one voids the
                # round in progress (its wagers stand) and opens a simulated round.
                self.events.card(pos, c, up, NONE)
                self._remember(c, pos)
                self._disclosed_in_round(c)
            else:
                # A face-up third card is normal (Ch 8E, 8F). 13B(1)/13C(1): when
                # the Player stood and the Banker must draw, the next card is the
                # Banker's third whether or not it was disclosed; the shoe cannot
                # see where the dealer put it, so the normal flow is the rule.
                self._place(c, pos)
                self.events.card(pos, c, up, self.next_due())
                self._remember(c, pos)
                self._after_place(pos)
                if self.phase == DEALING and self.left == 0:
                    self._exhausted()
        else:
            self._stray(c, up)
        if self.cold:
            # Even a card that ended the shoe: the next one needs the supervisor.
            self.events.irregularity(events.COLD_DECK, events.COLD_DECK_SECTION, c, _STOPPED, True)

    def clear_stop(self):
        """A supervisor's confirmed clear_stop: play resumes where it stopped.
        The run starts over, so an order that is still unshuffled stops the
        game again RUN cards later."""
        why = self.clear_stop_refusal()
        if why is not None:
            self.error(why)
            return
        self.stopped = False
        self.admit = False
        self.run_prev = NO_CARD  # the cold-deck test starts over
        self.run_step = 0
        self.run_len = 1
        self.events.ruled(b"stop_cleared", _STOP_RULES[self.stop_rule])

    def mismatch(self, m):
        """The real-time check (cardset/ordercheck.py): the card leaving is
        not the one the shuffler's committed order has at its place (Ch 5B).
        ``m`` is the journal's body of it (events.MISMATCH_BYTES). The
        irregularity goes out first, so it is in the record before anything
        that card completes; the game stops (no card due, the gate closed)
        until a supervisor's clear_stop. When the card is one the shoe
        deals (``m[8]``), it still takes its place: a round is never left
        half-known, and the supervisor sees it where it fell."""
        if self.phase == NO_SHOE:
            return
        self.events.mismatch(m)
        self.stopped = True
        self.stop_rule = STOP_ORDER
        self.admit = m[8] != 0

    def ordered(self, c, limit=RUN):
        """The cold-deck test's step for card ``c`` (RUN above): True when the
        current run of one suit in rank sequence reaches ``limit`` cards, once
        per run (a test or the benchmark may weaken the limit; the shoe uses
        RUN). Three small ints of state, nothing allocated; the benchmark
        (host_tools/qa/bench/coldeck.py) cross-checks this very method."""
        d = c - self.run_prev
        if d == STEP or d == -STEP:  # NO_CARD is 255: never 4 from a card
            s = UP if d > 0 else DOWN
            if s == self.run_step:
                self.run_len += 1
            else:
                self.run_step = s
                self.run_len = 2
        else:
            self.run_step = 0
            self.run_len = 1
        self.run_prev = c
        return self.run_len == limit

    def cover(self):
        """The cover card passed the reader (Ch 9D)."""
        if self.phase == NO_SHOE:
            self.error(b"cover card with no card set loaded")
            return
        if self.cover_state != COVER_NONE:
            self.error(b"cover card seen twice in one shoe")
            return
        self.cover_state = COVER_SEEN
        self.events.cover()
        if self.left < MIN_COVER_DEPTH:
            # Ch 5C(1): the second cover card goes at least 14 cards above the bottom.
            self.events.irregularity(b"5C1", b"Ch 5C(1)", -1, b"cover card placed too deep")

    def exposed(self):
        """The dealer marks the last card drawn as disclosed."""
        why = self.exposed_refusal()
        c = self.last
        pos = self.last_pos
        self.last = -1  # a press uses the last card up, taken or not
        if why is not None:
            self.error(why)
            return
        if pos == BURN and not self.last_first_burn:
            self.burn_left += 1  # it no longer counts as a face-down burn card
            if self.phase == OPEN:
                self.phase = BURNING
            self.events.irregularity(b"13D", b"Ch 13D", c, b"disclosed burn card opens a simulated round")
            self._simulated_from(c)
        elif pos <= B2 and pos >= P1 and self.phase == DEALING and not self.simulated:
            self._disclosed_in_round(c)
        else:  # a held card (exposed_refusal leaves no other case)
            self.n_held -= 1
            self._disclosed_stray(c, self.held_rule == 2)

    def empty(self):
        """The empty sensor tripped (13E when a round cannot be completed)."""
        if self.phase == NO_SHOE:
            self.error(b"empty: no card set loaded")
            return
        if self.phase == DEALING:
            self._exhausted()
        else:
            self.events.irregularity(b"13E", b"Ch 13E", -1, b"shoe empty between rounds; new card set needed")
            self._shoe_end(b"empty")

    def alert(self, rule, c=-1, detail=None):
        """An irregularity found before the core (unknown, duplicate or
        wrong-batch card, reader fault). It is reported and changes nothing."""
        # The inspected set (Ch 4) defines which cards belong; the two batches
        # of a shuffler table differ by back colour (Ch 3B, 4D).
        # The reader path's rules are str; the order check's (events.ORDER_STALE,
        # ORDER_FOREIGN) bytes. Told apart by kind: bytes == str is always
        # False, and MicroPython prints a warning for each such comparison.
        if isinstance(rule, str):
            section = b"Ch 3B, 4D" if rule == "wrong_batch" else b"Ch 4" if rule != "reader_fault" else b"equipment"
        else:
            section = events.ORDER_REFUSED_SECTION  # cardset/ordercheck.py: an order refused
        self.events.irregularity(rule, section, c, b"ignored; game unchanged", detail)

    def error(self, message):
        """An input the game cannot take: ``message`` as bytes, or a str from
        a parser (escaped on the way out)."""
        self.events.error(message)

    # ---------------------------------------------------------------- queries

    def next_due(self):
        """Where the next card goes, or NONE; what the shoe's lights show."""
        if self.stopped:
            return NONE
        if self.phase == BURNING:
            return BURN
        if self.phase == DISCARDING:
            return DISCARD
        if self.phase == DEALING:
            return self._due()
        return NONE

    # ---------------------------------------------------------------- burning

    def _burn(self, c, up):
        if self.burn_left < 0:
            # Ch 5F, 5G: the first card is exposed and its face value (10-K count
            # ten, ace one) is how many more cards are burnt face down.
            self.burn_left = cards.burn_count(c)
            self._remember(c, BURN)
            self.last_first_burn = True
            if self.burn_left == 0:
                self.phase = OPEN
            self.events.card(BURN, c, up, self.next_due())  # with the burn count
            return
        self._remember(c, BURN)
        if up:
            # The brief: burn cards after the first leave face down; a disclosed
            # one is 13D. It is not a burn card and opens a simulated round;
            # the burn resumes afterwards.
            self.events.card(BURN, c, up, NONE)
            self.events.irregularity(b"13D", b"Ch 13D", c, b"disclosed burn card opens a simulated round")
            self._simulated_from(c)
            return
        self.burn_left -= 1
        if self.burn_left == 0:
            self.phase = OPEN
        self.events.card(BURN, c, up, self.next_due())

    # ------------------------------------------------------------ stray cards

    def _stray(self, c, up):
        """A card drawn when none is due (betting open)."""
        after_stand = self.b2_window
        self.b2_window = False
        if up:
            # Its place is decided by the rule that follows.
            self.events.card(NONE, c, up, NONE)
            self._disclosed_stray(c, after_stand)
            return
        if self.n_held >= MAX_HELD:
            self.events.card(DISCARD, c, up, NONE)
            self._remember(c, DISCARD)
            self.events.irregularity(b"13A", b"Ch 13A", c, b"no room to hold more cards drawn in error; discarded")
            return
        self.held[self.n_held] = c
        self.n_held += 1
        self._remember(c, HELD)
        self.events.card(HELD, c, up, NONE)
        if after_stand:
            # 13B(2): an undisclosed extra card after both hands stood becomes
            # the first card of the next hand.
            self.held_rule = 2
            self.events.irregularity(b"13B2", b"Ch 13B(2)", c, b"held as the first card of the next round")
        else:
            # 13A: a card drawn in error, not disclosed, is used as the first
            # card of the next hand.
            self.held_rule = 1
            self.events.irregularity(b"13A", b"Ch 13A", c, b"held as the first card of the next round")

    def _disclosed_stray(self, c, after_stand):
        if after_stand:
            if self.exposed_mode == EXPOSED_BURN:
                # 13C(2)(a): discard it and one more card drawn face down.
                self.events.irregularity(b"13C2a", b"Ch 13C(2)(a)", c, b"discarded with one more card drawn face down")
                self.phase = DISCARDING
                self.events.assign(DISCARD, c, self.next_due(), False)
                return
            # 13C(2)(b): it opens a simulated round with no wagers.
            self.events.irregularity(b"13C2b", b"Ch 13C(2)(b)", c, b"opens a simulated round with no wagers")
            self._simulated_from(c)
            return
        # 13D: any other disclosed card opens a simulated round.
        self.events.irregularity(b"13D", b"Ch 13D", c, b"opens a simulated round with no wagers")
        self._simulated_from(c)

    def _disclosed_in_round(self, c):
        # 13D: the cards already dealt to this round are void and its wagers
        # stand; the disclosed card opens a simulated round dealt at once, and
        # betting reopens for the next real round afterwards.
        self.events.irregularity(b"13D", b"Ch 13D", c, b"round void, wagers stand; simulated round follows")
        self._void(b"13D", b"stand")
        self._simulated_from(c)

    def _simulated_from(self, c):
        self._start_round(True)
        pos = self._due()
        self._place(c, pos)
        self.events.assign(pos, c, self.next_due(), False)
        self._after_place(pos)
        if self.phase == DEALING and self.left == 0:
            self._exhausted()

    # ------------------------------------------------------------ the round

    def _start_round(self, simulated):
        self.round += 1
        self.np = 0
        self.nb = 0
        self.simulated = simulated
        self.counted = False
        self.phase = DEALING

    def _due(self):
        np = self.np
        nb = self.nb
        n = np + nb
        if n < 4:
            return n  # Ch 8C: P1, B1, P2, B2 in that order
        pt = cards.hand_total(self.player, 2)
        bt = cards.hand_total(self.banker, 2)
        if rules.is_natural(pt) or rules.is_natural(bt):
            return NONE  # Ch 10A
        if np == 2 and nb == 2 and rules.player_draws(pt):
            return P3  # Ch 10B
        if nb == 2:
            third = rules.NO_THIRD
            if np == 3:
                third = cards.points(self.player[2])
            if rules.banker_draws(bt, third):
                return B3  # Ch 10D, 10E
        return NONE  # Ch 9C: never more than one extra card per hand

    def _place(self, c, pos):
        if pos == P1 or pos == P2 or pos == P3:
            self.player[self.np] = c
            self.np += 1
        else:
            self.banker[self.nb] = c
            self.nb += 1

    def _after_place(self, pos):
        if pos == B2 and not self.counted:
            self.counted = True
            # Ch 8D(3): the point counts are announced after the initial four.
            self.events.counts(cards.hand_total(self.player, 2), cards.hand_total(self.banker, 2))
        if self.np + self.nb >= 4 and self._due() == NONE:
            self._finish_round()

    def _finish_round(self):
        pt = cards.hand_total(self.player, self.np)
        bt = cards.hand_total(self.banker, self.nb)
        facts = self._facts(pt, bt)
        self.events.result(rules.winner(pt, bt), pt, bt, facts)
        simulated = self.simulated
        self.simulated = False
        self.phase = OPEN if self.burn_left <= 0 else BURNING
        if simulated:
            return
        self.real_rounds += 1
        # 13B(2)/13C(2) concern an extra card after the Player stood on two
        # cards and the Banker stood as well.
        self.b2_window = self.np == 2 and self.nb == 2 and not facts & (events.P_NATURAL | events.B_NATURAL)
        if self.cover_state == COVER_SEEN:
            # Ch 9D(2): upon completion of that hand, announce "last hand".
            self.cover_state = COVER_LAST
            self.events.ruled(b"last_hand", b"9D")
        elif self.cover_state == COVER_LAST:
            # Ch 9D(3): one more hand has been played; the shoe ends.
            self._shoe_end(b"cover")

    def _facts(self, pt, bt):
        """What the result says of this round besides the totals, as
        events.* bits: naturals and pairs, and the designation's own Ch 11A
        calls (the winner's call, 11A(1), is made at every table)."""
        f = 0
        if rules.natural(pt, self.np):
            f |= events.P_NATURAL
        if rules.natural(bt, self.nb):
            f |= events.B_NATURAL
        if rules.pair(self.player):
            f |= events.P_PAIR
        if rules.pair(self.banker):
            f |= events.B_PAIR
        d = self.designation
        if d == EZ:
            if rules.dragon7(pt, bt, self.nb):
                f |= events.CALL_DRAGON7  # 11A(2)
            if rules.panda8(pt, bt, self.np):
                f |= events.CALL_PANDA8  # 11A(3)
        elif d == FORTUNE7:
            # The text names Fortune 7 and One Up without defining them; the
            # readings are rules.dragon7 and rules.one_up (docs/rules.md).
            if rules.dragon7(pt, bt, self.nb):
                f |= events.CALL_FORTUNE7  # 11A(4)
            if rules.one_up(pt, bt):
                f |= events.CALL_ONE_UP  # 11A(5)
        return f

    def _exhausted(self):
        # 13E: not enough cards to complete the round: void, wagers returned,
        # and play resumes only with a new card set.
        self.events.irregularity(b"13E", b"Ch 13E", -1, b"insufficient cards to complete the round")
        self._void(b"13E", b"returned")
        self._shoe_end(b"13E")

    def _void(self, rule, wagers):
        self.events.void(rule, wagers)
        self.np = 0
        self.nb = 0
        self.simulated = False
        self.phase = OPEN

    def _shoe_end(self, reason):
        """The shoe is spent: report what was seen against the set (Ch 4)."""
        self.events.shoe_end(reason)
        self.phase = NO_SHOE

    def _remember(self, c, pos):
        """The last card drawn and where it went, for "exposed"."""
        self.last = c
        self.last_pos = pos
        self.last_first_burn = False
