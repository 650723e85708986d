"""The shoe's end of the link: handshake, numbered events retransmitted until
acknowledged, authenticated commands, heartbeats, link state, and the
power-loss journal that makes all of it survive a power cut.

Every input reaches the game through this object (it has the game's input
methods, so ``baccarat.script.feed_line`` and ``cardset.intake.Intake`` can
drive it), and each is journaled before the game sees it. Every event the
game emits gets the next sequence number and waits in a bounded outbox until
the host acks it. Because the game is deterministic, replaying the journal
at boot rebuilds the round, the sequence counter and the unacked events
byte for byte (docs/protocol.md 7, 8).
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from array import array

from baccarat import cards
from baccarat import game as _game
from baccarat import script
from baccarat.jsonout import JsonOut
from link import commands, frame
from link import journal as _journal
from link.journal import get_u32

PROTO = const(1)
HEARTBEAT_MS = const(1000)
DOWN_MS = const(3000)
RETRANSMIT_MS = const(700)
WINDOW = const(16)
SEND_BUDGET = const(4)  # event frames per step, so one step stays short
OUTBOX_BYTES = const(8192)
OUTBOX_SLOTS = const(64)
READ_SIZE = const(256)
BAD_FRAME_MS = const(1000)  # at most one bad-frame report per second
# Commands a tilted shoe still takes: they inspect or repair, never play.
_TILT_COMMANDS = ("status", "time", "clear_tilt")
_PHASES = ("no_shoe", "burning", "open", "dealing", "discarding")
# Card-set batches, as cardset.registry numbers them (not imported: a shoe
# without a reader should not pay the heap for the registry module).
BATCH_A = const(1)
BATCH_B = const(2)


class Outbox:
    """Unacked events, oldest first, in one fixed byte ring (no per-event objects).

    Events are stored whole (never split at the ring's end) so each can be
    framed straight from the ring. When it is full, newer events stay only in
    the journal and are replayed into it later (Session._refill).
    """

    def __init__(self, nbytes=OUTBOX_BYTES, slots=OUTBOX_SLOTS):
        self.data = bytearray(nbytes)
        self.off = array("H", bytes(2 * slots))
        self.len = array("H", bytes(2 * slots))
        self.slots = slots
        self.head = 0
        self.count = 0
        self.first_seq = 1

    def clear(self):
        self.count = 0
        self.head = 0

    def last_seq(self):
        return self.first_seq + self.count - 1

    def slot(self, seq):
        return (self.head + seq - self.first_seq) % self.slots

    def push(self, seq, buf, n):
        """Append event ``seq``; False when there is no room (nothing changes)."""
        data = self.data
        if self.count == 0:
            if n > len(data):
                return False
            self.head = 0
            self.first_seq = seq
            at = 0
        else:
            if self.count == self.slots:
                return False
            h = self.off[self.head]
            last = (self.head + self.count - 1) % self.slots
            tail = self.off[last] + self.len[last]
            if self.off[last] >= h:  # used bytes are [h, tail)
                if len(data) - tail >= n:
                    at = tail
                elif h >= n:
                    at = 0
                else:
                    return False
            elif h - tail >= n:  # used bytes wrap: [h, end) and [0, tail)
                at = tail
            else:
                return False
        for i in range(n):
            data[at + i] = buf[i]
        s = (self.head + self.count) % self.slots
        self.off[s] = at
        self.len[s] = n
        self.count += 1
        return True

    def drop_through(self, seq):
        while self.count and self.first_seq <= seq:
            self.head = (self.head + 1) % self.slots
            self.count -= 1
            self.first_seq += 1
        if self.count == 0:
            self.first_seq = seq + 1


class _Replay:
    """Journal records -> game inputs. ``boot`` restores the session's own
    counters too; otherwise (a refill) only the events are wanted."""

    def __init__(self, session, game, boot, on_base):
        self.s = session
        self.game = game
        self.boot = boot
        self.on_base = on_base
        self.n = 0

    def record(self, kind, body, blen):
        g = self.game
        s = self.s
        self.n += 1
        if not self.n & 63:
            s.board.feed()  # a long journal must not starve the watchdog
        if kind == _journal.CARD:
            ident = ((body[2] << 8) | body[3]) - 1 if blen >= 4 else -1
            if ident >= 0 and s.intake is not None:
                s.intake.mark(ident)  # this physical card has left the shoe
            g.card(body[0], body[1] != 0)
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
        elif kind == _journal.NEW_SHOE or kind == _journal.QUIET_SHOE:
            if self.boot:
                s.settings = bytes(body[4:blen]).decode()
                s.shoe_values = (body[0], body[1], body[2], body[3])
            if s.intake is not None:
                s.intake.new_shoe(body[3])
            # A compacted journal's shoe record follows its events as literals,
            # so replaying it must not emit them a second time.
            s.mute = kind == _journal.QUIET_SHOE
            g.new_shoe(body[0], body[1], body[2])
            s.mute = False
        elif kind == _journal.BASE:
            self.on_base(get_u32(body, 0))
            if self.boot:
                s.acked = get_u32(body, 4)
                s.journaled_ack = s.acked
                s.counter = get_u32(body, 8)
        elif self.boot and kind == _journal.ACK:
            s.acked_to(get_u32(body, 0))
            s.journaled_ack = s.acked
        elif self.boot and kind == _journal.COUNTER:
            s.counter = get_u32(body, 0)


def _hand(o, hand, n):
    o.byte(0x5B)
    for i in range(n):
        if i:
            o.byte(0x2C)
        o.text(cards.name(hand[i]))
    o.byte(0x5D)


class _ShoeArgs:
    """Stands in for the game while a ``shoe`` command's settings are checked,
    so the one parser in baccarat.script validates them before anything runs."""

    def new_shoe(self, decks, designation, exposed):
        self.values = (decks, designation, exposed)


class Session:
    def __init__(self, board, config, journal):
        self.board = board
        self.shoe_id = config.SHOE_ID
        self.board_name = config.BOARD
        self.fw = config.FIRMWARE_VERSION
        self.key = board.key()
        self.journal = journal
        self.outbox = Outbox()
        self.rx = bytearray(READ_SIZE)
        self.tx = bytearray(frame.MAX_FRAME)
        self.out = JsonOut(frame.MAX_PAYLOAD)
        self.decoder = frame.Decoder()
        self.game = _game.Game(self._emit)
        self.seq = 0            # last event seq assigned
        self.acked = 0          # highest seq the host acked
        self.journaled_ack = 0  # the ack the journal knows (it may lag; duplicates are harmless)
        self.counter = 0        # last accepted command counter
        self.last_command = b""
        self.settings = ""
        self.shoe_values = (8, _game.STANDARD, _game.EXPOSED_SIMULATED, BATCH_A)
        # The card-set checks (cardset.intake), when the shoe has a reader:
        # the journal records which physical card left, so that a duplicate
        # is still caught after a power cut.
        self.intake = None
        self.tilt = None        # persisted tilt reason (corrupt journal)
        self.tilt_from = 0      # seq of the first event made while tilted
        self.synced = False     # a tilted shoe has heard the host's ack since boot
        self.halt = None        # boot self-test failure: nothing but hellos
        self.spilled = False    # events newer than the outbox exist only in the journal
        self.mute = False
        self.capture = False    # journal the next emission as a literal event
        self.next_send = 1
        self.up = False
        self.ever_up = False
        now = board.ticks_ms()
        self.last_rx = now
        self.last_tx = now
        self.progress = now
        self.down_at = now
        self.ack_written = now
        self.time_t = -1
        self.time_ticks = 0
        self.bad_at = None      # when the last bad frame was reported
        self.bad_skipped = 0

    # ------------------------------------------------------------- boot

    def boot(self, selftest_error=None):
        """Recover from the journal, then say hello: the first frame ever sent."""
        j = self.journal
        if selftest_error is not None:
            self.halt = selftest_error
            self._hello()
            return
        marker = j.tilt_reason()
        status, message, good = j.scan(_Replay(self, self.game, True, self.base))
        if status == _journal.CORRUPT and marker is None:
            marker = "corrupt journal: " + message
            j.set_tilt(marker)
        self.next_send = self.acked + 1
        if marker is not None:
            self.tilt_from = self.seq + 1
            self._tilt(marker)
        else:
            j.open(good)
            o = self._link_begin(b"boot")
            o.raw(b',"fw":')
            o.text(self.fw)
            o.raw(b',"resumed":')
            o.bool(self.seq > 0)
            o.raw(b',"torn":')
            o.bool(status == _journal.TORN)
            o.raw(b',"round":')
            o.int(self.game.round)
            self._link_send()
        self._hello()

    def _tilt(self, reason):
        self.tilt = reason
        o = self._link_begin(b"tilt")
        o.raw(b',"reason":')
        o.text(reason)
        self._link_send()

    def base(self, seq):
        """A compacted journal starts here: events up to ``seq`` are acked and gone."""
        self.seq = seq
        self.outbox.clear()
        self.outbox.first_seq = seq + 1
        self.spilled = False

    # ------------------------------------------------------------- events

    def _emit(self, buf, n):
        """Every event, from the game or the link, passes here exactly once."""
        if self.mute:
            return
        if self.capture:
            self.capture = False
            if self.tilt is None and self.journal.f is not None:
                self.journal.blob(_journal.EVENT, buf, 0, n)
        self.seq += 1
        if self.seq > self.acked and not self.spilled:
            if not self.outbox.push(self.seq, buf, n):
                self.spilled = True

    def _link_begin(self, kind):
        o = self.out
        o.reset()
        o.raw(b'{"type":"')
        o.raw(kind)
        o.raw(b'","source":"link"')
        return o

    def _link_send(self):
        o = self.out
        o.byte(0x7D)
        # Link events are not functions of the game's inputs, so the journal
        # keeps them literally (while tilted the journal is not written).
        if self.tilt is None and self.journal.f is not None:
            self.journal.blob(_journal.EVENT, o.buf, 0, o.n)
        self._emit(o.buf, o.n)

    def _error(self, reason, message, name=None, counter=-1):
        o = self._link_begin(b"error")
        o.raw(b',"reason":')
        o.text(reason)
        if name is not None:
            o.raw(b',"command":')
            o.text(name)
        if counter >= 0:
            o.raw(b',"counter":')
            o.int(counter)
        o.raw(b',"message":')
        o.text(message)
        self._link_send()

    def acked_to(self, seq):
        if seq <= self.acked:
            return
        self.acked = seq
        self.outbox.drop_through(seq)
        if self.acked >= self.seq:
            self.spilled = False
            self.outbox.clear()
            self.outbox.first_seq = self.seq + 1
        if self.next_send <= seq:
            self.next_send = seq + 1

    def _renumber(self, base):
        """Give the events in the outbox the seqs after ``base``."""
        self.outbox.first_seq = base + 1
        self.seq = base + self.outbox.count
        self.acked = base
        self.next_send = base + 1

    # ------------------------------------------------------------- inputs

    def _playable(self, what):
        if self.tilt is None and self.halt is None:
            return True
        self._error("tilted", "%s ignored: the shoe is tilted (%s); play is blocked until clear_tilt"
                    % (what, self.tilt or self.halt))
        return False

    def new_shoe(self, decks=8, designation=_game.STANDARD, exposed=_game.EXPOSED_SIMULATED,
                 set_name="", set_digest="", batch=BATCH_A):
        if not self._playable("new shoe"):
            return
        if self.intake is not None:
            # A batch the loaded card set does not hold cannot be dealt.
            try:
                self.intake.new_shoe(batch)
            except ValueError as e:
                self._error("wrong_state", "new shoe refused: %s" % e, "shoe")
                return
        self.settings = commands.settings_text(decks, _game.DESIGNATIONS[designation],
                                               _game.EXPOSED_MODES[exposed], set_name, set_digest,
                                               "AB"[batch - 1])
        self.shoe_values = (decks, designation, exposed, batch)
        body = bytes((decks, designation, exposed, batch)) + self.settings.encode()
        j = self.journal
        j.blob(_journal.NEW_SHOE, body, 0, len(body))
        self.game.new_shoe(decks, designation, exposed)
        if not self.spilled:
            # A new shoe resets the game, so nothing before it is needed to
            # rebuild the state: only the unacked events carry over, and
            # they are all in memory. Start a short journal.
            j.compact(self.acked, self.acked, self.counter, self._unacked(), body)
            self.journaled_ack = self.acked

    def _unacked(self):
        """The outbox's events as (buffer, start, end), oldest first."""
        box = self.outbox
        events = []
        for i in range(box.count):
            s = (box.head + i) % box.slots
            off = box.off[s]
            events.append((box.data, off, off + box.len[s]))
        return events

    def bets(self):
        if self._playable("no more bets"):
            self.journal.simple(_journal.BETS)
            self.game.bets()

    def card(self, c, up=False):
        if self._playable("card"):
            ident = self.intake.taking if self.intake is not None else -1
            self.journal.card(c, up, ident)
            self.game.card(c, up)

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

    def alert(self, rule, c=-1, detail=None):
        # An alert never changes the game, so its event is journaled as is.
        self.capture = True
        self.game.alert(rule, c, detail)
        self.capture = False

    def error(self, message):
        self.capture = True
        self.game.error(message)
        self.capture = False

    # ------------------------------------------------------------- link in

    def on_bad(self, decoder, code, message):
        # A noisy line (or a wrong baud rate) can garble many frames a second;
        # each report is a journal write, so at most one a second is made and
        # the next one says how many were left out. Commands and acks in bad
        # frames are simply resent by the host.
        now = self.board.ticks_ms()
        if self.bad_at is not None and self.board.ticks_diff(now, self.bad_at) < BAD_FRAME_MS:
            self.bad_skipped += 1
            return
        self.bad_at = now
        reason = "bad_crc" if code == frame.BAD_CRC else "bad_frame"
        if self.bad_skipped:
            message = "%s (and %d more bad frames not reported)" % (message, self.bad_skipped)
            self.bad_skipped = 0
        self._error(reason, message)

    def on_frame(self, d):
        now = self.board.ticks_ms()
        self.last_rx = now
        kind = d.kind
        if not self.up:
            self.up = True
            o = self._link_begin(b"link_up")
            o.raw(b',"down_ms":')
            o.int(self.board.ticks_diff(now, self.down_at) if self.ever_up else -1)
            self._link_send()
            self.ever_up = True
            self._restart_delivery()
        elif kind == 0x48:  # H: the host (re)opened the line
            self._restart_delivery()
        if kind == 0x42 or kind == 0x48:  # B, H
            return
        seq = d.seq
        payload = bytes(d.buf[d.pstart:d.pend])
        try:
            if kind == 0x41:  # A
                commands.verify(self.key, self.shoe_id, "A", seq, payload)
                self._ack(seq)
            elif kind == 0x43:  # C
                self._command(seq, payload)
            else:
                raise commands.Rejected("unknown_frame", "frame type %s is not one a host sends (A, C, H, B)"
                                        % chr(kind))
        except commands.Rejected as r:
            self._error(r.reason, r.message, r.name, seq if kind == 0x43 else -1)

    def _restart_delivery(self):
        self._hello()
        self.next_send = self.acked + 1
        self.progress = self.board.ticks_ms()

    def _ack(self, seq):
        if self.tilt is not None and not self.synced:
            # A tilted shoe's seq ends where its journal turned bad, but the
            # store may hold events from beyond that point. The store is the
            # authority: the first ack after boot places the events made
            # since boot after what it holds, so none is dropped as a duplicate.
            self.synced = True
            if seq >= self.tilt_from:
                self.outbox.drop_through(self.tilt_from - 1)
                self._renumber(seq)
                return
        if seq > self.seq:
            raise commands.Rejected("bad_ack", "ack %d is above the last event sent, %d" % (seq, self.seq))
        if seq > self.acked:
            self.acked_to(seq)
            self.progress = self.board.ticks_ms()

    def _command(self, counter, payload):
        body = commands.verify(self.key, self.shoe_id, "C", counter, payload)
        if counter <= self.counter:
            if counter == self.counter and payload == self.last_command:
                return  # a resend of the last command: its outcome is already queued
            raise commands.Rejected("replayed", "counter %d is not above the last accepted counter %d"
                                    % (counter, self.counter), body.split(b" ", 1)[0].decode())
        # The counter is spent before anything else: an authentic command is
        # never accepted twice, even if the power fails right after this.
        self.counter = counter
        self.last_command = payload
        if self.tilt is None and self.halt is None:
            self.journal.number(_journal.COUNTER, counter)
        name, args = commands.parse(body)
        if (self.tilt is not None or self.halt is not None) and name not in _TILT_COMMANDS:
            raise commands.Rejected("wrong_state", "%s: the shoe is tilted (%s); it takes only %s"
                                    % (name, self.tilt or self.halt, ", ".join(_TILT_COMMANDS)), name)
        shoe = None
        if name == "shoe":
            words = ["shoe"]
            for key in ("decks", "designation", "exposed"):
                if key in args:
                    words.append(key + "=" + args[key])
            shoe = _ShoeArgs()
            problem = script.feed_line(shoe, " ".join(words))
            if problem is not None:
                raise commands.Rejected("malformed", problem, name)
            batch = args.get("batch", "A")
            if batch not in ("A", "B"):
                raise commands.Rejected("malformed", "shoe: batch must be A or B, got %r" % batch, name)
        elif name == "time":
            t = commands.number(name, args, "t", 0, 4102444800)
        elif name == "clear_tilt":
            if self.tilt is None:
                raise commands.Rejected("wrong_state", "clear_tilt: the shoe is not tilted", name)
            if self.halt is not None:
                raise commands.Rejected("wrong_state", "clear_tilt: the boot self-test failed (%s); "
                                        "a technician must reflash the firmware" % self.halt, name)
            host_seq = commands.number(name, args, "seq", 0, 0x7FFFFFFF) if "seq" in args else 0
        o = self._link_begin(b"accepted")
        o.raw(b',"command":')
        o.text(name)
        o.raw(b',"counter":')
        o.int(counter)
        self._link_send()
        if name == "bets":
            self.bets()
        elif name == "exposed":
            self.exposed()
        elif name == "shoe":
            d, des, exp = shoe.values
            self.new_shoe(d, des, exp, args.get("set", ""), args.get("setdigest", ""),
                          BATCH_A if batch == "A" else BATCH_B)
        elif name == "status":
            self._status()
        elif name == "time":
            self.time_t = t
            self.time_ticks = self.board.ticks_ms()
            o = self._link_begin(b"time")
            o.raw(b',"t":')
            o.int(t)
            self._link_send()
        else:
            self._clear_tilt(host_seq)

    def _clear_tilt(self, host_seq):
        lost_from = self.tilt_from
        if host_seq > self.seq:
            self._renumber(host_seq)
        self.journal.clear_tilt()
        self.tilt = None
        self.game = _game.Game(self._emit)
        self.settings = ""
        self.journal.compact(self.acked, self.acked, self.counter, self._unacked())
        self.journaled_ack = self.acked
        o = self._link_begin(b"tilt_cleared")
        o.raw(b',"counter":')
        o.int(self.counter)
        o.raw(b',"lost_from":')
        o.int(lost_from)
        self._link_send()

    # ------------------------------------------------------------- reports

    def _hello(self):
        o = self.out
        o.reset()
        o.raw(b'{"proto":')
        o.int(PROTO)
        o.raw(b',"fw":')
        o.text(self.fw)
        o.raw(b',"board":')
        o.text(self.board_name)
        o.raw(b',"shoe":')
        o.text(self.shoe_id)
        o.raw(b',"settings":')
        o.text(commands.settings_digest(self.settings))
        o.raw(b',"seq":')
        o.int(self.seq)
        o.raw(b',"acked":')
        o.int(self.acked)
        o.raw(b',"counter":')
        o.int(self.counter)
        o.raw(b',"tilt":')
        if self.tilt is None and self.halt is None:
            o.raw(b"null")
        else:
            o.text(self.tilt or self.halt)
        o.byte(0x7D)
        self._send(0x48, self.seq, o.buf, 0, o.n)

    def _status(self):
        g = self.game
        o = self._link_begin(b"status")
        o.raw(b',"round":')
        o.int(g.round)
        o.raw(b',"phase":')
        o.text(_PHASES[g.phase])
        due = g.next_due()
        o.raw(b',"next":')
        if due < 0:
            o.raw(b"null")
        else:
            o.byte(0x22)
            o.raw(_game.POS_NAMES[due])
            o.byte(0x22)
        o.raw(b',"player":')
        _hand(o, g.player, g.np)
        o.raw(b',"banker":')
        _hand(o, g.banker, g.nb)
        o.raw(b',"held":')
        _hand(o, g.held, g.n_held)
        o.raw(b',"left":')
        o.int(g.left)
        o.raw(b',"settings":')
        o.text(self.settings)
        o.raw(b',"seq":')
        o.int(self.seq + 1)  # this event's own seq
        o.raw(b',"acked":')
        o.int(self.acked)
        o.raw(b',"counter":')
        o.int(self.counter)
        o.raw(b',"tilt":')
        if self.tilt is None:
            o.raw(b"null")
        else:
            o.text(self.tilt)
        if self.time_t >= 0:
            o.raw(b',"t":')
            o.int(self.time_t + self.board.ticks_diff(self.board.ticks_ms(), self.time_ticks) // 1000)
        self._link_send()

    # ------------------------------------------------------------- link out

    def _send(self, kind, seq, buf, start, end):
        m = frame.encode(self.tx, kind, seq, buf, start, end)
        self.board.link_write(self.tx, m)
        self.last_tx = self.board.ticks_ms()

    def _refill(self):
        """Replay the journal into a scratch game to bring events that did not
        fit in the outbox back into it (only after a long link outage)."""
        box = self.outbox
        want = box.last_seq() if box.count else self.acked
        filler = _Filler(self, want)
        scratch = _game.Game(filler.emit)
        self.journal.scan(_Replay(self, scratch, False, filler.base))
        if filler.seq_done >= self.seq:
            self.spilled = False

    def step(self):
        """One bounded slice of link work: read, time out, send, heartbeat."""
        b = self.board
        n = b.link_read(self.rx)
        if n:
            self.decoder.feed(self.rx, n, self)
        if self.journal.broken is not None and self.tilt is None:
            reason = self.journal.broken
            self.synced = True  # the seq is sound: only durability was lost
            self.tilt_from = self.seq + 1
            try:
                self.journal.set_tilt(reason)
            except OSError:
                pass  # the same failing flash; the tilt still holds until power-off
            self._tilt(reason)
        now = b.ticks_ms()
        if self.up and b.ticks_diff(now, self.last_rx) > DOWN_MS:
            self.up = False
            self.down_at = now
            o = self._link_begin(b"link_down")
            o.raw(b',"silent_ms":')
            o.int(b.ticks_diff(now, self.last_rx))
            self._link_send()
        if self.halt is not None:
            if b.ticks_diff(now, self.last_tx) >= HEARTBEAT_MS:
                self._hello()
            return
        box = self.outbox
        if self.spilled and self.tilt is None and box.count == 0:
            # Only once the host has taken everything in memory: each refill
            # replays the whole journal, so it must not run pass after pass.
            self._refill()
        if self.up and (self.tilt is None or self.synced):
            if self.next_send > self.acked + 1 and b.ticks_diff(now, self.progress) > RETRANSMIT_MS:
                self.next_send = self.acked + 1  # go back N
            budget = SEND_BUDGET
            last = box.last_seq()
            while budget and box.count and self.next_send <= last and self.next_send - self.acked <= WINDOW:
                if self.next_send < box.first_seq:
                    self.next_send = box.first_seq
                    continue
                if self.next_send == self.acked + 1:
                    self.progress = now
                s = box.slot(self.next_send)
                off = box.off[s]
                self._send(0x45, self.next_send, box.data, off, off + box.len[s])
                self.next_send += 1
                budget -= 1
        if b.ticks_diff(now, self.last_tx) >= HEARTBEAT_MS:
            o = self.out
            o.reset()
            o.raw(b'{"acked":')
            o.int(self.acked)
            o.raw(b',"queued":')
            o.int(self.seq - self.acked)
            o.byte(0x7D)
            self._send(0x42, self.seq, o.buf, 0, o.n)
        if self.acked > self.journaled_ack and self.tilt is None and \
                b.ticks_diff(now, self.ack_written) >= HEARTBEAT_MS:
            # Acks are journaled lazily: after a power cut the host merely
            # receives a few events again and drops them by seq.
            self.journal.number(_journal.ACK, self.acked)
            self.journaled_ack = self.acked
            self.ack_written = now


class _Filler:
    """Counts a scratch replay's events and keeps those after ``after``."""

    def __init__(self, session, after):
        self.s = session
        self.after = after
        self.seq = 0
        self.seq_done = after
        self.full = False

    def base(self, seq):
        self.seq = seq

    def emit(self, buf, n):
        if self.s.mute:
            return
        self.seq += 1
        if self.seq <= self.after or self.full or self.seq <= self.s.acked:
            return
        if self.s.outbox.push(self.seq, buf, n):
            self.seq_done = self.seq
        else:
            self.full = True
