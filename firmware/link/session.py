"""The shoe's end of the link: the device-agnostic link (link/core.py) plus
the game.

Every input reaches the game through this object (it has the game's input
methods, so ``baccarat.script.feed_line`` and ``cardset.intake.Intake`` can
drive it), and each is journaled before the game sees it. Every event the
game emits gets the next sequence number and waits in the outbox until the
host acks it; each is signed, chained to the one before, when it is first
sent. What is the shoe's own is here and in link/recovery.py (replaying
game inputs) and link/schema.py (the shoe's commands); the rest of the link
is link/core.py (hello, signing, acks, window, outbox, journal, the link's
commands), which the shuffler shares without the game.

Everything the shoe may need while cards are dealt is imported with this
module and allocated here, at boot, never on demand: a refill after slow
acks or an outage, a `shoe` line, a command. MicroPython's heap never moves
an object, so after boot it is free space in many small holes; loading a
module's code or making a game mid-play then needs blocks that may no longer
exist ("memory allocation failed" in the middle of a shoe).
"""

from baccarat import game as _game
from baccarat import events as _events
from baccarat.events import write_hand
from link import core, dispatch, proto, recovery, reports, schema, settings
from link import journal as _journal

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# Card-set batches, as cardset.registry numbers them (not imported: a shoe
# without a reader should not pay the heap for the registry module).
BATCH_A = const(1)
BATCH_B = const(2)


def _bets(s, args):
    s.bets()


def _exposed(s, args):
    s.exposed()


def _shoe(s, args):
    s.new_shoe(args["decks"], args["designation"], args["exposed"], args["batch"], args["set"],
               args["setdigest"], args["order"])


def _clear_stop(s, args):
    # The supervisor's signed command (never a dealer input), journaled as
    # every game input is.
    if s._playable("clear_stop"):
        s.journal.simple(_journal.CLEAR_STOP)
        s.game.clear_stop()


def _bench(s, name, args):
    """A technician's probe (sensor, secure, sign): firmware/probes.py
    answers it. That module is not resident: it is loaded by the first such
    question, and only while no shoe is in play (mid-shoe nothing is loaded,
    docs/design.md; ``Session.refusal``), then stays; a shoe at a table never
    pays its heap."""
    import probes
    probes.ACTIONS[name](s, args)


def _sensor(s, args):
    _bench(s, "sensor", args)


def _secure(s, args):
    _bench(s, "secure", args)


def _sign(s, args):
    _bench(s, "sign", args)


def _order(s, args):
    """A part of the batch's order from the paired shuffler, relayed by the
    pit unread (cardset/ordercheck.py keeps, opens and answers it)."""
    s.intake.check.command(s, args, s.game.phase == _game.NO_SHOE)


ACTIONS = {"bets": _bets, "exposed": _exposed, "shoe": _shoe, "clear_stop": _clear_stop, "order": _order}
ACTIONS.update(dispatch.LINK_ACTIONS)
ACTIONS.update({"sensor": _sensor, "secure": _secure, "sign": _sign})


def _game_status(o, s):
    """The `status` event's game fields (link/reports.py writes the rest)."""
    g = s.game
    o.raw(b',"round":')
    o.int(g.round)
    o.raw(b',"phase":')
    o.text(proto.PHASE_STOPPED if g.stopped else proto.PHASE_NAMES[g.phase])
    due = g.next_due()
    o.raw(b',"next":')
    if due < 0:
        o.raw(b"null")
    else:
        o.byte(0x22)
        o.raw(_game.POS_NAMES[due])
        o.byte(0x22)
    o.raw(b',"player":')
    write_hand(o, g.player, g.np)
    o.raw(b',"banker":')
    write_hand(o, g.banker, g.nb)
    o.raw(b',"held":')
    write_hand(o, g.held, g.n_held)
    o.raw(b',"left":')
    o.int(g.left)


class Session(core.Link):
    DEVICE = "shoe"
    COMMANDS = schema.COMMANDS
    ACTIONS = ACTIONS
    RECOVERY = recovery
    eager = False  # a card is being played: its events are sent as they are made

    def __init__(self, board, config, journal, outbox=None):
        # The link's own attributes and buffers first: the session's
        # attribute table grows in steps to its largest block (about 750
        # bytes in the 64-bit VM), which must find its hole in the room
        # main.py frees for the session before the games scatter theirs.
        self.game = None
        core.Link.__init__(self, board, config, journal, outbox)
        self.game = _game.Game(self._emit)
        # The refill's replay target (link/recovery.py), made now with the
        # session: its event buffer is one of the largest blocks the shoe uses.
        self.scratch = _game.Game(self._scratch_emit)
        self.filler = None      # where the scratch game's events go during a refill
        self.shoe_values = (8, _game.STANDARD, _game.EXPOSED_SIMULATED, BATCH_A)
        # The card-set checks (cardset.intake), when the shoe has a reader:
        # the journal records which physical card left, so that a duplicate
        # is still caught after a power cut.
        # The real-time check (cardset/ordercheck.py) is the intake's
        # ``check``: no attribute of its own here (this table is at a step
        # of its growth, whose next block found no hole at boot).
        self.intake = None

    # ------------------------------------------------------------- link hooks

    def recovered(self):
        self.had_shoe = self.game.phase != _game.NO_SHOE

    def round_now(self):
        return self.game.round


    def checkpoint_due(self):
        """Every CHECKPOINT_EVERY events, and at each shoe's end."""
        has_shoe = self.game.phase != _game.NO_SHOE
        due = (self.had_shoe and not has_shoe) or self.seq - self.last_checkpoint >= proto.CHECKPOINT_EVERY
        self.had_shoe = has_shoe
        return due

    def reset_device(self):
        self.game = _game.Game(self._emit)
        self.settings = ""
        self.had_shoe = False

    def status(self):
        reports.status(self, _game_status)

    def refusal(self, name, args):
        """A pit command the shoe would not act on is refused with the game's
        own reason (baccarat/game.py), before it is accepted: the pit shows
        "no more bets: no card set loaded", never a command that seemed done."""
        g = self.game
        why = None
        if name == "bets":
            why = g.bets_refusal()
        elif name == "exposed":
            why = g.exposed_refusal()
        elif name == "clear_stop":
            why = g.clear_stop_refusal()
        elif name == "shoe":
            why = g.new_shoe_refusal(args["decks"])
            if why is None and self.intake is not None and not g.stopped:
                why = self.intake.batch_refusal(args["batch"])
        elif name == "sensor" or name == "secure" or name == "sign":
            import sys
            if "probes" not in sys.modules and g.phase != _game.NO_SHOE:
                return "%s: a bench question, taken only while no shoe is in play" % name
        elif name == "order" and (self.intake is None or self.intake.check is None):
            return "order: this shoe has no card reader to check an order with"
        if why is None or isinstance(why, str):
            return why
        return why.decode()

    def _emit(self, buf, n):
        core.Link._emit(self, buf, n)
        if self.eager:
            # A card's event leaves as it is made, before the game works out
            # the result it completes (docs/cost_model.md), not a pass later.
            self.flush(self.board.ticks_ms())

    def _scratch_emit(self, buf, n):
        f = self.filler
        if f is not None:
            f.emit(buf, n)

    # ------------------------------------------------------------- inputs

    def _playable(self, what):
        if self.tilt is None and self.halt is None:
            return True
        self._error("tilted", "%s ignored: the shoe is tilted (%s); play is blocked until clear_tilt"
                    % (what, self.tilt or self.halt))
        return False

    def new_shoe(self, decks=8, designation=_game.STANDARD, exposed=_game.EXPOSED_SIMULATED,
                 batch=BATCH_A, set_name="", set_digest="", named=""):
        if not self._playable("new shoe"):
            return
        if self.game.stopped:
            # The game refuses it (the cold-deck stop, baccarat/game.py). Not journaled as
            # an input: a new shoe compacts the journal, which would drop the
            # cards that raised the stop; the refusal is kept as it was sent.
            self.capture = True
            self.game.new_shoe(decks, designation, exposed, batch)
            self.capture = False
            return
        if self.intake is not None:
            # A batch the loaded card set does not hold cannot be dealt.
            why = self.intake.batch_refusal(batch)
            if why is not None:
                self._error("wrong_state", why, "shoe")
                return
            self.intake.new_shoe(batch)
        self.settings = settings.settings_text(decks, _game.DESIGNATIONS[designation],
                                               _game.EXPOSED_MODES[exposed], set_name, set_digest,
                                               settings.BATCHES[batch - 1])
        self.shoe_values = (decks, designation, exposed, batch)
        # Armed (or not) before the record is written: the shoe event says
        # which order checks this shoe, or that none does on a paired shoe
        # (cardset/ordercheck.py), and a replay must say it again.
        checked = b""
        if self.intake is not None and self.intake.check is not None:
            checked = self.intake.check.arm(self, batch, named)
        body = _journal.shoe_body(decks, designation, exposed, batch, self.settings)
        if checked:
            body = self.intake.check.journaled(body, checked)
        j = self.journal
        j.blob(_journal.NEW_SHOE, body, 0, len(body))
        self.game.new_shoe(decks, designation, exposed, batch, checked)
        if not self.spilled and not self.tag_stale:
            # A new shoe resets the game, so nothing before it is needed to
            # rebuild the state: only the unacked events carry over, and
            # they are all in memory. Start a short journal.
            j.compact(self.acked, self.acked, self.counter, self.acked_tag, self.outbox.events(), body)
            self.journaled_ack = self.acked
            self.last_checkpoint = min(self.last_checkpoint, self.acked)

    def bets(self):
        if self._playable("no more bets"):
            self.journal.simple(_journal.BETS)
            self.game.bets()

    def card(self, c, up=False):
        if self._playable("card"):
            ident = self.intake.taking if self.intake is not None else -1
            self.journal.card(c, up, ident)
            self.game.deck_of = self.intake.registry.deck(ident) if ident >= 0 else 0
            self.eager = True
            try:
                self.game.card(c, up)
            finally:
                self.eager = False
            if ident >= 0 and self.game.phase == _game.NO_SHOE and self.intake.check is not None:
                self.intake.check.end()  # the shoe is spent: its order is wiped from RAM

    def mismatch(self, m):
        """The real-time check (cardset/ordercheck.py) found a card that is
        not the order's: ``m`` says which (baccarat/events.py
        MISMATCH_BYTES). Journaled as a game input: the stop is replayed."""
        if self._playable("card"):
            self.journal.blob(_journal.ORDER_STOP, m, 0, _events.MISMATCH_BYTES)
            self.game.mismatch(m)

    def cover(self):
        if self._playable("cover card"):
            self.journal.simple(_journal.COVER)
            self.game.cover()

    def exposed(self):
        if self._playable("exposed card"):
            self.journal.simple(_journal.EXPOSED)
            self.game.exposed()

    def empty(self):
        if self._playable("empty sensor"):
            self.journal.simple(_journal.EMPTY)
            self.game.empty()
            if self.intake is not None and self.game.phase == _game.NO_SHOE and self.intake.check is not None:
                self.intake.check.end()

    def alert(self, rule, c=-1, detail=None):
        # An alert never changes the game, so its event is journaled as is.
        self.capture = True
        self.game.alert(rule, c, detail)
        self.capture = False

    def error(self, message):
        self.capture = True
        self.game.error(message)
        self.capture = False

