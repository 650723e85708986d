"""The shuffler as a machine: the custody core driven by the mechanism, one
card per call of ``step()`` so the main loop keeps the link and the watchdog
served while a batch runs.

A batch goes through the machine in two passes (docs/shuffler.md, "The
mechanism model"):

1. the check pass: every card is fed from the intake tray past the reader
   and the back sensor into the bottom gap of the elevator (the stack keeps
   the feed order) and judged by the batch check; when the tray is empty the
   batch is checked or rejected;
2. the shuffle pass: a checked stack is pushed back into the tray, the core
   decides the gaps (fresh entropy), and each card is fed again into its
   gap. Each card is read again and must be the card the check pass read at
   that place: anything else (a double feed the sensor missed, a card slipped
   in) is a fault. Then the stack is sealed: the door stays locked and only
   (batch id, commitment) leaves the machine.

Buttons (the operator's, or the emulator's operator channel): ``load A|B``
starts a batch; when the other batch is sealed inside and this one comes
back from the shoe, the sealed one is released first (it goes to the shoe
as this one is fed). ``release`` hands the sealed batch to the shoe. The
door switch is watched on every pass: opened while a batch is inside, it
breaks custody. A mechanism fault stops the feed and breaks custody. Every
custody change is journaled (the snapshot file) and sent on the link.
"""

import json
import os
from array import array

from baccarat import cards as _cards
from shuffler import commit as _commit
from shuffler import custody, elevator
from shuffler import seal as _seal   # resident: loading code at a seal, in a heap of holes, could fail

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

IDLE = 0
CHECK = 1
SHUFFLE = 2

STATE_FILE = "custody.json"
# Event sizes (the fields are in shuffler/schema.py, which only the host loads).
_REVEAL_PART = const(48)  # records per reveal event (4 hex digits and a name each): well inside a frame
_RETURNED_PART = const(48)  # card names and records per returned event
_READ_SLACK = const(32)  # reads kept beyond the batch's size in a check pass


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


class Device:
    def __init__(self, board, session, registry, max_cards=custody._batch.MAX_CARDS):
        self.board = board
        self.session = session
        self.registry = registry
        self.mech = elevator.Elevator(board.hw)
        self.door = board.door
        self.state_path = board.state_path
        self.tag = bytearray(32)
        # Records as read in the check pass, one buffer per batch: a returned
        # batch's read-back is the order its next shuffle pass feeds, so it
        # is only committed when read (returned_commit) and kept here until
        # that batch's next load, when it is revealed (_send_returned).
        # Room for the batch and _READ_SLACK more reads (foreign or extra cards;
        # beyond those a batch is rejected anyway and further reads are not
        # kept): two of these fit the heap where two of twice the batch did not.
        size = 2 * (max_cards + _READ_SLACK)
        self.read_orders = [None, array("H", bytes(size)), array("H", bytes(size))]
        self.read_order = self.read_orders[1]
        self.reads = 0
        self.pending = [False, False, False]          # a committed read-back not yet revealed
        self.ret_n = [0, 0, 0]
        self.ret_id = [None, None, None]
        self.ret_salt = [None, bytearray(_commit.SALT_BYTES), bytearray(_commit.SALT_BYTES)]
        self.ret_commit = [None, None, None]
        self.returning = 0   # the batch being checked came back from the shoe
        self.phase = IDLE
        self.batch = 0
        self.i = 0
        self.n = 0
        self.door_was_shut = True
        self.machine = None
        self.max_cards = max_cards

    # -- start ----------------------------------------------------------------

    def start(self):
        """Entropy start-up test, custody restored after a power cut, home."""
        from shuffler import health, shuffle
        try:
            decider = shuffle.Decider(self.board.entropy(), self.max_cards)
            fault = None
        except health.EntropyFault as e:
            decider, fault = None, e
        self.machine = custody.Shuffler(self.registry, decider, self.max_cards)
        restored = _exists(self.state_path)
        self.session.send({"type": "shuffler_boot", "decks": self.registry.decks(custody.A),
                           "restored": restored})
        if restored:
            with open(self.state_path) as f:
                saved = json.load(f)
            self._send(self.machine.power_up(saved, self._sealing_key()))
        if fault is not None:
            self._send(self.machine.entropy_fault(fault))
        try:
            self.mech.home()
        except elevator.MechFault as e:
            self._fault(e.reason)
        self.door_was_shut = self.door.shut()
        self._send_door()

    # -- persistence and events -----------------------------------------------

    def _save(self):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(self.machine.snapshot(self._sealing_key())))
            f.flush()
        os.rename(tmp, self.state_path)

    def _sealing_key(self):
        """The key the vault seals a released order under (shuffler/vault.py):
        the board's, never a file on this flash; None when the board has none."""
        get = getattr(self.board, "sealing_key", None)
        return get() if get is not None else None

    def _send(self, events):
        changed = False
        for ev in events:
            if ev.get("type") in ("custody", "tilt", "tilt_cleared"):
                changed = True
        if changed:
            self._save()  # the state first: a power cut after it loses nothing the events claim
        self.session.send_all(events)
        return events

    def _send_door(self):
        self.session.send({"type": "door", "shut": self.door.shut(), "locked": self.door.locked()})

    def _moved(self, events, to):
        return bool(events) and events[-1].get("type") == "custody" and events[-1].get("to") == to

    # -- status LEDs ------------------------------------------------------------

    def sealed(self):
        m = self.machine
        return m is not None and (m.state[custody.A] == custody.SEALED or m.state[custody.B] == custody.SEALED)

    def faulted(self):
        m = self.machine
        return m is None or m.tilt is not None or \
            m.state[custody.A] == custody.BROKEN or m.state[custody.B] == custody.BROKEN

    # -- buttons --------------------------------------------------------------

    def button(self, text):
        words = text.split()
        if not words:
            return
        if words[0] == "load" and len(words) == 2 and words[1] in ("A", "B"):
            self.load(custody.A if words[1] == "A" else custody.B)
        elif words[0] == "release":
            self.release()
        elif words[0] == "clear":
            self.clear_tilt()
        else:
            self.session.error("operator: unknown button %r" % text)

    def load(self, b):
        m = self.machine
        if self.phase != IDLE:
            self.session.error("operator: load refused, a batch is running")
            return
        other = custody.B if b == custody.A else custody.A
        was = m.state[b]
        events = self._send(m.load(b))
        if not self._moved(events, custody.LOADING):
            return
        if was == custody.RELEASED:
            self._reveal(b)
        if self.pending[b]:
            # The order the last read-back fed has been revealed (or was
            # broken, rejected: void), so the read-back may be too.
            self._send_returned(b)
            self.pending[b] = False
        if m.state[other] == custody.SEALED:
            # The stored batch goes to the shoe as this one comes back.
            self.release(other)
        self.door.lock()
        self._send_door()
        self.returning = b if was == custody.RELEASED else 0
        self.batch = b
        self.phase = CHECK
        self.i = 0
        self.reads = 0
        self.read_order = self.read_orders[b]
        self._to_gap(0, 0)

    def release(self, b=0):
        m = self.machine
        if b == 0:
            # The sealed batch; without one, the batch inside, so that the
            # refusal names the state that keeps it in.
            b = custody.B
            for c in (custody.A, custody.B):
                if m.state[c] == custody.SEALED:
                    b = c
                    break
            else:
                if m.state[custody.A] not in (custody.EMPTY, custody.RELEASED):
                    b = custody.A
        events = self._send(m.release(b))
        if self._moved(events, custody.RELEASED):
            self._send_order(b)
            self.mech.eject(True)
            self.board.delivered()

    def _send_order(self, b):
        """The released batch's order for the shoe (link/order.py): sealed
        under the key the shuffler and its paired shoe share, in parts the
        pit relays unread. Without a pairing nothing is sent, and the shoe
        deals that batch unchecked."""
        get = getattr(self.board, "pairing", None)
        pair = get() if get is not None else None
        if pair is None:
            return
        # The order's serial (link/order.py) is its seal's chip counter: the
        # chip's counter 1 as it stands, since the batch released is always
        # the last one sealed (load releases a sealed batch before the one
        # coming back can be sealed; a power cut or a door breaks a seal).
        # Read, not kept: one more attribute here costs the 32-bit board
        # about 112 bytes (docs/shuffler.md, "Footprint"). A chip that does
        # not answer sends no order: the shoe says it deals unchecked.
        try:
            serial = self.board.secure_element.counter(1, False)
        except Exception:  # SecureElementFault or the bus's OSError
            return
        from link import order as _order
        peer, secret = pair
        m = self.machine
        n = m.size[b]
        bid = m.batch_id[b]
        nonce = m.commitment[b]
        k = _order.key(secret, self.session.shoe_id, peer, bid, serial, self.registry.digest())
        blob = _order.seal(k, nonce, m.records[b], n)
        parts = _order.parts_of(n)
        nonce_hex = _commit.hexlify(nonce)
        for p in range(parts):
            lo = p * _order.PART
            self.session.send({"type": _order.NAME, "batch": custody._name(b), "id": bid, "shoe": peer,
                               "part": p + 1, "parts": parts, "n": n, "serial": serial, "nonce": nonce_hex,
                               "data": _commit.hexlify(blob[lo:lo + _order.PART])})

    def clear_tilt(self):
        from shuffler import health, shuffle
        try:
            decider = shuffle.Decider(self.board.entropy(), self.max_cards)
        except health.EntropyFault as e:
            self.session.error("clear refused: the entropy source fails its start-up test (%s)"
                               % getattr(e, "reason", e))
            return
        self._send(self.machine.clear_tilt(decider))

    # -- the reveal -----------------------------------------------------------

    def _reveal(self, b):
        """The order, salt and commitment of a batch back from the shoe, in
        parts. Read straight from custody's records: no list of the whole
        batch is made (the heap at the board's budget has no room to spare)."""
        m = self.machine
        if b not in (custody.A, custody.B) or not m.revealable[b]:
            return
        recs = m.records[b]
        n = m.size[b]
        name = custody._name(b)
        salt = _commit.hexlify(m.salt[b])
        commitment = _commit.hexlify(m.commitment[b])
        part = _REVEAL_PART
        parts = (n + part - 1) // part
        for k in range(parts):
            lo = k * part
            hi = min(n, lo + part)
            self.session.send({"type": "reveal", "batch": name, "id": m.batch_id[b], "part": k + 1,
                               "parts": parts, "from": lo, "n": n, "salt": salt,
                               "commitment": commitment,
                               "records": "".join(["%04x" % recs[i] for i in range(lo, hi)]),
                               "cards": [self._name(recs[i]) for i in range(lo, hi)]})
        self._signed(())   # and a checkpoint over the reveal

    def _signed(self, events):
        """The seal event signed by the board's secure element (shuffler/
        seal.py; without one it says so, and the audit will not take its
        commitment), and a checkpoint asked of the link over what is sent
        (shuffler/link.py; a fake link without one, as
        host_tools/qa/shuffler_heap32.py's, is passed by): at a seal, and at the end of a reveal (no events)."""
        se = getattr(self.board, "secure_element", None)
        for ev in events:
            if ev.get("type") == "custody" and ev.get("to") == custody.SEALED:
                if se is None:
                    ev["unsigned"] = "no secure element"
                else:
                    _seal.sign(se, self.session.shoe_id, ev)
        want = getattr(self.session, "want_checkpoint", None)
        if want is not None:
            want()
        return events

    def _name(self, r):
        reg = self.registry
        return _cards.name(reg.card(r)) if r < reg.count and reg.card(r) < 52 else "??"

    def _commit_returned(self, b):
        """The returned batch's read-back, committed at once (salt from the
        DRBG, commit.py's layout over the read records, id "A-1/returned")
        and kept for the reveal at the batch's next load: read now, it is
        the exact order the next shuffle pass feeds."""
        m = self.machine
        try:
            m.decider.drbg.generate_into(self.ret_salt[b])
        except Exception as e:  # health.EntropyFault: tilt, as custody does for a salt
            self._send(m.entropy_fault(e))
            return
        bid = m.batch_id[b]
        n = self.reads
        self.ret_n[b] = n
        self.ret_id[b] = bid
        self.ret_commit[b] = _commit.hexlify(_commit.digest(self.ret_salt[b], bid + _commit.RETURNED_SUFFIX,
                                                            self.read_orders[b], n))
        self.pending[b] = True
        self.session.send({"type": "returned_commit", "batch": custody._name(b), "id": bid, "n": n,
                           "commit": self.ret_commit[b]})

    def _send_returned(self, b):
        """The order the returned cards were read in, with the salt that
        opens its returned_commit, one part at a time."""
        n = self.ret_n[b]
        reads = self.read_orders[b]
        part = _RETURNED_PART
        parts = max(1, (n + part - 1) // part)
        bid = self.ret_id[b]
        salt = _commit.hexlify(self.ret_salt[b])
        for k in range(parts):
            lo = k * part
            hi = min(n, lo + part)
            self.session.send({"type": "returned", "batch": custody._name(b), "id": bid, "part": k + 1,
                               "parts": parts, "from": lo, "n": n, "salt": salt,
                               "commit": self.ret_commit[b],
                               "records": "".join(["%04x" % reads[i] for i in range(lo, hi)]),
                               "cards": [self._name(reads[i]) for i in range(lo, hi)]})

    # -- the loop ---------------------------------------------------------------

    def step(self):
        """Watch the door, then feed one card of a running batch."""
        shut = self.door.shut()
        if shut != self.door_was_shut:
            self.door_was_shut = shut
            self._send_door()
            if not shut:
                self._send(self.machine.door_open())
                self._stop()
        if self.phase == IDLE:
            return
        try:
            if self.phase == CHECK:
                self._check_one()
            else:
                self._shuffle_one()
        except Exception as e:  # a bug mid-batch: nobody can vouch for the stack now
            self._fault("internal: %s" % e)

    def _stop(self):
        if self.phase != IDLE:
            self.phase = IDLE
            self.door.unlock()
            self._send_door()

    def _fault(self, reason):
        b = self.batch if self.phase != IDLE else 0
        self.session.send({"type": "mech_fault", "reason": reason,
                           "batch": custody._name(b) if b else None, "card": self.i})
        self._send(self.machine.fault(reason))
        self._stop()

    def _to_gap(self, i, g):
        """False after a fault (reported). No *args: a card's path allocates nothing."""
        try:
            return self.mech.to_gap(i, g)
        except elevator.MechFault as e:
            self._fault(e.reason)
            return False

    def _feed(self):
        """The tag's length, or 0 after a fault (reported)."""
        try:
            return self.mech.feed_one(self.tag)
        except elevator.MechFault as e:
            self._fault(e.reason)
            return 0

    def _check_one(self):
        m = self.machine
        b = self.batch
        mech = self.mech
        if not mech.cards_waiting():
            if self.returning:
                self._commit_returned(b)
            events = self._send(m.end(b))
            if self._moved(events, custody.CHECKED):
                self.n = m.size[b]
                mech.eject(False)  # back into the tray for the shuffle pass
                events = self._send(m.shuffle(b))
                if self._moved(events, custody.SHUFFLING):
                    self.phase = SHUFFLE
                    self.i = 0
                    return
            self._stop()
            if m.state[b] == custody.REJECTED:
                mech.eject(True)  # out to the operator, who corrects and feeds it again
                self.board.delivered()
            return
        # The bottom gap of an i-card stack is at the same height for every i.
        got = self._feed()
        if not got:
            return
        r = self.registry.find(self.tag, got)
        if self.reads < len(self.read_order):
            self.read_order[self.reads] = r if r >= 0 else 0xFFFF
            self.reads += 1
        self.i += 1
        # An unknown tag goes in by its bytes, so that the event names it.
        self._send(m.read(r, mech.colour) if r >= 0 else m.read_id(self.tag, got, mech.colour))

    def _shuffle_one(self):
        m = self.machine
        b = self.batch
        i = self.i
        if i >= self.n:
            self._send(m.shuffled(b))
            events = self._send(self._signed(m.seal(b)))
            self.phase = IDLE
            if not self._moved(events, custody.SEALED):
                self.door.unlock()
            self._send_door()
            return
        mech = self.mech
        if not self._to_gap(i, m.decider.gaps[i]):
            return
        got = self._feed()
        if not got:
            return
        if self.registry.find(self.tag, got) != m.check.fed[i]:
            self._fault("intake_mismatch")
            return
        self.i = i + 1
