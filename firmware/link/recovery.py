"""Rebuilding the shoe from its journal: at boot, and when events that did
not fit the outbox are brought back into it.

The core is deterministic, so replaying the journal's inputs into a fresh
Game rebuilds the round, the seq counter and every unacked event byte for
byte (docs/protocol.md 8). Record layouts are read through link/journal.py's
field readers, beside the writers, so they are stated once. The marker check
that catches a lost or cut-back journal is here too.

A refill happens during play (the host acked slowly, or the link was down
while cards were dealt), so this module stays loaded from boot on and the
refill replays into the session's preallocated scratch game: loading code or
making a game then, in a heap of small holes, could fail mid-shoe.
"""

from baccarat import game as _game
from link import auth, proto
from link import journal as _journal
from link import reports
from link.journal import get_u32


class Replay:
    """Journal records -> game inputs. ``boot`` restores the session's own
    counters too; otherwise (a refill) only the events are wanted, and
    ``on_base``/``on_ack`` tell the filler where the tag chain is known."""

    def __init__(self, session, game, boot, on_base, on_ack=None):
        self.s = session
        self.game = game
        self.boot = boot
        self.on_base = on_base
        self.on_ack = on_ack
        self.n = 0

    def record(self, kind, body, blen):
        g = self.game
        s = self.s
        self.n += 1
        if not self.n & 63:
            s.board.feed()  # a long journal must not starve the watchdog
        if kind == _journal.CARD:
            c, up, ident = _journal.card_fields(body, blen)
            if ident >= 0 and s.intake is not None:
                s.intake.mark(ident)  # this physical card has left the shoe
            g.card(c, up)
        elif kind == _journal.BETS:
            g.bets()
        elif kind == _journal.COVER:
            g.cover()
        elif kind == _journal.EXPOSED:
            g.exposed()
        elif kind == _journal.EMPTY:
            g.empty()
        elif kind == _journal.EVENT:
            g.emit(body, blen)
        elif kind == _journal.CHECKPOINT:
            through = get_u32(body, 0)
            reports.checkpoint(s.out, through)
            g.emit(s.out.buf, s.out.n)
            if self.boot:
                s.last_checkpoint = through + 1
        elif kind == _journal.NEW_SHOE or kind == _journal.QUIET_SHOE:
            decks, designation, exposed, batch, settings = _journal.shoe_fields(body, blen)
            if self.boot:
                s.settings = settings
                s.shoe_values = (decks, designation, exposed, batch)
            if s.intake is not None:
                s.intake.new_shoe(batch)
            # A compacted journal's shoe record follows its events as literals,
            # so replaying it must not emit them a second time.
            s.mute = kind == _journal.QUIET_SHOE
            g.new_shoe(decks, designation, exposed, batch)
            s.mute = False
        elif kind == _journal.BASE:
            seq, acked, counter = _journal.base_fields(body)
            self.on_base(seq, body, 12)
            if self.boot:
                s.restore_ack(acked, body, 12)
                s.journaled_ack = acked
                s.counter = counter
        elif kind == _journal.ACK:
            seq = get_u32(body, 0)
            if self.boot:
                s.restore_ack(seq, body, 4)
                s.journaled_ack = seq
            elif self.on_ack is not None:
                self.on_ack(seq, body, 4)
        elif self.boot and kind == _journal.COUNTER:
            s.counter = get_u32(body, 0)


def boot(s):
    """Replay the journal into the session's game; return (status, message,
    sound bytes, why records were lost or None)."""
    status, message, good = s.journal.scan(Replay(s, s.game, True, s.base))
    return status, message, good, loss(s.journal, good)


def read_mark(j):
    """(gen, length, counter) from the marker, None when there is none, or
    a message when it is damaged."""
    if not _journal.exists(j.mark_path):
        return None
    with open(j.mark_path, "rb") as f:
        raw = f.read(_journal.MARK_BYTES)
    size = _journal.MARK_BYTES
    if len(raw) != size or raw[:2] != _journal.MARK_MAGIC or \
            _journal.crc16(raw, 0, size - 2) != (raw[size - 2] << 8) | raw[size - 1]:
        return "journal marker %s is damaged (%d bytes)" % (j.mark_path, len(raw))
    return get_u32(raw, 2), get_u32(raw, 6), get_u32(raw, 10)


def loss(j, good_bytes):
    """Why the journal on flash has lost records, or None (see the module
    docstring). Also adopts the marker's counter and generation."""
    mark = read_mark(j)
    if mark is None:
        return None  # a first boot, or a power cut before the first marker
    if isinstance(mark, str):
        return mark
    gen, length, counter = mark
    j.counter = counter
    j.gen = gen
    j.size = length
    if not _journal.exists(j.path):
        return "journal deleted: the marker says generation %d, %d bytes" % (gen, length)
    if good_bytes == 0 and length > 0:
        return "journal emptied: the marker says generation %d, %d bytes" % (gen, length)
    if j.found_gen < gen:
        return "journal rolled back: generation %d on flash, the marker says %d" % (j.found_gen, gen)
    if j.found_gen == gen and good_bytes < length:
        return "journal truncated: %d sound bytes, the marker says %d" % (good_bytes, length)
    return None


class _Filler:
    """A scratch replay's events, signed in order from the last point where
    the journal knows the chain, with those after ``after`` put back in the
    outbox. It also recovers the tag of the acked event when the host acked
    beyond what was in memory (after a power cut)."""

    def __init__(self, session, after):
        self.s = session
        self.after = after
        self.seq = 0
        self.seq_done = after
        self.full = False
        self.chain = bytearray(auth.ZERO_MAC)
        self.known = 0  # the chain's tag is known up to this seq

    def _take(self, seq, body, at):
        self.seq = seq
        self.known = seq
        for i in range(proto.MAC_HEX):
            self.chain[i] = body[at + i]

    def base(self, seq, body, at):
        self._take(seq, body, at)

    def ack(self, seq, body, at):
        if seq >= self.known and seq == self.seq:
            self._take(seq, body, at)

    def emit(self, buf, n):
        s = self.s
        if s.mute:
            return
        self.seq += 1
        seq = self.seq
        if seq == self.known + 1:
            s.signer.sign_into(proto.EVENT, seq, self.chain, 0, proto.MAC_HEX, buf, 0, n, self.chain, 0)
            self.known = seq
        if seq == s.acked and self.known == seq:
            s.set_acked_tag(self.chain, 0)
        if seq <= self.after or self.full or seq <= s.acked:
            return
        if self.known == seq and s.outbox.push(seq, buf, n):
            box = s.outbox
            at = box.slot(seq) * proto.MAC_HEX
            for i in range(proto.MAC_HEX):
                box.tags[at + i] = self.chain[i]
                s.chain_tag[i] = self.chain[i]
            s.signed = seq
            self.seq_done = seq
        else:
            self.full = True


def _fresh(g):
    """Bring the reused scratch game back to a new game's state: no card set
    loaded and nothing of the last shoe (the core's own reset of a shoe). The
    shoe settings it keeps are written by the next shoe record before any
    input reads them."""
    g.phase = _game.NO_SHOE
    g._clear_shoe()


def refill(s):
    """Replay the journal into the session's scratch game to bring events
    that did not fit in the outbox back into it."""
    box = s.outbox
    want = box.last_seq() if box.count else s.acked
    filler = _Filler(s, want)
    scratch = s.scratch
    _fresh(scratch)
    s.filler = filler
    try:
        s.journal.scan(Replay(s, scratch, False, filler.base, filler.ack))
    finally:
        s.filler = None
    if filler.seq_done >= s.seq:
        s.spilled = False
