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

``step`` is the per-card path: two index reads and a compare, nothing
allocated, small ints only (tests/e2e/test_hot_path.py).
"""

from cardset import intake as _intake
from link import order as _order

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
        self.have = 0       # bit p-1 set: part p is in
        self.base = -1      # the order's index of the first card read, less cards read before it
        self.k = 0          # cards read in this shoe (the cover card aside)
        self.body = bytearray(9)  # a mismatch's journal record (baccarat/events.py MISMATCH_BYTES)

    # -- parts (a command, off the per-card path) -----------------------------

    def part(self, key_of, order_id, p, parts, n, nonce_hex, data):
        """One ``order`` command. Returns None while parts are missing, ""
        when the order is complete and opened, or a one-line reason it was
        refused. ``key_of(order_id)`` is the batch's key (link/order.key) or
        None without a pairing."""
        if self.state == _ARMED:
            return "a shoe is being dealt against order %s: an order is taken between shoes" % self.id
        if n < 1 or n > _order.MAX_RECORDS or parts != _order.parts_of(n) or p > parts:
            return "order %s: %d records in %d parts do not fit (at most %d records)" % (
                order_id, n, parts, _order.MAX_RECORDS)
        if order_id[:2] not in ("A-", "B-"):
            return "order %s: not a batch id" % order_id
        if self.state != _PARTS or order_id != self.id or n != self.n or nonce_hex != _hex(self.nonce):
            self.wipe()
            self.state = _PARTS
            self.id = order_id
            self.batch = 1 if order_id[0] == "A" else 2
            self.n = n
            self.parts = parts
            _unhex(nonce_hex, self.nonce, 0)
        lo = (p - 1) * _order.PART
        want = min(_order.PART, _order.sealed_size(n) - lo)
        if len(data) != 2 * want:
            return "order %s part %d: %d hex digits, expected %d" % (order_id, p, len(data), 2 * want)
        _unhex(data, self.buf, lo)
        self.have |= 1 << (p - 1)
        if self.have != (1 << parts) - 1:
            return None
        k = key_of(order_id)
        if k is None:
            self.wipe()
            return "order %s: this shoe is paired with no shuffler (no pairing secret)" % order_id
        if not _order.open_into(k, self.nonce, self.buf, n):
            self.wipe()
            return "order %s does not open under this shoe's pairing key (altered, or another pair)" % order_id
        self.state = _READY
        return ""

    def arm(self, batch):
        """A new shoe from ``batch``: checked when the order held is that
        batch's (True), else dealt unchecked (False)."""
        if self.state == _ARMED:
            self.wipe()  # the last shoe's order is spent
        if self.state != _READY or batch != self.batch:
            return False
        self.state = _ARMED
        self.base = -1
        self.k = 0
        return True

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


def _hex(b):
    return "".join(["%02x" % x for x in b])


def _nibble(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    raise ValueError("not a hex digit")


def _unhex(text, out, at):
    """Hex ``text`` into ``out`` from ``at``, with nothing allocated per byte."""
    if isinstance(text, str):
        text = text.encode()
    for q in range(len(text) // 2):
        out[at + q] = (_nibble(text[2 * q]) << 4) | _nibble(text[2 * q + 1])
