"""The host half of link v2 without I/O (docs/protocol.md, host side): frames in,
records and frames out.

A ``HostLink`` is fed the bytes the shoe sent (``feed``) and told the time
passes (``tick``); it answers through the ``send`` callable it was given (a
hello request, an ack, a heartbeat, a command) and through the record it was
given (store this event, log that, raise this alert). It never opens a port,
sleeps or polls: the bridge's transport (host_tools/bridge/line.py) does
that under it, and the pit's table threads, the fuzzers and the tests drive
the very same object.


The bridge's one promise is exactly-once delivery into the store of what the
shoe said, and of nothing else: it stores events strictly in seq order, only
when their tag (made by the shoe with its key over the previous event's tag)
verifies, acknowledges only what is committed, drops what it already has,
and never stores past a gap (the shoe's go-back-N resend fills it).
Everything else here — the challenge-response hello, reconnecting,
heartbeats, signing commands, alerts — serves that promise or the
supervisor watching it.

What an attacker on the serial line can do, and what it gets:

- forge or alter an event, a hello or a heartbeat: its tag does not verify,
  so nothing is stored, no state changes, and the frames are counted into
  one aggregated alert per kind, written at most once a second, with the
  sender's text truncated and escaped;
- play back an old hello: it covers an old challenge, so it is only a reason
  to ask again;
- play back an old command or ack: it covers the nonce of an earlier hello,
  so the shoe refuses it.

A shoe whose hello shows it lost state the store holds (seq or command
counter below the record) has rolled back: a critical alert, and the stored
chain is never overwritten or forked.

Framing, MACs and command encoding are the firmware's own modules
(``firmware/link``), imported here, so the two ends cannot disagree.
"""

import hmac as _hmac
import json
import logging
import os
import time

from host_tools.protocol import alerts, chain, decoder
from host_tools.protocol.keys import key_id
from host_tools.protocol.untrusted import parse_json, shown
from host_tools.protocol.record import Conflict, StoreError, record_proto

from firmware.link import auth, chipcount, frame, host_frames, journal, proto, schema
from firmware.link import events_schema

log = logging.getLogger("shoe.bridge")
# Only `shoe bridge` decides where the log goes (DB.log); a library user or a
# test that sets nothing gets no stderr noise from logging's last resort.
logging.getLogger("shoe").addHandler(logging.NullHandler())

PROTO = proto.PROTO
HEARTBEAT_S = 0.5      # the host must send a frame at least every 1000 ms (protocol 7)
SILENCE_S = 3.0        # the shoe sends B after 1000 ms idle; 3 s of nothing is a dead link
REOPEN_S = 0.5         # how often a vanished port is retried
HELLO_RETRY_S = 1.5    # ask again if a hello request went unanswered (at least; see retry_s)
HELLO_RETRY_MAX_S = 20.0  # ... and at most, however slow the shoe's measured answers
RECENT = 16            # earlier hello challenges whose answers are stale, not forged
ACKS_TAKEN_S = 2.0     # the shoe's heartbeats show it refusing this bridge's acks for this long
# After the last reboot, lost frame or stall, the link records again within
# this: an unanswered hello request is asked again after retry_s() (HELLO_RETRY_S
# for a shoe that answers in under 0.75 s), acks refused under a dead nonce show
# within ACKS_TAKEN_S plus a heartbeat, a dead line is reopened after SILENCE_S.
# tests/unit/test_hostlink_recovery.py holds random interleavings of those
# faults to it; `shoe soak powercut` holds every power cut to it.
RECOVER_S = 5.0
REPORT_S = proto.BAD_REPORT_MS / 1000.0  # one aggregated report per kind a second at most
MERGE_S = 60.0         # a flood with pauses shorter than this stays one alert row
RESULT_TYPES = ("result",)
BEAT_S = 1.0           # a fresh heartbeat challenge this often (the shoe answers each at once)
STALE_S = 3.0          # this long without a fresh heartbeat or a new event: not recording
BEHIND_S = 5.0         # the shoe holds unacked events and the store has not moved for this long

NO_KEY = ("no key for this shoe (start the bridge with --key-file): nothing is acknowledged, "
          "so the shoe holds its events; this bridge records nothing")


def command_body(name, args=None):
    """The canonical body text of a command, checked by the shoe's own parser
    (link/schema.py) before anything is signed, or, for a command only a
    shuffler takes (its probes), by the shuffler's table
    (link/commands.py SHUFFLER_COMMANDS, the one its firmware takes). The
    one place the bridge builds a body."""
    try:
        return schema.command_text(name, args)
    except proto.Rejected as e:
        if e.reason != "unknown_command" or args:
            raise
        from firmware.link import commands
        try:
            commands.parse(name, commands.SHUFFLER_COMMANDS)
        except proto.Rejected:
            raise e   # neither device takes it: the shoe's message, listing its commands
        return name


class Tally:
    """Counts frames the bridge throws away (bad tag, bad CRC) and reports
    each kind as one aggregated line (count, first and last time, the latest
    sample) at most once a second: a flood must neither fill the disk nor
    slow the bridge down with a write per frame."""

    def __init__(self, write, every=REPORT_S):
        self.write = write   # write(kind, count, first_time, last_time, detail)
        self.every = every
        self.pending = {}    # kind -> [count, first_time, last_time, detail]
        self.last_write = {}
        self.total = {}

    def note(self, kind, detail):
        now = time.time()
        self.total[kind] = self.total.get(kind, 0) + 1
        p = self.pending.get(kind)
        if p is None:
            self.pending[kind] = [1, now, now, detail]
        else:
            p[0] += 1
            p[2] = now
            p[3] = detail
        self.flush(kind)

    def flush(self, kind=None, force=False):
        """Write what is due (all kinds when ``kind`` is None)."""
        now = time.monotonic()
        for k in ([kind] if kind is not None else list(self.pending)):
            p = self.pending.get(k)
            if p is None or (not force and now - self.last_write.get(k, -1e9) < self.every):
                continue
            del self.pending[k]
            self.last_write[k] = now
            self.write(k, p[0], p[1], p[2], p[3])


class HostLink:
    """One shoe's link, host side, without I/O.

    ``on_event(seq, event)`` is called once for every event newly committed
    (never for a dropped duplicate); ``on_link(state, detail)`` on connection
    changes and refusals; ``on_alert(severity, kind, detail)`` when an alert
    is stored. ``shoe_id``, when given, is the only shoe this link records;
    otherwise the first verified hello names it, and no later hello changes it.
    """

    def __init__(self, store, key=None, name="", shoe_id=None, send=None, claim=None,
                 on_event=None, on_link=None, on_alert=None, deployed=None):
        """``store`` is the record (host_tools/store/db.Store's methods);
        ``send(data) -> bool`` writes frames to the shoe (False: it failed);
        ``claim(shoe_id) -> None | why`` takes this link's exclusive right to
        record the shoe (the transport's lease); ``name`` names the line in
        messages (the port); ``deployed``: the SHA-256 (hex) of the manifest
        `shoe deploy` recorded for the shoe (keys.deployed_manifest), which
        its hello's ``manifest`` must match."""
        self.store = store
        self.deployed = deployed
        self.port_path = name
        self.key = key
        self.fkey = auth.frames_key(key) if key is not None else None
        self.send = send or (lambda data: False)
        self.claim = claim or (lambda shoe_id: None)
        self.on_event = on_event or (lambda seq, event: None)
        self.on_link = on_link or (lambda state, detail: None)
        self.on_alert = on_alert or (lambda severity, kind, detail: None)
        self.decoder = decoder.Decoder()
        self.attached = False  # a line to the shoe is open (attach/detach)
        self.state = "down"
        self.shoe_id = shoe_id
        self.hello = None      # the latest verified hello (dict); its nonce signs acks and commands
        self.tilted = None     # the shoe's tilt reason (its hello, or a stored tilt event) until tilt_cleared
        self.mismatch = None   # firmware_mismatch's detail while the latest hello names other firmware
        self.counter = None
        self.refuse = None     # why this shoe's events must not be stored or acked, if so
        self.refused_logged = None
        self.challenge = None  # what the next hello must cover
        self.challenge_open = False  # False once a hello has answered it
        self.recent = []       # earlier challenges of this link: a hello to one is stale, not forged
        # (RECENT of them: a line that held a backlog of requests while the
        # shoe was off delivers them at once, and the shoe answers each)
        self.asked_at = {}     # challenge -> when it was sent (monotonic s): the shoe's answer time
        self.answer_s = 0.0    # the slowest answer to a hello request seen on this link, s
        self.ack_due = False
        self.last_rx = 0.0
        self.last_tx = 0.0
        self.hello_asked = 0.0
        self.acks_refused_at = None  # since when the shoe's heartbeats show our acks not taken
        self.beat_acked = None       # the shoe's acked in the heartbeat that set acks_refused_at
        self.gap_logged = None
        self.no_key_said = False
        self.stats = {"stored": 0, "duplicates": 0, "bad_frames": 0, "gaps": 0, "reconnects": 0,
                      "bad_tags": 0, "invalid": 0, "internal_errors": 0}
        self.tally = Tally(self._report)
        # What the recording state is made of (``recording()``): each is set
        # where the fact is learnt, so the state shown is never a guess.
        self.busy = None       # the transport cannot have the line (another program holds it)
        self.stall = None      # (seq, reason): a verified event the schema rejects blocks the chain
        self.store_error = None  # the store refused a write: nothing more is recorded
        self.queued = 0        # the shoe's events the store lacks, by its latest fresh heartbeat
        # Heartbeats are bound to a challenge this link sends every BEAT_S
        # (docs/protocol.md 7): only a heartbeat covering the current or the
        # previous one is fresh, so one played back later says nothing.
        self.beat_challenge = None
        self.beat_prev = None
        self.beat_asked = 0.0
        self.fresh_at = None   # last fresh heartbeat or newly stored event (monotonic s)
        self.shoe_clock = None  # (the shoe's 30-bit ms clock "t", when it was read): command deadlines
        self.progress_at = time.monotonic()  # last time the store grew or the shoe had nothing queued
        self.link_detail = ""
        self.last_stored = None  # the newest stored seq, as last read (for other threads' eyes)
        # The chain head (chain.Head) this link's own last append left, or
        # None: read from the store. This link is the shoe's one writer in
        # its store (the transport's lease), so after its own commit the head
        # is known without asking; anything but a clean append drops it, and
        # the store still checks the seq inside the write's transaction.
        self.head = None
        self.ack_seq = None  # the seq this feed stored last: what its ack names, read from no table
        # NOT RECORDING as an alert (``_watch``): since when (monotonic), and
        # the raised condition's start (wall clock) until it is cleared.
        self.not_recording_at = None
        self.outage = None
        self.outage_checked = False  # an outage a previous bridge left open was looked for

    # -- what the transport calls -------------------------------------------

    def attach(self):
        """A line to the shoe was opened: start afresh and ask for a hello."""
        self.attached = True
        self.decoder = decoder.Decoder()
        self.last_rx = time.monotonic()
        self.fresh_at = self.last_rx  # a new line gets STALE_S to show a fresh heartbeat
        self.beat_asked = 0.0
        self.shoe_clock = None
        self.hello = None
        self.head = None
        self.set_state("connecting", "opened %s" % self.port_path)
        self.ask_hello(force=True)

    def detach(self, detail):
        """The line was lost (``detail`` says how)."""
        self.attached = False
        self.hello = None
        self.head = None
        self.stats["reconnects"] += 1
        self.set_state("lost", detail)

    def feed(self, data):
        """Bytes from the shoe: every whole frame in them is handled."""
        self.ack_seq = None
        self.decoder.feed(data, len(data), self)
        if self.ack_due:
            self._ack(self.ack_seq)

    def tick(self):
        """Time passed: flush reports, ask again, keep the line alive. Returns
        why the line is dead (the transport then closes it), or None."""
        now = time.monotonic()
        self.tally.flush()
        if now - self.last_rx > SILENCE_S:
            return "no frame from the shoe for %.1f s" % (now - self.last_rx)
        if (self.hello is None or self.challenge_open) and now - self.hello_asked > self.retry_s():
            # Every request is asked again until a verified hello answers it:
            # the shoe that should have answered may have rebooted since.
            self.ask_hello(force=True)
        if self.attached and self.hello is not None and now - self.beat_asked >= BEAT_S:
            self.beat_prev, self.beat_challenge = self.beat_challenge, auth.new_nonce()
            self.beat_asked = now
            self._send(host_frames.encode_beat(self.beat_challenge))
        if self.attached and now - self.last_tx > HEARTBEAT_S:
            if self.hello is not None and self.refuse is None:
                self._ack()  # an ack doubles as the heartbeat and repairs a lost one
            else:
                self._send(host_frames.encode_beat())
        self._watch(now)
        return None

    def _watch(self, now):
        """NOT RECORDING is never silent: once it has lasted
        alerts.NOT_RECORDING_S it is a stored critical ``not_recording``
        alert (the console, the page and central all get it), and when the
        bridge records again a clear of the same kind closes it, also one a
        bridge before this one left open."""
        ok, why = self.recording()
        if not ok:
            if self.not_recording_at is None:
                self.not_recording_at = now
            elif self.outage is None and now - self.not_recording_at >= alerts.NOT_RECORDING_S:
                self.outage = time.time() - (now - self.not_recording_at)
                self._outage_alert(alerts.CRITICAL, "NOT RECORDING for %.0f s (since %s): %s" % (
                    now - self.not_recording_at, _clock(self.outage), why))
            return
        self.not_recording_at = None
        if self.outage is None and not self.outage_checked and self.shoe_id is not None:
            self.outage_checked = True
            left = [a for a in alerts.open_only(self.store.alerts(self.shoe_id))
                    if a["kind"] == "not_recording"]
            if left:
                self.outage = left[0]["first_time"]
        if self.outage is not None:
            since, self.outage = self.outage, None
            self._outage_alert(alerts.INFO, "recording again after %.0f s not recording (since %s): %s"
                               % (time.time() - since, _clock(since), why))

    def _outage_alert(self, severity, detail):
        log.log(logging.ERROR if severity == alerts.CRITICAL else logging.INFO, "not_recording: %s", detail)
        if self.shoe_id is not None:  # a row tied to no shoe would be no table's
            try:
                self.store.alert(self.shoe_id, severity, "not_recording", detail)
            except StoreError as e:
                self._store_failed(e)
        self.on_alert(severity, "not_recording", detail)

    def close(self, detached=False):
        """The transport stops: write what is pending (and, when it held a
        line, that the line is down because the bridge stopped)."""
        self.tally.flush(force=True)
        if detached:
            self.attached = False
            self._log_link("disconnect", "bridge stopped")

    def _send(self, data):
        if not self.attached or not self.send(data):
            return False
        self.last_tx = time.monotonic()
        return True

    def ask_hello(self, force=False):
        """Send a hello request with a fresh challenge. Not while an earlier
        request is still young, unless ``force``: the answer to it is on its
        way, and asking again would make that answer stale in turn."""
        now = time.monotonic()
        if not force and self.challenge_open and now - self.hello_asked < self.retry_s():
            return
        if self.challenge_open:
            self._keep(self.challenge)  # its answer may still come
        self.challenge = auth.new_nonce()
        self.challenge_open = True
        self.hello_asked = now
        self.asked_at[self.challenge] = now
        self._send(host_frames.encode_hello_request(self.challenge))

    def _resync(self, why):
        """The shoe's connection changed (or may have): acks and commands
        under the old nonce would be refused, so it is dropped and a fresh
        hello asked for; ``tick`` asks again until one answers."""
        self.hello = None
        self.head = None
        self.acks_refused_at = None
        self.set_state("connecting", why)
        self.ask_hello()

    def retry_s(self):
        """How long a hello request waits for its answer before another is
        sent: twice the slowest answer measured on this link, within
        HELLO_RETRY_S and HELLO_RETRY_MAX_S. A shoe slower than the retry
        would otherwise answer each request just after it was replaced,
        and be asked again, for ever."""
        return max(HELLO_RETRY_S, min(HELLO_RETRY_MAX_S, 2.0 * self.answer_s))

    def _keep(self, challenge):
        self.recent = self.recent[-(RECENT - 1):] + [challenge]
        for old in [c for c in self.asked_at if c not in self.recent and c != self.challenge]:
            del self.asked_at[old]

    def _answered(self, challenge):
        """A genuine hello covering ``challenge`` arrived now: how long the
        shoe took to answer it (s), which the retry then adapts to."""
        sent = self.asked_at.get(challenge)
        if sent is None:
            return None
        took = time.monotonic() - sent
        self.answer_s = max(self.answer_s, took)
        return took

    def set_state(self, state, detail):
        self.state = state
        self.link_detail = detail
        kind = {"up": "connect", "lost": "disconnect"}.get(state, state)
        log.info("link %s: %s", state, detail)
        self._log_link(kind, detail)
        self.on_link(state, detail)

    def _log_link(self, kind, detail):
        """A link_log row; a store that refuses it stops recording (said in
        the state) but never stops the bridge."""
        try:
            self.store.log_link(self.shoe_id, kind, detail)
        except StoreError as e:
            self._store_failed(e)

    def _store_failed(self, e):
        text = "the store refused a write: %s" % shown(str(e), 160)
        if self.store_error != text:
            log.error(text)
        self.store_error = text

    # -- reports ------------------------------------------------------------

    def _report(self, kind, count, first, last, detail):
        where, severity, what = alerts.KINDS[kind]
        text = "%d %s from %s to %s; last: %s" % (
            count, what, _clock(first), _clock(last), detail)
        log.warning("%s: %s", kind, text)
        try:
            if where == "alert":
                self.store.alert(self.shoe_id, severity, kind, text, count, first, last, MERGE_S)
                self.on_alert(severity, kind, text)
            else:
                self.store.log_link(self.shoe_id, kind, text)
        except StoreError as e:
            self._store_failed(e)

    def _critical(self, kind, detail):
        """A stored critical alert (``shoe verify`` fails on it), logged and
        shown; ``kind`` is one of alerts.CRITICAL_KINDS."""
        severity = alerts.severity(kind)
        log.error("%s: %s", kind, detail)
        try:
            self.store.alert(self.shoe_id, severity, kind, detail, merge_within=MERGE_S)
        except StoreError as e:
            self._store_failed(e)
        self._log_link(kind, detail)
        self.on_alert(severity, kind, detail)

    def _refusing(self, reason):
        """Stop recording this shoe for ``reason``, said once (not per frame)."""
        self.refuse = reason
        if self.refused_logged != reason:
            self.refused_logged = reason
            log.warning("not recording: %s", reason)
            self._log_link("refused", reason)
            self.on_link("refused", reason)

    # -- frames (called by decoder.Decoder) -----------------------------------

    def on_bad(self, _decoder, code, message):
        self.stats["bad_frames"] += 1
        self.tally.note("bad_crc" if code == frame.BAD_CRC else "bad_frame", shown(message, 120))

    def on_frame(self, dec):
        """Every frame the decoder passes (its CRC is good). Nothing on the
        line may stop the bridge: whatever a frame makes this code raise is
        logged with the frame's bytes, counted (``internal_errors``, which
        the fuzz test holds at 0) and the frame skipped."""
        self.last_rx = time.monotonic()
        kind = dec.kind
        seq = dec.seq
        payload = bytes(dec.buf[dec.pstart:dec.pend])
        try:
            if self.key is None:
                self._no_key()
            elif kind == proto.HELLO:
                self._hello(seq, payload)
            elif kind == proto.EVENT:
                self._event(seq, payload)
            elif kind == proto.BEAT:
                self._heartbeat(seq, payload)
            else:
                self.tally.note("bad_frame", "unexpected frame type %s from the shoe" % shown(chr(kind)))
        except StoreError as e:
            self._store_failed(e)
        except Exception as e:  # noqa: BLE001 - the last line of defence; see docstring
            self.stats["internal_errors"] += 1
            log.exception("frame %s%s skipped: %s", shown(chr(kind)), seq, shown(payload, 120))
            self.tally.note("internal", "%s%s %s: %s" % (chr(kind), seq, shown(payload),
                                                         shown("%s: %s" % (type(e).__name__, e), 80)))

    def _no_key(self):
        if not self.no_key_said:
            self.no_key_said = True
            self._refusing(NO_KEY)

    def _tag_ok(self, shoe_id, kind, seq, link, body, tag):
        want = host_frames.frame_mac(self.fkey, shoe_id, kind, seq, link, body)
        return len(tag) == proto.MAC_HEX and _hmac.compare_digest(want, tag)

    def _invalid(self, kind, seq, payload, why):
        """A frame that the shoe signed but the link schema rejects: logged
        with its bytes, counted, and not used."""
        self.stats["invalid"] += 1
        self.tally.note("invalid_" + kind, "%s%d %s: %s" % (kind[0].upper(), seq, shown(why, 120),
                                                           shown(payload)))

    def _hello(self, seq, payload):
        hello, _err = parse_json(payload)  # a v1 hello: JSON with no tag after it
        tagged = hello is None
        if tagged:
            body, tag = auth.split_mac(payload)
            hello, _err = parse_json(body)
        # Before the tag can be checked, only two fields are read: "proto"
        # (a v1 shoe signs nothing) and "shoe" (the tag covers it), each
        # checked for its type first.
        if not isinstance(hello, dict) or not isinstance(hello.get("shoe"), str):
            self.tally.note("forged_hello", "H%d not a hello: %s" % (seq, shown(payload)))
            return
        their = hello.get("proto")
        if their != PROTO or isinstance(their, bool):
            # Cannot be verified under v2 rules, so it changes nothing but the
            # one line that tells the technician why nothing is recorded.
            if self.hello is None:
                self._refusing("shoe speaks link protocol %s, this bridge speaks %d: not recording"
                               % (their if _whole(their) else shown(str(their), 8), PROTO))
            return
        shoe_id = hello["shoe"]
        if tagged and self.challenge_open and self._tag_ok(shoe_id, proto.HELLO, seq, self.challenge,
                                                            body, tag):
            self.challenge_open = False
            self._answered(self.challenge)
            self._keep(self.challenge)
            why = check_hello(hello)
            if why is not None:
                self._invalid("hello", seq, payload, why)
                if self.hello is None:
                    self._refusing("shoe %s's hello fails the link schema (%s): not recording"
                                   % (shown(shoe_id, 16), shown(why, 120)))
                self.ask_hello()
                return
            self._verified_hello(seq, hello)
            return
        older = None
        if tagged:
            older = next((link for link in [proto.NO_CHALLENGE] + self.recent
                          if self._tag_ok(shoe_id, proto.HELLO, seq, link, body, tag)), None)
        if older is not None:
            # Genuine but not the answer to the open challenge: the shoe
            # rebooted, repeated itself, answered an earlier request (a slow
            # shoe), or this is a playback. Not evidence of anything now: ask
            # again, no sooner than the shoe can answer. Under another nonce
            # than ours, the connection our acks and commands are signed for
            # may be gone (a reboot): it is dropped until a verified hello
            # names the shoe's current one.
            took = self._answered(older) if older != proto.NO_CHALLENGE else None
            if self.hello is not None and hello.get("nonce") != self.hello["nonce"] \
                    and shoe_id == self.shoe_id:
                self._resync("shoe %s said hello under another connection (it rebooted, or a "
                             "playback): asking for a fresh hello" % shown(shoe_id, 16))
            else:
                if took is not None and self.hello is None:
                    self._refusing("shoe %s answered an older challenge of this bridge %.1f s after "
                                   "it was sent: a slow shoe, not a wrong key; asking again every "
                                   "%.1f s" % (shown(shoe_id, 16), took, self.retry_s()))
                self.ask_hello()
            return
        self.stats["bad_tags"] += 1
        self.tally.note("forged_hello", "H%d claiming shoe %s: %s" % (
            seq, shown(shoe_id, 16), shown(payload)))
        if self.hello is None and tagged and self._keyless(shoe_id, seq, body, tag):
            # Under the all-zero key: a shoe that has no link key (its secure
            # element does not answer, docs/design.md "Missing parts"). Anyone
            # can make such a hello, so its words are shown as the shoe's
            # unverified claim and nothing else changes.
            self._refusing("shoe %s has no link key, so nothing it sends can be verified; its hello "
                           "(unverified) says: %s" % (shown(shoe_id, 16), shown(str(hello.get("tilt")), 160)))
            self.ask_hello()
            return
        if self.hello is None:
            # Shown in the bridge's state; changes nothing else, and the
            # first verified hello clears it.
            self._refusing("no hello on %s verifies under this bridge's key %s: wrong --key-file, "
                           "or someone else on the line; recording nothing"
                           % (self.port_path, key_id(self.key)))
        self.ask_hello()

    def _keyless(self, shoe_id, seq, body, tag):
        """The hello's tag is made under the all-zero shoe key (firmware/main.py NO_KEY)."""
        fkey = auth.frames_key(bytes(32))
        return any(_hmac.compare_digest(host_frames.frame_mac(fkey, shoe_id, proto.HELLO, seq, link, body), tag)
                   for link in [self.challenge or proto.NO_CHALLENGE, proto.NO_CHALLENGE] + self.recent)

    def _verified_hello(self, seq, hello):
        shoe_id = hello["shoe"]
        if self.shoe_id is not None and shoe_id != self.shoe_id:
            self._critical("shoe_changed", "a hello signed as shoe %s arrived on %s, which records "
                           "shoe %s: not recording it" % (shown(shoe_id, 16), self.port_path, self.shoe_id))
            return
        # check_hello has vouched for every field's type; the ranges the
        # schema cannot say are checked here.
        acked = hello["acked"]
        counter = hello["counter"]
        if acked < 0 or counter < 0 or hello["seq"] < 0:
            self._invalid("hello", seq, json.dumps(hello), "a negative seq, acked or counter")
            if self.hello is None:
                self._refusing("shoe %s's hello has a negative seq, acked or counter: not recording"
                               % shown(shoe_id, 16))
            return
        taken = self.claim(shoe_id)
        if taken is not None:
            self.shoe_id = self.shoe_id or shoe_id
            self._refusing(taken)
            return
        recorded = record_proto(self.store.shoe(shoe_id))
        if recorded is not None and recorded != PROTO:
            # A record keeps its version (its tags are checked under it):
            # extending it under another would leave it half unverifiable.
            self.shoe_id = self.shoe_id or shoe_id
            self._refusing("this store's record of shoe %s was written under link protocol %d, "
                           "this bridge records %d: keep it as it is and give the bridge a new --db"
                           % (shown(shoe_id, 16), recorded, PROTO))
            return
        self.shoe_id = shoe_id
        self.hello = hello
        self.head = None
        if isinstance(hello.get("t"), int):
            self.shoe_clock = (hello["t"], time.monotonic())
        self.refuse = None
        self.stall = None
        self.queued = max(0, hello["seq"] - acked)
        self.progress_at = time.monotonic()
        self.store.register_shoe(shoe_id, key_id(self.key),
                                 {k: hello.get(k) for k in ("proto", "fw", "board", "settings", "manifest", "service")})
        self._check_firmware(shoe_id, hello)
        head = self.store.shoe(shoe_id)
        stored = self.last_stored = head["last_seq"] if head else None
        held = self.store.max_counter(shoe_id)
        tilt = hello.get("tilt")
        rollback = []
        if stored is not None and seq < stored:
            rollback.append("its last seq is %d but the store holds seq %d" % (seq, stored))
        if counter < held:
            rollback.append("its command counter is %d but the store shows command %d accepted"
                            % (counter, held))
        self.counter = max(counter, held)  # commands in the record never go backwards
        if rollback:
            what = "shoe %s rolled back: %s" % (shoe_id, "; ".join(rollback))
            if tilt is not None:
                self._critical("rollback", what + "; it is tilted (%s), so its new events follow "
                               "the stored seq %d" % (shown(str(tilt), 80), stored or 0))
            else:
                self._critical("rollback", what + "; not storing or acknowledging: the stored "
                               "record is kept as it is")
                self._refusing(what + ": recording stopped")
        if stored is not None and acked > stored and self.refuse is None:
            self._refusing("the shoe says seq %d was acknowledged but this store ends at %d: "
                           "events %d..%d went to another store" % (acked, stored, stored + 1, acked))
        detail = "shoe %s fw %s board %s, last seq %d, acked %d%s" % (
            shoe_id, shown(str(hello.get("fw")), 40), shown(str(hello.get("board")), 20), seq, acked,
            ", TILT: %s" % shown(str(tilt), 80) if tilt is not None else "")
        if self.state == "up":
            self._log_link("hello", detail)  # a repeat on a live link
        else:
            self.set_state("up", detail)
        # Ack at once after every hello (protocol 7): a shoe that lost its
        # latest acks moves on, and a tilted shoe waits for this ack before it
        # sends any event.
        self.ack_due = True
        self._ack()

    def _check_firmware(self, shoe_id, hello):
        """The hello's manifest against the deploy record, the secure
        element's counter against the shoe's journal (its tilt, link/chipcount.py),
        and service mode: each a critical alert (merged while it lasts), never a reason
        to drop the record (what the shoe sends is still evidence)."""
        manifest = hello.get("manifest")
        self.mismatch = None
        if self.deployed is not None and manifest != self.deployed:
            self.mismatch = ("shoe %s's hello names manifest %s, but `shoe deploy` recorded %s for it: the "
                             "code on the shoe is not what was deployed"
                             % (shoe_id, shown(str(manifest or "none"), 16), self.deployed[:16]))
            self._critical("firmware_mismatch", self.mismatch)
        tilt = hello.get("tilt")
        self.tilted = shown(str(tilt), 120) if tilt is not None else None
        if isinstance(tilt, str) and (tilt.startswith(chipcount.REASON) or journal.SEAL in tilt):
            self._critical("counter_mismatch", "shoe %s tilted at boot: %s" % (shoe_id, shown(tilt, 120)))
        if hello.get("service") is True:
            self._critical("service_mode", "shoe %s was powered on in service mode (NEW SHOE held): no "
                           "watchdog, a live REPL on its USB port" % shoe_id)

    def _stored(self):
        self.last_stored = None if self.shoe_id is None else self.store.last_seq(self.shoe_id)
        return self.last_stored

    def _event(self, seq, payload):
        if self.hello is None or self.refuse:
            return  # the shoe resends after its hello; a refused shoe is not recorded
        body, tag = auth.split_mac(payload)
        shoe_id = self.shoe_id
        head, self.head = self.head, None
        if head is None:
            head = chain.Head.of(self.store.shoe(shoe_id))
        start = {}
        if head.last_seq is None:
            # A store new to this shoe starts exactly where the hello says.
            head = chain.Head(self.hello["acked"] + 1, self.hello["chain"])
            start = {"first_seq": head.first_seq, "first_prev": head.first_prev}
        verdict = chain.accept(self.fkey, shoe_id, head, seq, body, tag,
                               stored=lambda q: self.store.event_row(shoe_id, q))
        kind = verdict.kind
        if kind == chain.GAP:
            self.stats["gaps"] += 1
            if self.gap_logged != head.expected():
                self.gap_logged = head.expected()
                self._log_link("gap", "shoe %s: %s; waiting for the resend" % (shoe_id, verdict.why))
            return
        if kind == chain.DUPLICATE:
            self.stats["duplicates"] += 1
            self.ack_due = True
            return
        if kind == chain.BEFORE_FIRST:
            return  # acknowledged to another store before this one
        if kind == chain.FORGED:
            self.stats["bad_tags"] += 1
            self.tally.note("forged_event", "E%d %s" % (seq, shown(body)))
            return
        if kind == chain.FORK:
            self._critical("fork", "shoe %s: %s" % (self.shoe_id, verdict.why))
            return
        if kind == chain.MALFORMED:
            # The shoe sent it, but it is not stored and not acknowledged, so
            # the shoe keeps it and resends it: nothing is lost, and the
            # recording state says exactly which seq blocks the record and
            # why. The stall first: another thread that sees the count has
            # grown must also see why the record is blocked.
            self.stall = (seq, "the shoe's event %s: not stored; the shoe holds it and every "
                          "later event" % verdict.why)
            self._invalid("event", seq, body, verdict.why)
            return
        event = verdict.event
        try:
            self.store.append(shoe_id, seq, body, mac=tag, event=event, **start)
        except Conflict as e:  # cannot happen with one bridge per shoe; kept loud
            self._critical("conflict", str(e))
            return
        except StoreError as e:
            self._log_link("bad_event", "seq %d: %s" % (seq, shown(str(e), 160)))
            self._store_failed(e)
            return
        self.head = head.extended(seq, tag.decode("ascii"))
        self.store_error = None
        self.stall = None
        self.last_stored = self.ack_seq = seq
        self.progress_at = self.fresh_at = time.monotonic()
        self.ack_due = True
        self.stats["stored"] += 1
        if verdict.how == chain.RESTART and seq != 1:
            self._log_link("chain_restart", "shoe %s restarted its tag chain at seq %d (%s)"
                           % (shoe_id, seq, event["type"]))
        self._note(event)
        self.on_event(seq, event)

    def _heartbeat(self, seq, payload):
        """A heartbeat: its frame seq is the shoe's newest event, its tag
        covers this link's current (or previous) heartbeat challenge. One
        that covers no challenge (before the shoe heard one) is the shoe's
        but not fresh: it is ignored. One that covers an older challenge, or
        none of the shoe's key, is a replay or a forgery: counted."""
        body, tag = auth.split_mac(payload)
        fresh = self.shoe_id is not None and any(
            self._tag_ok(self.shoe_id, proto.BEAT, seq, link, body, tag)
            for link in (self.beat_challenge, self.beat_prev) if link is not None)
        if not fresh:
            if self.shoe_id is not None and self._tag_ok(self.shoe_id, proto.BEAT, seq,
                                                         proto.NO_CHALLENGE, body, tag):
                return  # the shoe's, not yet bound to a challenge: says nothing now
            self.stats["bad_tags"] += 1
            self.tally.note("forged_beat", "B%d not bound to this bridge's current heartbeat "
                            "challenge (a replay, or not the shoe's key): %s" % (seq, shown(body)))
            return
        beat, why = parse_json(body)
        if why is None:
            why = events_schema.check_beat(beat) or events_schema.out_of_range(beat)
        if why is not None:
            self._invalid("beat", seq, body, why)
            return
        now = time.monotonic()
        self.fresh_at = now
        self.shoe_clock = (beat["t"], now)
        stored = self._stored()
        # The seq the shoe's key vouches for, not the "queued" it states.
        self.queued = max(0, seq - (stored or 0)) if seq > 0 else 0
        if self.queued <= 0:
            self.progress_at = now  # nothing waiting: the store is not behind
        if stored is not None and beat["acked"] < stored and self.refuse is None \
                and self.hello is not None:
            self.ack_due = True
            # The shoe has not taken the acks we keep sending: they are
            # signed under a nonce it no longer knows (it rebooted and the
            # hello saying so was lost), so it holds its events for good.
            # A shoe whose acked still moves is taking them, only behind
            # the store (acks in flight on a loaded pit PC): a fresh hello
            # then would only stop a working link, and on a pit of
            # hundreds of tables each such hello, answered late, held the
            # table's cards back for tens of seconds (`shoe bench pit`).
            if self.acks_refused_at is None or beat["acked"] > self.beat_acked:
                self.acks_refused_at = now
                self.beat_acked = beat["acked"]
            elif now - self.acks_refused_at > ACKS_TAKEN_S:
                self._resync("shoe %s has refused this bridge's acks for %.0f s (it acks %d, the "
                             "store holds %d): asking for a fresh hello"
                             % (self.shoe_id, now - self.acks_refused_at, beat["acked"], stored))
        else:
            self.acks_refused_at = None

    def _ack(self, stored=None):
        """Ack the last stored seq (0 when this store has none of the shoe's
        events yet, which acknowledges nothing but answers a hello).
        ``stored``: that seq, when the caller has just committed it itself
        (a card's ack then costs no read of the store)."""
        self.ack_due = False
        if self.key is None or self.refuse or self.hello is None:
            return
        if stored is None:
            stored = self._stored() or 0
        self._send(host_frames.encode_ack(self.key, self.shoe_id, self.hello["nonce"], stored))

    # -- commands -----------------------------------------------------------

    def command(self, name, args=None):
        """Sign and send a pit command; return a one-line reply for the caller."""
        if self.key is None:
            return "error no key for this shoe (start the bridge with --key-file)"
        if self.hello is None or not self.attached:
            return "error the shoe is not connected"
        try:
            body = command_body(name, args)
        except (ValueError, proto.Rejected) as e:
            return "error %s" % e
        if self.shoe_clock is None:
            return ("error the shoe's clock is not known yet (no heartbeat since it connected); "
                    "try again in a second")
        t, at = self.shoe_clock
        deadline = host_frames.deadline_after(t, (time.monotonic() - at) * 1000)
        counter = self.counter + 1
        data = host_frames.encode_command(self.key, self.shoe_id, self.hello["nonce"], counter, body,
                                          deadline)
        self.counter = counter
        if not self._send(data):
            return "error the link failed while sending"
        self._log_link("command", "C%d %s" % (counter, body))
        log.info("sent command %d: %s", counter, body)
        return "ok sent %s as command %d" % (name, counter)

    def _note(self, event):
        """React to what the shoe says about this bridge's own frames, and
        to its tilt (a tilted shoe records no game: never RECORDING)."""
        if event.get("source") == "link" and event.get("type") == "tilt":
            self.tilted = shown(str(event.get("reason")), 120)
        elif event.get("source") == "link" and event.get("type") == "tilt_cleared":
            self.tilted = None
        if event.get("type") == "accepted" and _whole(event.get("counter")):
            self.counter = max(self.counter or 0, event["counter"])
        elif event.get("type") == "error" and event.get("reason") in ("replayed", "bad_mac"):
            # Another host spoke (counter), or our nonce is not the shoe's
            # current one (it said hello again, e.g. after a reboot, and we
            # missed it), or a device on the line sent it junk: the shoe's
            # verified hello resyncs both, and ``tick`` asks until one comes.
            # The key is right: the event that says so verified under it.
            self.ask_hello()

    def recording(self):
        """(True, what is recorded) or (False, why not), from what this
        bridge knows now; the first reason that applies is the one given,
        most specific first. The console, `--send status`/`state` and
        `shoe bridge --check` all show this, so they cannot disagree."""
        if self.key is None:
            return False, NO_KEY
        if self.busy:
            return False, self.busy
        if self.store_error:
            return False, self.store_error
        if self.refuse:
            return False, self.refuse
        if self.hello is None or self.state != "up":
            what = {"connecting": "waiting for the shoe's hello", "down": "not started"}.get(
                self.state, self.state)
            return False, "no link to the shoe (%s%s)" % (
                what, ": " + self.link_detail if self.link_detail and self.state != "connecting" else "")
        if self.stall:
            return False, self.stall[1]
        if self.mismatch:
            return False, "firmware_mismatch: " + self.mismatch
        if self.tilted is not None:
            return False, ("the shoe is tilted (%s): it records no game until a supervisor's clear_tilt"
                           % self.tilted)
        quiet = time.monotonic() - (self.fresh_at or 0.0)
        if quiet > STALE_S:
            return False, ("no heartbeat bound to this bridge's challenge and no new event for %.0f s: "
                           "the shoe is silent, or a device on the line withholds its frames or plays "
                           "old ones back" % quiet)
        stored = self.last_stored
        idle = time.monotonic() - self.progress_at
        if self.queued > 0 and idle > BEHIND_S:
            return False, ("the store is behind the shoe: the shoe holds %d unacknowledged events "
                           "and the store has not moved for %.0f s (stored through seq %s)"
                           % (self.queued, idle, stored if stored is not None else "none"))
        return True, "shoe %s on %s, stored through seq %s" % (
            self.shoe_id, self.port_path, stored if stored is not None else "none yet")

    def recording_line(self):
        """``RECORDING: ...`` or ``NOT RECORDING: <reason>``: one line."""
        ok, why = self.recording()
        return ("RECORDING: " if ok else "NOT RECORDING: ") + why

    def status(self):
        ok, why = self.recording()
        return {"link": self.state, "port": self.port_path, "shoe": self.shoe_id,
                "stored": self.last_stored, "counter": self.counter,
                "tilt": (self.hello or {}).get("tilt"), "refused": self.refuse,
                "recording": ok, "reason": why,
                "line": ("RECORDING: " if ok else "NOT RECORDING: ") + why,
                "queued": self.queued, "stats": dict(self.stats), "pid": os.getpid()}


def check_hello(hello):
    """events_schema.check_hello, and whole numbers SQLite can store."""
    return events_schema.check_hello(hello) or events_schema.out_of_range(hello)


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _clock(t):
    return time.strftime("%H:%M:%S", time.localtime(t)) + ("%.3f" % (t % 1))[1:]
