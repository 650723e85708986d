"""Reading a device's journal back: at boot, and when events that did not
fit the outbox are brought back into it (a refill). Device-agnostic: the
link's own records (literal events, checkpoints, the base of a compacted
journal, acks, spent counters) are handled here; a device whose state is
rebuilt from journaled inputs (the shoe's game, link/recovery.py)
subclasses ``Replay`` and takes the other records in ``other``.

Record layouts are read through link/journal.py's field readers, beside the
writers, so they are stated once. The marker check that catches a lost or
cut-back journal is here too.

A refill happens while the device works (the host acked slowly, or the link
was down), so this module stays loaded from boot on and a refill allocates
only two small objects: loading code or making large blocks then, in a heap
of small holes, could fail.
"""

from link import auth, proto
from link import journal as _journal
from link import reports
from link.journal import get_u32


class Replay:
    """Journal records -> events. ``emit(buf, n)`` receives every event the
    records rebuild. ``boot`` restores the session's own counters too;
    otherwise (a refill) only the events are wanted, and ``on_base``/``on_ack``
    tell the filler where the tag chain is known."""

    def __init__(self, session, emit, boot, on_base, on_ack=None):
        self.s = session
        self.emit = emit
        self.boot = boot
        self.on_base = on_base
        self.on_ack = on_ack
        self.n = 0

    def record(self, kind, body, blen):
        s = self.s
        self.n += 1
        if not self.n & 63:
            s.board.feed()  # a long journal must not starve the watchdog
        if self.other(kind, body, blen):
            return
        if kind == _journal.EVENT:
            self.emit(body, blen)
        elif kind == _journal.SIGNED:
            self.emit(body, blen)
            if self.boot:
                s.last_checkpoint = s.seq  # the checkpoint's own seq: through + 1
                counter = reports.counter_of(body, blen)
                if counter >= 0:  # the value it spent settles the intent (Journal.checkpoint)
                    s.journal.chip = counter
                    s.journal.intent = False
        elif kind == _journal.CHECKPOINT:
            through = get_u32(body, 0)
            reports.checkpoint(s.out, through)
            self.emit(s.out.buf, s.out.n)
            if self.boot:
                s.last_checkpoint = through + 1
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
        elif self.boot and (kind == _journal.CHIP or kind == _journal.INTENT):
            s.journal.chip = get_u32(body, 0)
            s.journal.intent = kind == _journal.INTENT

    def other(self, kind, body, blen):
        """A record of the device's own (an input): True when taken."""
        return False


def scan(s, replay):
    """Replay the journal with ``replay``; return (status, message, sound
    bytes, why records were lost or None)."""
    status, message, good = s.journal.scan(replay, True)
    return status, message, good, loss(s.journal, good)


def boot(s):
    """The boot replay of a device whose events are all literal."""
    return scan(s, Replay(s, s._emit, True, s.base))


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
    if not j.exists():
        return "journal deleted: the marker says generation %d, %d bytes" % (gen, length)
    if good_bytes == 0 and length > 0:
        return "journal emptied: the marker says generation %d, %d bytes" % (gen, length)
    if j.found_gen < gen:
        return "journal rolled back: generation %d on flash, the marker says %d" % (j.found_gen, gen)
    if j.found_gen == gen and good_bytes < length:
        return "journal truncated: %d sound bytes, the marker says %d" % (good_bytes, length)
    return None


class Filler:
    """A refill's events, signed in order from the last point where the
    journal knows the chain, with those after ``after`` put back in the
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


def _literal(s, filler):
    return Replay(s, filler.emit, False, filler.base, filler.ack)


def refill(s, into=_literal):
    """Replay the journal to bring events that did not fit in the outbox
    back into it; ``into(s, filler)`` gives the Replay whose events go to the
    filler (the shoe's replays into its scratch game, link/recovery.py)."""
    box = s.outbox
    want = box.last_seq() if box.count else s.acked
    filler = Filler(s, want)
    s.journal.scan(into(s, filler))
    if filler.seq_done >= s.seq:
        s.spilled = False
    if s.tilt is not None and not s.tilt_from and not filler.full:
        from link import tilt  # the journal failed while events waited in it
        tilt.refill(s, filler.seq)
