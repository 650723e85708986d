"""The real-time check: every card that leaves the shoe against the order
the shuffler committed (docs/shuffler.md, "The real-time check inside the
shoe"; the format is link/order.py).

The order arrives at the batch's release, sealed under a key the shoe and
its paired shuffler share and the pit does not, in parts the pit relays as
``order`` commands. It is kept in one buffer made at boot and opened there,
in place: the plain order is in RAM only, never on the flash, and is wiped
when its shoe ends or another order replaces it.

Ch 5B: the cut moves the cards above the cut card to the bottom, so the
dealt run is a rotation of the committed order. Card-set records are unique
per physical card, so the first card read (the exposed burn card, Ch 5F)
names the cut: its place in the order. From then on the k-th card read must
be the order's card k places further on, whatever it is (burn, hand,
discard, simulated); the cover card is not in the order and is not checked.
A card that differs is a substitution: it is reported, and the next card is
compared with the place after it, so a card swapped with another stops the
game at both places and a card replaced by an outsider at one.

Fresh and bound (docs/shuffler.md, "Fresh and bound"): every order carries
its serial, the shuffler chip's seal counter, bound into its key
(link/order.py). The shoe takes an order only when its serial is above that
of every order it dealt a shoe against (``floor``, restored at boot from the
journal's shoe record) and not below the one it holds; anything else is a
replayed or stale order, and one that does not open under this shoe's
pairing key is foreign: each is an irregularity (Ch 5H(4): the shoe cannot
vouch that the batch is the one the shuffler secured and released), and
the order is refused. A new shoe is armed only with the held order of its
batch, and only with the one the pit names when it names one; on a paired
shoe the ``shoe`` event says which order checks it, or why none does.

``step`` is the per-card path: two index reads and a compare, nothing
allocated, small ints only (tests/e2e/test_hot_path.py).
"""

import binascii

from baccarat import events as _events
from cardset import intake as _intake
from link import order as _order
from link import reports

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

OK = _intake.ORDER_OK  # step(): the card is the one the order has here
NOT_IN_ORDER = const(-2)  # step(): the first card is not in the order: no place to expect

_EMPTY = const(0)      # no order
_PARTS = const(1)      # parts arriving
_READY = const(2)      # opened, waiting for its shoe
_ARMED = const(3)      # checking the shoe in play


class OrderCheck:
    def __init__(self):
        self.buf = bytearray(_order.MAX_PARTS * _order.PART)
        self.nonce = bytearray(32)
        self.state = _EMPTY
        self.id = ""
        self.batch = 0      # 1 A, 2 B (registry.BATCH_*), from the id's letter
        self.n = 0
        self.parts = 0
        self.serial = 0     # the order's serial (the shuffler chip's seal counter)
        self.floor = 0      # the highest serial a shoe was dealt against: nothing at or below it is taken
        self.refused = 0    # the serial last reported refused: one irregularity per order, not per part
        self.have = 0       # bit p-1 set: part p is in
        self.base = -1      # the order's index of the first card read, less cards read before it
        self.k = 0          # cards read in this shoe (the cover card aside)
        self.last = -1      # the record read last: the same card read twice is one card
        self.body = bytearray(9)  # a mismatch's journal record (baccarat/events.py MISMATCH_BYTES)

    # -- parts (a command, off the per-card path) -----------------------------

    def command(self, s, args, between):
        """One ``order`` command on session ``s`` (link/session.py); ``between``
        when no shoe is in play. Refusals are ``wrong_state`` errors; the
        last part, once opened, is answered by an ``order`` link event."""
        if between:
            self.end()  # the shoe it checked is over
        n = args["n"]
        why = self.part(s, args["id"], args["part"], _order.parts_of(n), n, args["serial"], args["nonce"],
                        args["data"])
        if why is False:
            return  # a refused order's further parts: its irregularity said why
        if why:
            s._error("wrong_state", "order %s: %s" % (args["id"], why), "order")
        elif why is not None:
            o = reports.begin(s, b"order")
            o.raw(b',"id":')
            o.text(self.id)
            o.raw(b',"n":')
            o.int(self.n)
            o.raw(b',"serial":')
            o.int(self.serial)
            s.link_send()

    def _refuse(self, s, rule, order_id, serial, why):
        """An order refused as stale or foreign: an irregularity, once per
        order (its serial); False, so its later parts pass silently."""
        if serial != self.refused:
            self.refused = serial
            s.alert(rule, -1, "order %s (serial %d) refused: %s" % (order_id, serial, why))
        return False

    def part(self, s, order_id, p, parts, n, serial, nonce_hex, data):
        """None while parts are missing, "" once the order is complete and
        opened, False when it was refused as an irregularity, else why it
        was refused."""
        if self.state == _ARMED:
            return "the shoe in play is checked against order %s; an order is taken between shoes" % self.id
        if parts != _order.parts_of(n) or p > parts or order_id[:2] not in ("A-", "B-"):
            return "not a batch's order (id, records and parts do not fit)"
        # Fresh: the serial claimed is checked before anything held is
        # touched (a lower claim cannot be an honest newer order), and it is
        # bound into the key, so an order that opens carries its own.
        if serial <= self.floor:
            return self._refuse(s, _events.ORDER_STALE, order_id, serial,
                                "a shoe was already dealt against serial %d; replayed or stale" % self.floor)
        if self.state == _READY and (serial < self.serial or (serial == self.serial and order_id != self.id)):
            return self._refuse(s, _events.ORDER_STALE, order_id, serial,
                                "this shoe holds the newer order %s (serial %d); replayed or stale"
                                % (self.id, self.serial))
        nonce = binascii.unhexlify(nonce_hex)
        if self.state != _PARTS or order_id != self.id or n != self.n or nonce != self.nonce or serial != self.serial:
            self.wipe()
            self.state = _PARTS
            self.id = order_id
            self.batch = 1 if order_id[0] == "A" else 2
            self.n = n
            self.serial = serial
            self.nonce[:] = nonce
        lo = (p - 1) * _order.PART
        if len(data) != 2 * min(_order.PART, _order.sealed_size(n) - lo):
            return "part %d has the wrong length" % p
        self.buf[lo:lo + len(data) // 2] = binascii.unhexlify(data)
        self.have |= 1 << (p - 1)
        if self.have != (1 << parts) - 1:
            return None
        pair = s.board.pairing() if hasattr(s.board, "pairing") else None
        if pair is None:
            self.wipe()
            return "this shoe is paired with no shuffler"
        k = _order.key(pair[1], pair[0], s.shoe_id, order_id, serial, s.intake.registry.digest())
        if not _order.open_into(k, self.nonce, self.buf, n):
            self.wipe()
            return self._refuse(s, _events.ORDER_FOREIGN, order_id, serial,
                                "it does not open under this shoe's pairing key (altered, another shoe's "
                                "or another pair's)")
        self.state = _READY
        return ""

    def note(self, reg, want, got, admit):
        """The journal body of a mismatch at this card (baccarat/events.py
        MISMATCH_BYTES): record ``want`` expected (NOT_IN_ORDER: none),
        ``got`` read (-1: an unknown ID), ``admit`` when the card is dealt."""
        m = self.body
        m[0] = (self.k >> 8) & 0xFF
        m[1] = self.k & 0xFF
        at = 2
        for i in (want, got):
            if 0 <= i < reg.count:
                m[at] = reg.card(i)
                m[at + 1] = reg.deck(i)
                m[at + 2] = reg.batch(i)
            else:
                m[at] = m[at + 1] = m[at + 2] = 0xFF
            at += 3
        m[8] = 1 if admit else 0
        return m

    def arm(self, s, batch, named=""):
        """A new shoe from ``batch`` on session ``s``: checked when the order
        held is that batch's (and the one the pit named, if it named one).
        Returns the ``shoe`` event's order fields as JSON bytes: the order
        and its serial, or on a paired shoe ``"order":null`` and why it is
        dealt unchecked; nothing on a shoe paired with no shuffler."""
        if self.state == _ARMED:
            self.wipe()  # the last shoe's order is spent
        if self.state == _READY and batch == self.batch and (not named or named == self.id) \
                and self.serial > self.floor:
            self.state = _ARMED
            self.floor = self.serial
            self.base = -1
            self.k = 0
            self.last = -1
            return b',"order":"' + self.id.encode() + b'","serial":' + str(self.serial).encode()
        if (s.board.pairing() if hasattr(s.board, "pairing") else None) is None:
            return b""
        if self.state != _READY:
            why = b"no order from the paired shuffler"
        elif batch != self.batch:
            why = b"the order held is " + self.id.encode() + b", not of batch " + b"AB"[batch - 1:batch]
        else:
            why = b"the pit named " + named.encode() + b"; the order held is " + self.id.encode()
        return b',"order":null,"unchecked":"' + why + b'"'

    def journaled(self, body, checked):
        """A NEW_SHOE record's body (link/journal.py shoe_body) with the shoe
        event's order fields after the settings text and a NUL, so the
        journal's replay writes the same event and restores ``floor``.
        Here, not in the journal module, which the shuffler loads too."""
        return body + b"\x00" + checked

    def unjournaled(self, settings):
        """(settings text, order fields as bytes) of a NEW_SHOE record's text."""
        cut = settings.find("\x00")
        if cut < 0:
            return settings, b""
        return settings[:cut], settings[cut + 1:].encode()

    def dealt(self, checked):
        """A shoe record's order fields, replayed from the journal at boot:
        no order at or below its serial is taken again."""
        at = checked.find(b'"serial":')
        if at < 0:
            return
        v = 0
        for c in checked[at + 9:]:
            if c < 48 or c > 57:
                break
            v = 10 * v + c - 48
        if v > self.floor:
            self.floor = v

    def armed(self):
        return self.state == _ARMED

    def end(self):
        """The shoe in play ended: its order is no longer needed."""
        if self.state == _ARMED:
            self.wipe()

    def wipe(self):
        buf = self.buf
        for i in range(len(buf)):
            buf[i] = 0
        self.state = _EMPTY
        self.have = 0
        self.base = -1
        self.k = 0

    # -- the per-card path ----------------------------------------------------

    def step(self, i):
        """Card-set record ``i`` (-1: an ID the set does not know) left the
        shoe: OK, or the record the order expected here, or NOT_IN_ORDER
        when the first cards read are not in the order. ``self.k`` is then
        this card's position (1-based) in the shoe."""
        if i == self.last and i >= 0:
            return OK  # the card just read, read again (it lingered at the antenna): no new card
        self.last = i
        n = self.n
        k = self.k
        self.k = k + 1
        buf = self.buf
        if self.base < 0:
            if i >= 0:
                j = 0
                while j < n:
                    if ((buf[2 * j] << 8) | buf[2 * j + 1]) == i:
                        self.base = j - k
                        while self.base < 0:
                            self.base += n
                        return OK
                    j += 1
            return NOT_IN_ORDER
        j = self.base + k
        while j >= n:
            j -= n
        want = (buf[2 * j] << 8) | buf[2 * j + 1]
        return OK if want == i else want

