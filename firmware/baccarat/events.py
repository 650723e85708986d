"""How each game event is written: its field names, their order and spelling.

The state machine (game.py) decides what happened and hands the values here;
this module is the only place that knows the bytes of an event, so the wire
format (docs/protocol.md) can be read, reviewed and changed in one file, and
the rules code stays free of JSON.

Every event is written into one preallocated ``JsonOut`` from constant byte
strings and small ints: nothing here allocates on the per-card path (card,
assign, counts, result, bets, cover, void, last_hand), which tests/e2e/test_hot_path.py
checks with MicroPython's heap locked. Only irregular paths that carry text
chosen elsewhere (error messages, reader details) encode a str.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from baccarat import cards, rules
from baccarat.jsonout import JsonOut

# What a result says besides the totals, as bits of one int, so the game hands
# the whole verdict over in one argument (see "Calls" in the Events docstring).
P_NATURAL = const(1)  # Ch 1B(3)
B_NATURAL = const(2)
P_PAIR = const(4)  # Ch 7A(16)
B_PAIR = const(8)
# Ch 11A calls besides the winner's. EZ and Fortune 7 never share a table, so
# the order in which they are written only matters within one designation.
CALL_DRAGON7 = const(16)  # 11A(2)
CALL_PANDA8 = const(32)  # 11A(3)
CALL_FORTUNE7 = const(64)  # 11A(4)
CALL_ONE_UP = const(128)  # 11A(5)
_NATURALS = const(3)  # P_NATURAL | B_NATURAL
# The cold-deck irregularity (Ch 5A; game.RUN), defined once: the host reads
# these names through link/events_schema.py.
COLD_DECK = b"cold_deck"
COLD_DECK_SECTION = b"Ch 5A"
# The real-time check's irregularity (cardset/ordercheck.py): a card that
# left the shoe is not the one the shuffler's committed order has at its
# place after the cut (Ch 5B); the game stops until clear_stop.
ORDER_MISMATCH = b"order_mismatch"
ORDER_MISMATCH_SECTION = b"Ch 5B"
ORDER_STOPPED = b"stopped until clear_stop"
ORDER_DETAIL = b"not the card the shuffler's committed order has at this position"
ORDER_UNKNOWN = b"an ID the card set does not know, where the committed order has a card"
# An order refused (cardset/ordercheck.py): not newer than the last the shoe
# opened or dealt (replayed, stale), or one that does not open under its
# pairing key (foreign). Ch 5H(4): the shoe cannot vouch that the batch is
# the one the shuffler secured and released; the game is unchanged.
ORDER_STALE = b"order_stale"
ORDER_FOREIGN = b"order_foreign"
ORDER_REFUSED_SECTION = b"Ch 5H(4)"
# A mismatch's journal body (link/journal.py ORDER_STOP), one byte each but
# the position: position (2), expected card, deck, batch, read card, deck,
# batch (NONE_BYTE: not known; the batches are kept for the record, the
# event names the decks), and 1 when the read card takes its place.
MISMATCH_BYTES = const(9)
NONE_BYTE = const(0xFF)
ASCENDING = b"ascending"  # each card the next rank up of the same suit
DESCENDING = b"descending"
# 11A(1): the winner's call, by rules.PLAYER / BANKER / TIE.
_WINNER_CALLS = (b'"player wins"', b'"banker wins"', b'"tie hand"')


def write_card(o, c):
    """A card as a JSON string, "9H", from the byte tables: indexing a str
    would intern a one-letter str, which can take heap (baccarat.cards)."""
    o.byte(0x22)
    o.byte(cards.RANK_BYTES[c >> 2])
    o.byte(cards.SUIT_BYTES[c & 3])
    o.byte(0x22)


def write_hand(o, hand, n):
    """The first ``n`` cards of ``hand`` as a JSON list."""
    o.byte(0x5B)
    for i in range(n):
        if i:
            o.byte(0x2C)
        write_card(o, hand[i])
    o.byte(0x5D)


class Events:
    """The event writer of one game: its buffer and where finished events go.

    It reads the game's state that every event repeats (round, simulated,
    cards left, the hands) from the game itself, and takes as arguments only
    what differs per event.

    Calls: a MicroPython function whose locals and value stack exceed 11
    slots gets its frame from the heap on every call (py/objfun.c,
    VM_MAX_STATE_ON_STACK), so the per-card writers keep few arguments and
    few locals; tests/e2e/test_events.py counts every byte allocated per card.
    """

    def __init__(self, game, emit, size, pos_names, held):
        self.g = game
        self.emit = emit
        self.out = JsonOut(size)
        self.pos_names = pos_names  # the game's position codes index these
        self.held = held  # the code of a card held for the next round

    # ------------------------------------------------------------ framing

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

    # ------------------------------------------------------------- fields

    def _round(self):
        self.out.raw(b',"round":')
        self.out.int(self.g.round)

    def _simulated(self):
        self.out.raw(b',"simulated":')
        self.out.bool(self.g.simulated)

    def _pos(self, key, pos):
        """A position field from the game's position code; < 0 is null."""
        o = self.out
        o.raw(key)
        if pos < 0:
            o.raw(b"null")
        else:
            o.byte(0x22)
            o.raw(self.pos_names[pos])
            o.byte(0x22)

    def card_value(self, c):
        write_card(self.out, c)

    def card_field(self, c):
        self.out.raw(b',"card":')
        self.card_value(c)

    def _hand(self, hand, n):
        write_hand(self.out, hand, n)

    # ------------------------------------------------------------- events

    def shoe(self, nxt, checked=b""):
        """``checked``: the order fields a paired shoe adds, already JSON
        (cardset/ordercheck.py ``arm`` writes them; the journal keeps them)."""
        g = self.g
        o = self._begin(b"shoe")
        o.raw(b',"decks":')
        o.int(g.decks)
        o.raw(b',"designation":')
        o.text(rules.DESIGNATIONS[g.designation])
        o.raw(b',"exposed":')
        o.text(rules.EXPOSED_MODES[g.exposed_mode])
        o.raw(b',"batch":"')
        o.byte(0x40 + g.batch)  # 1 -> A, 2 -> B
        o.raw(b'","cards":')
        o.int(g.left)
        self._pos(b',"next":', nxt)
        if checked:
            o.raw(checked)
        self._send()

    def bets(self):
        self._begin(b"bets")
        self._round()
        self._send()

    def card(self, pos, c, up, nxt):
        """A card left the shoe for position ``pos``, ``nxt`` is due next. A
        card held under 13A/13B(2) is reported with the round it is held for,
        the next one; the first, exposed burn card (Ch 5F) with how many
        cards are burnt after it."""
        g = self.g
        o = self._begin(b"card")
        o.raw(b',"round":')
        o.int(g.round + 1 if pos == self.held else g.round)
        self._pos(b',"pos":', pos)
        self.card_field(c)
        o.raw(b',"up":')
        o.bool(up)
        self._pos(b',"next":', nxt)
        self._simulated()
        o.raw(b',"left":')
        o.int(g.left)
        if g.deck_of:
            o.raw(b',"deck":')
            o.int(g.deck_of)
        if g.last_first_burn:
            o.raw(b',"burn":')
            o.int(g.burn_left)
        self._send()

    def assign(self, pos, c, nxt, held):
        """A card already reported is given its place by a rule; a separate
        event type so that counting card events still counts each card once.
        ``held``: a card held under 13A/13B(2) taking its place at "no more
        bets", which says where it came from instead of ``simulated``."""
        o = self._begin(b"assign")
        self._round()
        self._pos(b',"pos":', pos)
        self.card_field(c)
        self._pos(b',"next":', nxt)
        if held:
            o.raw(b',"from":"HELD"')
        else:
            self._simulated()
        self._send()

    def cover(self):
        o = self._begin(b"cover")
        self._round()
        o.raw(b',"left":')
        o.int(self.g.left)
        o.raw(b',"rule":"9D"')
        self._send()

    def counts(self, player_total, banker_total):
        o = self._begin(b"counts")
        self._round()
        o.raw(b',"player":')
        o.int(player_total)
        o.raw(b',"banker":')
        o.int(banker_total)
        self._simulated()
        self._send()

    def result(self, winner, pt, bt, facts):
        """Ch 11A: both hands, totals, card counts, the winner, the natural and
        pair flags and the announcements; ``facts`` holds the flags and calls
        as the bits above."""
        g = self.g
        o = self._begin(b"result")
        self._round()
        o.raw(b',"player":')
        self._hand(g.player, g.np)
        o.raw(b',"banker":')
        self._hand(g.banker, g.nb)
        o.raw(b',"player_total":')
        o.int(pt)
        o.raw(b',"banker_total":')
        o.int(bt)
        o.raw(b',"player_cards":')
        o.int(g.np)
        o.raw(b',"banker_cards":')
        o.int(g.nb)
        o.raw(b',"winner":"')
        o.raw(rules.WINNER_NAMES[winner])
        o.raw(b'","natural":')
        o.bool(facts & _NATURALS)
        o.raw(b',"player_natural":')
        o.bool(facts & P_NATURAL)
        o.raw(b',"banker_natural":')
        o.bool(facts & B_NATURAL)
        o.raw(b',"player_pair":')
        o.bool(facts & P_PAIR)
        o.raw(b',"banker_pair":')
        o.bool(facts & B_PAIR)
        o.raw(b',"announce":[')
        o.raw(_WINNER_CALLS[winner])
        if facts & CALL_DRAGON7:
            o.raw(b',"Dragon 7"')
        if facts & CALL_PANDA8:
            o.raw(b',"Panda 8"')
        if facts & CALL_FORTUNE7:
            o.raw(b',"Fortune 7"')
        if facts & CALL_ONE_UP:
            o.raw(b',"One Up"')
        o.raw(b"]")
        self._simulated()
        self._send()

    def ruled(self, kind, rule):
        """An event of ``kind`` saying only the round and the rule behind it:
        ``last_hand`` (9D), ``stop_cleared`` (the supervisor's clear_stop
        lifted the stop ``rule`` raised)."""
        o = self._begin(kind)
        self._round()
        o.raw(b',"rule":"')
        o.raw(rule)
        o.byte(0x22)
        self._send()

    def void(self, rule, wagers):
        o = self._begin(b"void")
        self._round()
        o.raw(b',"rule":"')
        o.raw(rule)
        o.raw(b'","wagers":"')
        o.raw(wagers)
        o.byte(0x22)
        self._simulated()
        self._send()

    def shoe_end(self, reason):
        """The per-rank count of cards seen, and what is missing or in excess
        against the set, so the pit can reconcile the shoe (Ch 4)."""
        g = self.g
        o = self._begin(b"shoe_end")
        o.raw(b',"reason":"')
        o.raw(reason)
        o.raw(b'","rounds":')
        o.int(g.real_rounds)
        o.raw(b',"left":')
        o.int(g.left)
        o.raw(b',"counts":{')
        for r in range(13):
            if r:
                o.byte(0x2C)
            o.byte(0x22)
            o.byte(cards.RANK_BYTES[r])
            o.raw(b'":')
            o.int(self._rank_seen(r))
        o.raw(b'},"missing":{')
        self._face_counts(-1)
        o.raw(b'},"excess":{')
        self._face_counts(1)
        o.raw(b"}")
        self._send()

    def _rank_seen(self, r):
        """Copies seen of rank ``r``: its four suits are four consecutive codes."""
        seen = self.g.seen
        c = cards.make(r, 0)
        return seen[c] + seen[c + 1] + seen[c + 2] + seen[c + 3]

    def _face_counts(self, sign):
        """Each card seen fewer (sign -1) or more (sign 1) times than the set holds."""
        o = self.out
        first = True
        for c in range(cards.CARDS_PER_DECK):
            d = (self.g.seen[c] - self.g.decks) * sign
            if d > 0:
                if not first:
                    o.byte(0x2C)
                first = False
                self.card_value(c)
                o.byte(0x3A)
                o.int(d)

    def irregularity(self, rule, section, c, action, detail=None):
        """An irregularity: ``rule`` and ``section`` as bytes from the game, or
        ``rule`` as a str from the reader path (then escaped), with an
        optional reader ``detail`` str, or True for the cold-deck run (its
        pattern and cards). ``c`` < 0: no card is involved."""
        o = self._begin(b"irregularity")
        o.raw(b',"rule":')
        if isinstance(rule, str):
            o.text(rule)
        else:
            o.byte(0x22)
            o.raw(rule)
            o.byte(0x22)
        o.raw(b',"section":"')
        o.raw(section)
        o.byte(0x22)
        self._round()
        if c >= 0:
            self.card_field(c)
        if detail is True:  # the cold-deck stop: its run, not a text
            self._run()
        elif detail is not None:
            o.raw(b',"detail":')
            o.text(detail)
        o.raw(b',"action":"')
        o.raw(action)
        o.byte(0x22)
        self._send()

    def mismatch(self, m):
        """The order check's irregularity from its journal body ``m``
        (MISMATCH_BYTES above): the position, the card expected there and
        the card read, each card with its deck. A rare path."""
        o = self._begin(b"irregularity")
        o.raw(b',"rule":"')
        o.raw(ORDER_MISMATCH)
        o.raw(b'","section":"')
        o.raw(ORDER_MISMATCH_SECTION)
        o.byte(0x22)
        self._round()
        if m[5] != NONE_BYTE:
            self.card_field(m[5])
            o.raw(b',"deck":')
            o.int(m[6])
        o.raw(b',"position":')
        o.int((m[0] << 8) | m[1])
        if m[2] != NONE_BYTE:
            o.raw(b',"expected":')
            self.card_value(m[2])
            o.raw(b',"expected_deck":')
            o.int(m[3])
        o.raw(b',"detail":"')
        o.raw(ORDER_DETAIL if m[5] != NONE_BYTE else ORDER_UNKNOWN)
        o.raw(b'","action":"')
        o.raw(ORDER_STOPPED)
        o.byte(0x22)
        self._send()

    def _run(self):
        """The cold-deck run (Game.ordered) as its pattern and every card in
        it, written from the game's three ints with nothing allocated."""
        g = self.g  # run_prev, run_step (1 up, 2 down), run_len
        o = self.out
        o.raw(b',"pattern":"')
        o.raw(ASCENDING if g.run_step == 1 else DESCENDING)
        o.raw(b'","cards":[')
        step = 4 if g.run_step == 1 else -4
        c = g.run_prev - step * (g.run_len - 1)
        for i in range(g.run_len):
            if i:
                o.byte(0x2C)
            write_card(o, c)
            c += step
        o.byte(0x5D)

    def error(self, message):
        """``message`` is bytes from the game or a str from elsewhere (then
        escaped); a script driver's ``line`` >= 0 names the line."""
        o = self._begin(b"error")
        if self.g.line >= 0:
            o.raw(b',"line":')
            o.int(self.g.line)
        o.raw(b',"message":')
        if isinstance(message, str):
            o.text(message)
        else:
            o.byte(0x22)
            o.raw(message)
            o.byte(0x22)
        self._send()
