"""A device's end of the authenticated link v2, whatever the device is.

The hello and its nonce, the host's challenge, signed and chained events,
acks and the go-back-N window, the outbox, the journal (with its literal
link events, acks and checkpoints), the replay of that journal at boot and
into the outbox after a spill (link/replay.py), the command counter and the
link's own commands (link/dispatch.py), the tilt and its clearing: none of
it depends on what the device does. ``Link`` holds all of that; a device
adds its inputs and its state by subclassing it:

- the shoe, link/session.py: the game, its journaled inputs, the replay of
  game inputs (link/recovery.py) and the shoe's commands (link/schema.py);
- the shuffler, firmware/shuffler/link.py: literal events only.

So the shuffler never loads the baccarat game (about 35 KiB of heap with
its schema and recovery). The hooks a subclass may override are the
methods under "device hooks" below; the defaults are a device whose every
event is journaled literally.

Everything the link may need while the device works is imported with this
module and allocated here, at boot (docs/design.md): after boot the heap is
small holes, and a large block or a code load then may fail.
"""

from baccarat.jsonout import JsonOut
import hashlib

from link import auth, commands, dispatch, frame, proto, replay, reports, settings
from link import journal as _journal
from link.outbox import Outbox

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_SEND_BUDGET = const(4)  # event frames per step, so one step stays short
_READ_SIZE = const(256)


class Limiter:
    """Unauthenticated or garbled traffic, reported as one aggregated event at
    most once per ``proto.BAD_REPORT_MS``: each report is a journal write, so
    a flood must not be able to fill the flash or crowd out the record."""

    def __init__(self, reason):
        self.reason = reason
        self.count = 0
        self.first = 0
        self.last = 0
        self.message = ""
        self.reported_at = None

    def note(self, now, message):
        if not self.count:
            self.first = now
        self.count += 1
        self.last = now
        self.message = message

    def due(self, board, now):
        return self.count and (self.reported_at is None or
                               board.ticks_diff(now, self.reported_at) >= proto.BAD_REPORT_MS)


class Link:
    DEVICE = "device"  # what messages call this device
    # The commands this device takes (a link/commands.py table) and what each
    # does (name -> function(session, args)); a tilted device takes only
    # dispatch.TILT_COMMANDS.
    COMMANDS = commands.LINK_COMMANDS
    ACTIONS = dispatch.LINK_ACTIONS
    # What reads the journal back, at boot and in a refill: a module with
    # boot(s) and refill(s). link/replay.py takes literal events; the shoe's
    # link/recovery.py replays the game's inputs too.
    RECOVERY = replay
    # Free heap after boot, which main.py sets on the session once booted;
    # >= 0 also says the VM has gc.mem_free, so `status` reports the heap
    # free now. -1 until then.
    heap_free = -1

    def __init__(self, board, config, journal, outbox=None):
        self.board = board
        self.shoe_id = config.SHOE_ID  # the device id (the protocol's name for it is "shoe")
        self.board_name = config.BOARD
        self.fw = config.FIRMWARE_VERSION
        self.key = board.key()
        self.signer = auth.FrameSigner(self.key, self.shoe_id)
        self.journal = journal
        self.outbox = outbox if outbox is not None else Outbox()
        self.rx = bytearray(_READ_SIZE)
        self.tx = bytearray(frame.MAX_FRAME)
        self.out = JsonOut(frame.MAX_PAYLOAD - 1 - proto.MAC_HEX)
        self.decoder = frame.Decoder()
        self.seq = 0            # last event seq assigned
        self.acked = 0          # highest seq the host acked
        self.journaled_ack = 0  # the ack the journal knows (it may lag; duplicates are harmless)
        self.counter = 0        # last accepted command counter
        self.last_command = b""
        self.settings = ""
        self.digest = ""        # the hello's digest of `settings`
        self.digest_of = ""
        # The tag chain: the tag of event `acked` (the hello's "chain"), and
        # of event `signed`, the newest one signed (events are signed when
        # first sent, in order).
        self.acked_tag = bytearray(auth.ZERO_MAC)
        self.chain_tag = bytearray(auth.ZERO_MAC)
        self.signed = 0
        self.tag_stale = False  # acked beyond memory after a power cut: refill mends it
        self.frame_tag = bytearray(proto.MAC_HEX)
        # This connection's nonce (host MACs cover it) and the host's challenge
        # (this device's hellos cover it).
        self.nonce = auth.new_nonce()
        self.challenge = bytearray(proto.NONCE_HEX)
        self.challenge[0] = proto.NO_CHALLENGE[0]
        self.challenge_len = 1
        # The host's latest heartbeat challenge: each heartbeat covers it, so
        # an old heartbeat played back later does not verify (docs/protocol.md 7).
        self.beat_link = bytearray(proto.NONCE_HEX)
        self.beat_link[0] = proto.NO_CHALLENGE[0]
        self.beat_link_len = 1
        self.beat_due = False
        self.tilt = None        # persisted tilt reason (corrupt or lost journal)
        self.tilt_from = 0      # seq of the first event made while tilted
        self.synced = False     # a tilted device has heard the host's ack since boot
        self.halt = None        # boot self-test failure: nothing but hellos
        self.spilled = False    # events newer than the outbox exist only in the journal
        self.mute = False
        self.capture = False    # journal the next emission as a literal event
        self.last_checkpoint = 0
        self.had_shoe = False   # the device was mid-work when the journal was replayed (the shoe's)
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
        self.garbled = Limiter("bad_frame")
        self.forged = Limiter("bad_mac")
        self.foreign = Limiter("proto")
        self.limiters = (self.garbled, self.forged, self.foreign)
        # The secure element signs checkpoints (docs/security.md); its
        # buffers exist only on a device that has one.
        self.se = getattr(board, "secure_element", None)
        if self.se is not None:
            self.id_bytes = self.shoe_id.encode()
            self.statement = JsonOut(reports.STATEMENT_SIZE)
            self.sig = bytearray(64)

    # ------------------------------------------------------------- device hooks

    def recovered(self):
        """Called once the boot replay is over (the shoe notes its game's phase)."""

    def round_now(self):
        """The round the boot event reports (0: a device without rounds)."""
        return 0

    def checkpoint_due(self):
        """Checked between inputs: every CHECKPOINT_EVERY events."""
        return self.seq - self.last_checkpoint >= proto.CHECKPOINT_EVERY

    def _refuse_service(self):
        """NEW SHOE held at power-on asks for service mode (no watchdog, a
        live REPL). With a shoe in play (``had_shoe``, set by the shoe's
        ``recovered``) that would open the record's device mid-shoe, so the
        board stays in play mode and the record says why; the hello then
        says ``service: false``."""
        b = self.board
        if self.had_shoe and getattr(b, "service", False):
            b.leave_service()
            reports.tilt(self, "a shoe is in play (the journal holds it): end the shoe first", b"service_refused")

    def refusal(self, name, args):
        """Why the device refuses the authentic command ``name`` now (a str,
        the reason the host shows), or None to accept it. Asked before
        ``accepted`` is reported: an accepted command is one the device acts on."""
        return None

    def reset_device(self):
        """clear_tilt: the device's own state starts over (the link's is kept)."""

    def status(self):
        """The `status` command's event (link/reports.py)."""
        reports.status(self, reports.idle_device)

    # ------------------------------------------------------------- boot

    def boot(self, selftest_error=None):
        """Recover from the journal, then say hello: the first frame ever sent."""
        j = self.journal
        if selftest_error is not None:
            self.halt = selftest_error
            self._hello()
            return
        marker = j.tilt_reason()
        check = None
        if self.se is not None:  # the chip's journal key and counter: boot-only code
            from link import chipcount as check
            check.key(self)
        status, message, good, lost = self.RECOVERY.boot(self)
        if status == _journal.CORRUPT and marker is None:
            marker = "corrupt journal: " + message
            j.set_tilt(marker)
        if j.counter > self.counter:
            self.counter = j.counter  # spent while tilted: only the marker has it
        if lost is not None and marker is None:
            marker = lost
            j.set_tilt(marker)
        if check is not None:  # the chip's counter against the journal
            marker, chip = check.boot(self, marker)
        self.next_send = self.acked + 1
        self.recovered()
        if marker is not None:
            self.tilt_from = self.seq + 1
            self._tilt(marker)
        else:
            j.open(good)
            reports.boot(self, status == _journal.TORN)
            if check is not None:
                check.settle(self, chip)
            self._refuse_service()
        if check is not None:
            from lazy import unload
            unload("link.chipcount")
        self._hello()

    def settings_digest(self):
        """The hello's digest of the settings, worked out once per settings."""
        if self.digest_of != self.settings:
            self.digest = settings.settings_digest(self.settings)
            self.digest_of = self.settings
        return self.digest

    def _tilt(self, reason):
        self.tilt = reason
        reports.tilt(self, reason)

    def base(self, seq, body, at):
        """A compacted journal starts here: events up to ``seq`` are acked and gone."""
        self.seq = seq
        self.outbox.clear()
        self.outbox.first_seq = seq + 1
        self.spilled = False
        self.last_checkpoint = seq

    def restore_ack(self, seq, body, at):
        """An ack read back from the journal, with the tag of the acked event."""
        self.acked = seq
        self.outbox.drop_through(seq)
        self.set_acked_tag(body, at)
        for i in range(proto.MAC_HEX):
            self.chain_tag[i] = body[at + i]
        self.signed = seq

    def set_acked_tag(self, buf, at):
        for i in range(proto.MAC_HEX):
            self.acked_tag[i] = buf[at + i]
        self.tag_stale = False

    # ------------------------------------------------------------- events

    def _emit(self, buf, n):
        """Every event, from the device or the link, passes here exactly once."""
        if self.mute:
            return
        if self.capture:
            self.capture = False
            if self.tilt is None and self.journal.f is not None:
                self.journal.blob(_journal.EVENT, buf, 0, n)
        if self.tilt is not None and not self.tilt_from:
            return  # made while the tilt waits (link/tilt.py broken): never numbered
        self.seq += 1
        if self.seq <= self.acked:
            return
        if self.tilt is not None and not self.synced and self.seq >= self.tilt_from:
            from link import tilt  # a tilted boot only: not resident
            tilt.push(self, buf, n)
        elif not self.spilled and not self.outbox.push(self.seq, buf, n):
            self.spilled = True

    def link_send(self):
        """Queue the link event in ``self.out``. Link events are not functions
        of the device's inputs, so the journal keeps them literally (while
        tilted the journal is not written)."""
        o = self.out
        o.byte(0x7D)
        if self.tilt is None and self.journal.f is not None:
            self.journal.blob(_journal.EVENT, o.buf, 0, o.n)
        self._emit(o.buf, o.n)

    def _error(self, reason, message, name=None, counter=-1):
        reports.error(self, reason, message, name, counter)

    def _checkpoint(self):
        """Every CHECKPOINT_EVERY events and at each shoe's end: an event
        whose tag is an anchor to keep outside the store, signed by the
        secure element when the device has one. The journal keeps an
        unsigned one's place only (replay rebuilds its text) and a signed
        one literally; it is made between inputs, so replay puts it at the
        same seq."""
        through = self.seq
        if self.se is None:
            self.journal.number(_journal.CHECKPOINT, through)
            reports.checkpoint(self.out, through)
        else:
            counter = self._sign_checkpoint(through)
            self.journal.checkpoint(self.out.buf, self.out.n, counter)
        self._emit(self.out.buf, self.out.n)
        self.last_checkpoint = through + 1

    def _sign_checkpoint(self, through):
        """The chip signs reports.statement for ``through``:
        the chain head is the tag of event ``through``, so the events it
        covers are tagged first. Any fault (the chip, its bus) leaves the
        checkpoint unsigned and saying why: the record must go on. Returns
        the counter value it spent (-1: none); the caller's journal record
        of the checkpoint settles it."""
        box = self.outbox
        while self.signed < through and box.holds(self.signed + 1):
            self._sign_next()
        o = self.out
        if self.signed != through or self.tag_stale:
            reports.checkpoint(o, through, -1, "the chain head is not in memory (events wait in the journal)")
            return -1
        manifest = getattr(self.board, "manifest", "") or ""
        manifest = manifest.encode()
        counter = -1
        self.board.feed()  # a signature takes about 150 ms
        j = self.journal
        try:
            if j.intent or j.chip < 0:  # an attempt failed before: where the chip is now is not known
                j.number(_journal.CHIP, self.se.counter(0, False))
            # The intent is journaled before the increment and stays open
            # until the checkpoint's record carries the value spent: a power
            # cut in between (the signature included) is told apart from a
            # restored journal, and the next boot puts the spent value in
            # the record (link/chipcount.py).
            j.number(_journal.INTENT, j.chip)
            counter = self.se.counter(0, True)
            n = reports.statement(self.statement, self.id_bytes, through, self.chain_tag, counter, manifest)
            digest = hashlib.sha256(memoryview(self.statement.buf)[:n]).digest()
            self.se.sign(0, digest, self.sig)
        except Exception as e:  # SecureElementFault or the bus's OSError; the driver is not imported here
            reports.checkpoint(o, through, counter, "secure element: %s" % e)
            return counter
        reports.checkpoint(o, through, counter, None, self.chain_tag, manifest, self.sig)
        return counter

    def acked_to(self, seq):
        if seq <= self.acked:
            return
        box = self.outbox
        while self.signed < seq and box.holds(self.signed + 1):
            self._sign_next()
        if self.signed == seq:
            self.set_acked_tag(self.chain_tag, 0)
        elif self.signed > seq:
            self.set_acked_tag(box.tags, box.slot(seq) * proto.MAC_HEX)
        else:
            self.tag_stale = True
        self.acked = seq
        box.drop_through(seq)
        if self.acked >= self.seq:
            self.spilled = False
            box.clear()
            box.first_seq = self.seq + 1
        if self.next_send <= seq:
            self.next_send = seq + 1

    def _sign_next(self):
        """Sign event ``signed + 1`` (it is in the outbox) onto the chain."""
        box = self.outbox
        seq = self.signed + 1
        slot = box.slot(seq)
        off = box.off[slot]
        at = slot * proto.MAC_HEX
        tag = self.chain_tag
        self.signer.sign_into(proto.EVENT, seq, tag, 0, proto.MAC_HEX,
                              box.data, off, off + box.len[slot], tag, 0)
        tags = box.tags
        for i in range(proto.MAC_HEX):
            tags[at + i] = tag[i]
        self.signed = seq

    def clear_tilt(self, host_seq):
        from link import tilt  # a tilted device only: not resident
        tilt.clear_tilt(self, host_seq)

    # ------------------------------------------------------------- link in

    def on_bad(self, decoder, code, message):
        # Commands and acks in bad frames are simply resent by the host.
        self._limit(self.garbled, message)

    def _limit(self, limiter, message):
        now = self.board.ticks_ms()
        limiter.note(now, message)
        if limiter.due(self.board, now):
            self._report(limiter, now)

    def _report(self, limiter, now):
        reports.aggregated(self, limiter)
        limiter.count = 0
        limiter.reported_at = now

    def on_frame(self, d):
        now = self.board.ticks_ms()
        self.last_rx = now
        kind = d.kind
        if kind == proto.HELLO:
            self._host_hello(d)
        elif kind == proto.BEAT:
            self._host_beat(d)
        if not self.up:
            self.up = True
            reports.link_up(self, self.board.ticks_diff(now, self.down_at) if self.ever_up else -1)
            self.ever_up = True
            self._restart_delivery()
        elif kind == proto.HELLO:
            self._restart_delivery()
        if kind == proto.BEAT or kind == proto.HELLO:
            return
        seq = d.seq
        payload = bytes(d.buf[d.pstart:d.pend])
        try:
            if kind == proto.ACK:
                auth.verify_host(self.key, self.shoe_id, self.nonce, proto.ACK, seq, payload)
                self._ack(seq)
            elif kind == proto.COMMAND:
                dispatch.command(self, seq, payload)
            else:
                self._limit(self.garbled, "frame type %s is not one a host sends (A, C, H, B)" % chr(kind))
        except proto.Rejected as r:
            if r.reason == "bad_mac":
                self._limit(self.forged, "%s %d%s: %s" % (chr(kind), seq, " " + r.name if r.name else "",
                                                          r.message))
            else:
                self._error(r.reason, r.message, r.name, seq if kind == proto.COMMAND else -1)

    def _host_hello(self, d):
        """The host's hello request: ``2 CHALLENGE``. Anyone on the line can
        send one, so it changes nothing but what the next hello covers: the
        nonce host MACs cover is made once per boot (a request that rotated
        it would let a device on the line void every command the pit sends).
        A command captured in one boot fails in the next on the nonce, and
        within a boot on its counter or its deadline (``COMMAND_TTL_MS``)."""
        p = d.buf
        n = d.pend - d.pstart
        at = d.pstart
        if n == 2 + proto.NONCE_HEX and p[at] == 0x30 + proto.PROTO and p[at + 1] == 0x20:
            for i in range(proto.NONCE_HEX):
                self.challenge[i] = p[at + 2 + i]
            self.challenge_len = proto.NONCE_HEX
            return
        version = "1" if n == 0 else bytes(p[at:at + min(n, 8)]).decode().split(" ")[0]
        self._limit(self.foreign, "host speaks link protocol %s; this %s speaks %d"
                    % (version, self.DEVICE, proto.PROTO))

    def _host_beat(self, d):
        """The host's heartbeat: empty, or ``CHALLENGE`` for the next heartbeat
        to cover, answered at once. Unauthenticated: a challenge that is not
        the host's only makes the heartbeat fail at the host, which says so."""
        n = d.pend - d.pstart
        if n != proto.NONCE_HEX:
            return
        p = d.buf
        at = d.pstart
        for i in range(proto.NONCE_HEX):
            self.beat_link[i] = p[at + i]
        self.beat_link_len = proto.NONCE_HEX
        self.beat_due = True

    def _restart_delivery(self):
        self._hello()
        self.next_send = self.acked + 1
        self.progress = self.board.ticks_ms()

    def _ack(self, seq):
        if self.tilt is not None and not self.synced:
            from link import tilt
            if tilt.synced(self, seq):
                return
        if seq > self.seq:
            raise proto.Rejected("bad_ack", "ack %d is above the last event sent, %d" % (seq, self.seq))
        if seq > self.acked:
            self.acked_to(seq)
            self.progress = self.board.ticks_ms()

    # ------------------------------------------------------------- link out

    def _send_signed(self, kind, seq, o, link, llen):
        tag = self.frame_tag
        self.signer.sign_into(kind, seq, link, 0, llen, o.buf, 0, o.n, tag, 0)
        self._send(kind, seq, o.buf, 0, o.n, tag, 0)

    def _send(self, kind, seq, buf, start, end, tag, at):
        m = frame.encode(self.tx, kind, seq, buf, start, end, tag, at, at + proto.MAC_HEX)
        self.board.link_write(self.tx, m)
        self.last_tx = self.board.ticks_ms()

    def flush(self, now):
        """Send what the window allows of the outbox, in order."""
        if not (self.up and (self.tilt is None or self.synced) and not self.tag_stale):
            return
        box = self.outbox
        budget = _SEND_BUDGET
        last = box.last_seq()
        while budget and box.count and self.next_send <= last and \
                self.next_send - self.acked <= proto.WINDOW:
            if self.next_send < box.first_seq:
                self.next_send = box.first_seq
                continue
            if self.next_send == self.acked + 1:
                self.progress = now
            while self.signed < self.next_send:
                self._sign_next()
            s = box.slot(self.next_send)
            off = box.off[s]
            self._send(proto.EVENT, self.next_send, box.data, off, off + box.len[s],
                       box.tags, s * proto.MAC_HEX)
            self.next_send += 1
            budget -= 1

    def _hello(self):
        self._send_signed(proto.HELLO, self.seq, reports.hello(self), self.challenge, self.challenge_len)

    def step(self):
        """One bounded slice of link work: read, time out, send, heartbeat."""
        b = self.board
        n = b.link_read(self.rx)
        if n:
            self.decoder.feed(self.rx, n, self)
        if self.journal.broken is not None and self.tilt is None:
            from link import tilt  # only once the flash has failed: not resident
            tilt.broken(self)
        now = b.ticks_ms()
        for limiter in self.limiters:
            if limiter.due(b, now):
                self._report(limiter, now)
        if self.tilt is None and self.halt is None and self.checkpoint_due():
            self._checkpoint()
        if self.up and b.ticks_diff(now, self.last_rx) > proto.DOWN_MS:
            self.up = False
            self.down_at = now
            reports.link_down(self, b.ticks_diff(now, self.last_rx))
        if self.halt is not None:
            if b.ticks_diff(now, self.last_tx) >= proto.HEARTBEAT_MS:
                self._hello()
            return
        box = self.outbox
        if self.spilled and box.count == 0 and (self.tilt is None or not self.tilt_from):
            # Only once the host has taken everything in memory: each refill
            # replays the whole journal, so it must not run pass after pass.
            # Tilted, only while the tilt waits behind the journal's events.
            self.RECOVERY.refill(self)
        if self.up and (self.tilt is None or self.synced) and not self.tag_stale and \
                self.next_send > self.acked + 1 and b.ticks_diff(now, self.progress) > proto.RETRANSMIT_MS:
            self.next_send = self.acked + 1  # go back N
        self.flush(now)
        if self.beat_due or b.ticks_diff(now, self.last_tx) >= proto.HEARTBEAT_MS:
            self.beat_due = False
            self._send_signed(proto.BEAT, self.seq, reports.beat(self), self.beat_link, self.beat_link_len)
        if self.acked > self.journaled_ack and self.tilt is None and not self.tag_stale and \
                b.ticks_diff(now, self.ack_written) >= proto.HEARTBEAT_MS:
            # Acks are journaled lazily: after a power cut the host merely
            # receives a few events again and drops them by seq.
            self.journal.ack(self.acked, self.acked_tag)
            self.journaled_ack = self.acked
            self.ack_written = now
        # Last, after this pass's sends: flash work kept off a card's path
        # (the journal ring's, link/ring.py).
        self.journal.idle()
