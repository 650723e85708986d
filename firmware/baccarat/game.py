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
queue are preallocated bytearrays and events are written by ``JsonOut``.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from baccarat import cards, rules
from baccarat.jsonout import JsonOut

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

# Table designations (Ch 1, 11A) and the 13C(2) Rules Submission choice.
STANDARD = const(0)
EZ = const(1)
FORTUNE7 = const(2)
NO_COMMISSION = const(3)
DESIGNATIONS = ("standard", "ez", "fortune7", "no-commission")
EXPOSED_SIMULATED = const(0)  # 13C(2)(b)
EXPOSED_BURN = const(1)  # 13C(2)(a)
EXPOSED_MODES = ("simulated", "burn")

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

# Winner codes.
PLAYER = const(0)
BANKER = const(1)
TIE = const(2)
_WINNER_NAMES = (b"player", b"banker", b"tie")


class Game:
    def __init__(self, emit, out_size=768):
        self.emit = emit
        self.out = JsonOut(out_size)
        self.player = bytearray(3)
        self.banker = bytearray(3)
        self.seen = bytearray(cards.CARDS_PER_DECK)  # copies seen, per face
        self.held = bytearray(MAX_HELD)
        self.line = -1  # set by a script driver so errors can name their line
        self.phase = NO_SHOE
        self.decks = 0
        self.designation = STANDARD
        self.exposed_mode = EXPOSED_SIMULATED
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
        for i in range(cards.CARDS_PER_DECK):
            self.seen[i] = 0

    # ----------------------------------------------------------------- inputs

    def new_shoe(self, decks=8, designation=STANDARD, exposed=EXPOSED_SIMULATED):
        """A new card set is in the shoe (Ch 5): reset and expect the burn."""
        if decks < 1 or decks > 16:
            self.error(b"new shoe: decks must be 1 to 16")
            return
        if self.phase == DEALING and not self.simulated and self.np + self.nb > 0:
            # The set is replaced under a round: it cannot be completed, so it
            # is void and its wagers go back, as 13E does for an empty shoe.
            self._void(b"new_shoe", b"returned")
        self._clear_shoe()
        self.decks = decks
        self.designation = designation
        self.exposed_mode = exposed
        self.left = decks * cards.CARDS_PER_DECK
        self.phase = BURNING
        self.burn_left = -1  # -1: the first, exposed burn card is due
        o = self._begin(b"shoe")
        o.raw(b',"decks":')
        o.int(decks)
        o.raw(b',"designation":')
        o.text(DESIGNATIONS[designation])
        o.raw(b',"exposed":')
        o.text(EXPOSED_MODES[exposed])
        o.raw(b',"cards":')
        o.int(self.left)
        o.raw(b',"next":"BURN"')
        self._send()

    def bets(self):
        """The dealer announced "no more bets" (Ch 7D, 8B)."""
        if self.phase == DEALING:
            return  # betting is already closed: pressing again does nothing
        if self.phase == NO_SHOE:
            self.error(b"no more bets: no card set loaded")
            return
        if self.phase != OPEN:
            self.error(b"no more bets: the burn or a 13C(2)(a) discard is not finished")
            return
        self.b2_window = False
        self._start_round(False)
        o = self._begin(b"bets")
        self._round_field()
        self._send()
        # Cards held under 13A/13B(2) are the first cards of this round.
        n = self.n_held
        self.n_held = 0
        for i in range(n):
            c = self.held[i]
            pos = self._due()
            self._place(c, pos)
            o = self._begin(b"assign")
            self._round_field()
            self._pos_field(b',"pos":', pos)
            self._card_field(c)
            self._next_field()
            o.raw(b',"from":"HELD"')
            self._send()
            self._after_place(pos)
        if self.phase == DEALING and self.left == 0:
            self._exhausted()

    def card(self, c, up=False):
        """A card left the shoe; ``up`` when it was disclosed (face up)."""
        if self.phase == NO_SHOE:
            self.error(b"card drawn with no card set loaded")
            return
        self.left -= 1
        self.seen[c] += 1
        if self.seen[c] > self.decks:
            # Ch 3A, 4: the set holds `decks` copies of each card. Flag it and
            # play on: a foreign card never silently changes the game.
            self._irregular(b"excess_card", b"Ch 3A, 4", c, b"more copies than the set holds; dealt as drawn")
        phase = self.phase
        if phase == BURNING:
            self._burn(c, up)
        elif phase == DISCARDING:
            self.phase = OPEN
            self._card_event(c, DISCARD, up, NONE)
            self._remember(c, DISCARD)
        elif phase == DEALING:
            pos = self._due()
            if up and pos <= B2 and not self.simulated:
                # 13D: P1, B1, P2, B2 leave face down; a disclosed one voids the
                # round in progress (its wagers stand) and opens a simulated round.
                self._card_event(c, pos, up, NONE)
                self._remember(c, pos)
                self._disclosed_in_round(c)
            else:
                # A face-up third card is normal (Ch 8E, 8F). 13B(1)/13C(1): when
                # the Player stood and the Banker must draw, the next card is the
                # Banker's third whether or not it was disclosed; the shoe cannot
                # see where the dealer put it, so the normal flow is the rule.
                self._place(c, pos)
                self._card_event(c, pos, up, self.next_due())
                self._remember(c, pos)
                self._after_place(pos)
                if self.phase == DEALING and self.left == 0:
                    self._exhausted()
        else:
            self._stray(c, up)

    def cover(self):
        """The cover card passed the reader (Ch 9D)."""
        if self.phase == NO_SHOE:
            self.error(b"cover card with no card set loaded")
            return
        if self.cover_state != COVER_NONE:
            self.error(b"cover card seen twice in one shoe")
            return
        self.cover_state = COVER_SEEN
        o = self._begin(b"cover")
        self._round_field()
        o.raw(b',"left":')
        o.int(self.left)
        o.raw(b',"rule":"9D"')
        self._send()
        if self.left < MIN_COVER_DEPTH:
            # Ch 5C(1): the second cover card goes at least 14 cards above the bottom.
            self._irregular(b"5C1", b"Ch 5C(1)", -1, b"cover card placed too deep")

    def exposed(self):
        """The dealer marks the last card drawn as disclosed."""
        c = self.last
        pos = self.last_pos
        if c < 0:
            self.error(b"exposed: no card has been drawn")
            return
        self.last = -1
        if pos == BURN and not self.last_first_burn:
            self.burn_left += 1  # it no longer counts as a face-down burn card
            if self.phase == OPEN:
                self.phase = BURNING
            self._irregular(b"13D", b"Ch 13D", c, b"disclosed burn card opens a simulated round")
            self._simulated_from(c)
        elif pos <= B2 and pos >= P1 and self.phase == DEALING and not self.simulated:
            self._disclosed_in_round(c)
        elif pos == HELD and self.n_held > 0:
            self.n_held -= 1
            self._disclosed_stray(c, self.held_rule == 2)
        else:
            self.error(b"exposed: nothing to apply (the last card is face up by rule, or its round is complete)")

    def empty(self):
        """The empty sensor tripped (13E when a round cannot be completed)."""
        if self.phase == NO_SHOE:
            self.error(b"empty: no card set loaded")
            return
        if self.phase == DEALING:
            self._exhausted()
        else:
            self._irregular(b"13E", b"Ch 13E", -1, b"shoe empty between rounds; new card set needed")
            self._shoe_end(b"empty")

    def alert(self, rule, c=-1, detail=None):
        """An irregularity found before the core (unknown, duplicate or
        wrong-batch card, reader fault). It is reported and changes nothing."""
        o = self._begin(b"irregularity")
        o.raw(b',"rule":')
        o.text(rule)
        o.raw(b',"section":"')
        # The inspected set (Ch 4) defines which cards belong; the two batches
        # of a shuffler table differ by back colour (Ch 3B, 4D).
        o.raw(b"Ch 3B, 4D" if rule == "wrong_batch" else b"Ch 4" if rule != "reader_fault" else b"equipment")
        o.byte(0x22)
        self._round_field()
        if c >= 0:
            self._card_field(c)
        if detail is not None:
            o.raw(b',"detail":')
            o.text(detail)
        o.raw(b',"action":"ignored; game unchanged"')
        self._send()

    def error(self, message):
        o = self._begin(b"error")
        if self.line >= 0:
            o.raw(b',"line":')
            o.int(self.line)
        o.raw(b',"message":')
        if isinstance(message, str):
            o.text(message)
        else:
            o.byte(0x22)
            o.raw(message)
            o.byte(0x22)
        self._send()

    # ---------------------------------------------------------------- queries

    def next_due(self):
        """Where the next card goes, or NONE; what the shoe's lights show."""
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
            o = self._card_event_open(c, BURN, up, self.next_due())
            o.raw(b',"burn":')
            o.int(self.burn_left)
            self._send()
            return
        self._remember(c, BURN)
        if up:
            # The brief: burn cards after the first leave face down; a disclosed
            # one is 13D. It is not a burn card and opens a simulated round;
            # the burn resumes afterwards.
            self._card_event(c, BURN, up, NONE)
            self._irregular(b"13D", b"Ch 13D", c, b"disclosed burn card opens a simulated round")
            self._simulated_from(c)
            return
        self.burn_left -= 1
        if self.burn_left == 0:
            self.phase = OPEN
        self._card_event(c, BURN, up, self.next_due())

    # ------------------------------------------------------------ stray cards

    def _stray(self, c, up):
        """A card drawn when none is due (betting open)."""
        after_stand = self.b2_window
        self.b2_window = False
        if up:
            # Its place is decided by the rule that follows.
            self._card_event(c, NONE, up, NONE)
            self._disclosed_stray(c, after_stand)
            return
        if self.n_held >= MAX_HELD:
            self._card_event(c, DISCARD, up, NONE)
            self._remember(c, DISCARD)
            self._irregular(b"13A", b"Ch 13A", c, b"no room to hold more cards drawn in error; discarded")
            return
        self.held[self.n_held] = c
        self.n_held += 1
        self._remember(c, HELD)
        self._card_event(c, HELD, up, NONE)
        if after_stand:
            # 13B(2): an undisclosed extra card after both hands stood becomes
            # the first card of the next hand.
            self.held_rule = 2
            self._irregular(b"13B2", b"Ch 13B(2)", c, b"held as the first card of the next round")
        else:
            # 13A: a card drawn in error, not disclosed, is used as the first
            # card of the next hand.
            self.held_rule = 1
            self._irregular(b"13A", b"Ch 13A", c, b"held as the first card of the next round")

    def _disclosed_stray(self, c, after_stand):
        if after_stand:
            if self.exposed_mode == EXPOSED_BURN:
                # 13C(2)(a): discard it and one more card drawn face down.
                self._irregular(b"13C2a", b"Ch 13C(2)(a)", c, b"discarded with one more card drawn face down")
                self.phase = DISCARDING
                self._assign(c, DISCARD)
                return
            # 13C(2)(b): it opens a simulated round with no wagers.
            self._irregular(b"13C2b", b"Ch 13C(2)(b)", c, b"opens a simulated round with no wagers")
            self._simulated_from(c)
            return
        # 13D: any other disclosed card opens a simulated round.
        self._irregular(b"13D", b"Ch 13D", c, b"opens a simulated round with no wagers")
        self._simulated_from(c)

    def _disclosed_in_round(self, c):
        # 13D: the cards already dealt to this round are void and its wagers
        # stand; the disclosed card opens a simulated round dealt at once, and
        # betting reopens for the next real round afterwards.
        self._irregular(b"13D", b"Ch 13D", c, b"round void, wagers stand; simulated round follows")
        self._void(b"13D", b"stand")
        self._simulated_from(c)

    def _simulated_from(self, c):
        self._start_round(True)
        pos = self._due()
        self._place(c, pos)
        self._assign(c, pos)
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
            o = self._begin(b"counts")
            self._round_field()
            o.raw(b',"player":')
            o.int(cards.hand_total(self.player, 2))
            o.raw(b',"banker":')
            o.int(cards.hand_total(self.banker, 2))
            self._sim_field()
            self._send()
        if self.np + self.nb >= 4 and self._due() == NONE:
            self._finish_round()

    def _finish_round(self):
        simulated = self.simulated
        np = self.np
        nb = self.nb
        pt = cards.hand_total(self.player, np)
        bt = cards.hand_total(self.banker, nb)
        if pt > bt:
            winner = PLAYER
        elif bt > pt:
            winner = BANKER
        else:
            winner = TIE
        p_nat = rules.is_natural(cards.hand_total(self.player, 2))
        b_nat = rules.is_natural(cards.hand_total(self.banker, 2))
        o = self._begin(b"result")
        self._round_field()
        o.raw(b',"player":')
        self._hand(self.player, np)
        o.raw(b',"banker":')
        self._hand(self.banker, nb)
        o.raw(b',"player_total":')
        o.int(pt)
        o.raw(b',"banker_total":')
        o.int(bt)
        o.raw(b',"player_cards":')
        o.int(np)
        o.raw(b',"banker_cards":')
        o.int(nb)
        o.raw(b',"winner":"')
        o.raw(_WINNER_NAMES[winner])
        o.raw(b'","natural":')
        o.bool(p_nat or b_nat)
        o.raw(b',"player_natural":')
        o.bool(p_nat)
        o.raw(b',"banker_natural":')
        o.bool(b_nat)
        o.raw(b',"player_pair":')
        o.bool(cards.rank(self.player[0]) == cards.rank(self.player[1]))
        o.raw(b',"banker_pair":')
        o.bool(cards.rank(self.banker[0]) == cards.rank(self.banker[1]))
        o.raw(b',"announce":[')
        self._announce(winner, pt, bt, np, nb)
        o.raw(b"]")
        self._sim_field()
        self._send()
        self.simulated = False
        self.phase = OPEN if self.burn_left <= 0 else BURNING
        if simulated:
            return
        self.real_rounds += 1
        # 13B(2)/13C(2) concern an extra card after the Player stood on two
        # cards and the Banker stood as well.
        self.b2_window = np == 2 and nb == 2 and not (p_nat or b_nat)
        if self.cover_state == COVER_SEEN:
            # Ch 9D(2): upon completion of that hand, announce "last hand".
            self.cover_state = COVER_LAST
            o = self._begin(b"last_hand")
            self._round_field()
            o.raw(b',"rule":"9D"')
            self._send()
        elif self.cover_state == COVER_LAST:
            # Ch 9D(3): one more hand has been played; the shoe ends.
            self._shoe_end(b"cover")

    def _announce(self, winner, pt, bt, np, nb):
        """Ch 11A: the winner, "tie hand", and the designation's own calls."""
        o = self.out
        if winner == TIE:
            o.raw(b'"tie hand"')  # 11A(1)
        elif winner == PLAYER:
            o.raw(b'"player wins"')
        else:
            o.raw(b'"banker wins"')
        d = self.designation
        # Ch 1B(1): Dragon 7, a three-card Banker 7 against a Player under 7.
        banker7 = nb == 3 and bt == 7 and pt < 7
        if d == EZ:
            if banker7:
                o.raw(b',"Dragon 7"')  # 11A(2)
            # Ch 1B(5): Panda 8, a three-card Player 8 against a Banker under 8.
            if np == 3 and pt == 8 and bt < 8:
                o.raw(b',"Panda 8"')  # 11A(3)
        elif d == FORTUNE7:
            # The text names Fortune 7 and One Up without defining them; this
            # product reads Fortune 7 as the Dragon 7 hand (Ch 7A(1)(a) treats
            # them alike) and One Up as the Player winning by exactly one point
            # (the two cases Ch 12J pays). See docs/rules.md.
            if banker7:
                o.raw(b',"Fortune 7"')  # 11A(4)
            if winner == PLAYER and pt - bt == 1:
                o.raw(b',"One Up"')  # 11A(5)

    def _exhausted(self):
        # 13E: not enough cards to complete the round: void, wagers returned,
        # and play resumes only with a new card set.
        self._irregular(b"13E", b"Ch 13E", -1, b"insufficient cards to complete the round")
        self._void(b"13E", b"returned")
        self._shoe_end(b"13E")

    def _void(self, rule, wagers):
        o = self._begin(b"void")
        self._round_field()
        o.raw(b',"rule":"')
        o.raw(rule)
        o.raw(b'","wagers":"')
        o.raw(wagers)
        o.byte(0x22)
        self._sim_field()
        self._send()
        self.np = 0
        self.nb = 0
        self.simulated = False
        self.phase = OPEN

    def _shoe_end(self, reason):
        """The per-rank count of cards seen, and what is missing or in excess
        against the set, so the pit can reconcile the shoe (Ch 4)."""
        o = self._begin(b"shoe_end")
        o.raw(b',"reason":"')
        o.raw(reason)
        o.raw(b'","rounds":')
        o.int(self.real_rounds)
        o.raw(b',"left":')
        o.int(self.left)
        o.raw(b',"counts":{')
        for r in range(13):
            n = 0
            for s in range(4):
                n += self.seen[cards.make(r, s)]
            if r:
                o.byte(0x2C)
            o.byte(0x22)
            o.byte(cards.RANK_BYTES[r])
            o.raw(b'":')
            o.int(n)
        o.raw(b'},"missing":{')
        self._face_counts(-1)
        o.raw(b'},"excess":{')
        self._face_counts(1)
        o.raw(b"}")
        self._send()
        self.phase = NO_SHOE

    def _face_counts(self, sign):
        o = self.out
        first = True
        for c in range(cards.CARDS_PER_DECK):
            d = (self.seen[c] - self.decks) * sign
            if d > 0:
                if not first:
                    o.byte(0x2C)
                first = False
                self._card_value(c)
                o.byte(0x3A)
                o.int(d)

    # ---------------------------------------------------------------- events

    def _remember(self, c, pos):
        self.last = c
        self.last_pos = pos
        self.last_first_burn = False

    def _begin(self, kind):
        o = self.out
        o.reset()
        o.raw(b'{"type":"')
        o.raw(kind)
        o.byte(0x22)
        return o

    def _send(self):
        o = self.out
        if o.over:
            # An event never goes out cut short: say so instead.
            o.reset()
            o.raw(b'{"type":"error","message":"event too long for the buffer"')
        o.byte(0x7D)
        self.emit(o.buf, o.n)

    def _round_field(self):
        self.out.raw(b',"round":')
        self.out.int(self.round)

    def _sim_field(self):
        self.out.raw(b',"simulated":')
        self.out.bool(self.simulated)

    def _pos_field(self, key, pos):
        o = self.out
        o.raw(key)
        if pos < 0:
            o.raw(b"null")
        else:
            o.byte(0x22)
            o.raw(POS_NAMES[pos])
            o.byte(0x22)

    def _card_value(self, c):
        o = self.out
        o.byte(0x22)
        o.byte(cards.RANK_BYTES[c >> 2])
        o.byte(cards.SUIT_BYTES[c & 3])
        o.byte(0x22)

    def _card_field(self, c):
        self.out.raw(b',"card":')
        self._card_value(c)

    def _next_field(self):
        self._pos_field(b',"next":', self.next_due())

    def _hand(self, hand, n):
        o = self.out
        o.byte(0x5B)
        for i in range(n):
            if i:
                o.byte(0x2C)
            self._card_value(hand[i])
        o.byte(0x5D)

    def _card_event_open(self, c, pos, up, nxt):
        o = self._begin(b"card")
        if pos == HELD:
            o.raw(b',"round":')
            o.int(self.round + 1)  # the round it is held for
        else:
            self._round_field()
        self._pos_field(b',"pos":', pos)
        self._card_field(c)
        o.raw(b',"up":')
        o.bool(up)
        self._pos_field(b',"next":', nxt)
        self._sim_field()
        o.raw(b',"left":')
        o.int(self.left)
        return o

    def _card_event(self, c, pos, up, nxt):
        self._card_event_open(c, pos, up, nxt)
        self._send()

    def _assign(self, c, pos):
        """A card already reported is given its place by a rule; a separate
        event type so that counting card events still counts each card once."""
        self._begin(b"assign")
        self._round_field()
        self._pos_field(b',"pos":', pos)
        self._card_field(c)
        self._next_field()
        self._sim_field()
        self._send()

    def _irregular(self, rule, section, c, action):
        o = self._begin(b"irregularity")
        o.raw(b',"rule":"')
        o.raw(rule)
        o.raw(b'","section":"')
        o.raw(section)
        o.byte(0x22)
        self._round_field()
        if c >= 0:
            self._card_field(c)
        o.raw(b',"action":"')
        o.raw(action)
        o.byte(0x22)
        self._send()
