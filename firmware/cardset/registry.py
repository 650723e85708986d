"""The card-set file and the registry built on it (format: docs/cardset.md).

The shoe must turn a reader ID into a card on a board with 128-190 KiB of heap,
so the registry is the file's own bytes: fixed-size records sorted by ID and
found by binary search. No dict, no per-card objects, nothing allocated per
lookup. The pit PC writes the same format with ``encode`` so that the layout
is defined once, here, for both sides.
"""

import hashlib

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAGIC = b"SHCS"
_VERSION = const(1)
_HEADER_SIZE = const(16)
_DIGEST_SIZE = const(32)

# What the IDs are. Only informative for the shoe (a UID and a code are both
# just bytes to the lookup), but it lets a shoe refuse a set enrolled for the
# other kind of reader instead of calling every card unknown.
KIND_UID = const(1)
KIND_CODE = const(2)

# Batch numbers equal the back sensor's back-colour codes (drivers.tcs34725
# BACK_A/BACK_B) on purpose: a batch is defined by its back colour (Ch 3B).
BATCH_A = const(1)
BATCH_B = const(2)

MAX_ID = const(32)     # longest ID: a 7-byte UID or a printed code
MAX_DECKS = const(16)  # both batches together
CARDS_PER_DECK = const(52)

# The cover card (Ch 9D) carries its own tag or printed code, which the shoe
# must know to end the shoe, so it is enrolled like a card: card COVER, deck 0,
# batch 0 (it belongs to the table, not to a batch). A table uses two, the cut
# card and the second cover card (Ch 3A(2), 5B(4), 5C(1)); eight leaves room for
# spares and for each batch having its own.
COVER = const(0xFF)
MAX_COVERS = const(8)

# Record: [ID length][ID, zero padded to width][card 0..51 or COVER][deck 1..][batch]
_EXTRA = const(4)


class CardSetError(ValueError):
    """The card-set file is not one the shoe may deal from."""


def check_covers(n):
    """Refuse a cover-card count the shoe does not take (reader and writer)."""
    if not 0 <= n <= MAX_COVERS:
        raise CardSetError("card set: %d cover cards, the shoe takes 0..%d" % (n, MAX_COVERS))


def batch_name(batch):
    return "AB"[batch - 1] if batch in (BATCH_A, BATCH_B) else "?"


class Registry:
    """ID -> (card, deck, batch) for one verified card-set file; ``card(i)``
    is COVER for a cover card."""

    def __init__(self, data):
        self._data = data
        # The digest goes first so that a damaged file is reported as damaged
        # rather than as whatever its flipped bits happen to say.
        if len(data) < _HEADER_SIZE + _DIGEST_SIZE or bytes(data[0:4]) != MAGIC:
            raise CardSetError("card set: not a card-set file (no SHCS header)")
        self._check_digest()
        self._check_header()
        self._check_records()

    def _check_header(self):
        d = self._data
        if d[4] != _VERSION:
            raise CardSetError("card set: version %d, this shoe reads %d" % (d[4], _VERSION))
        if d[5] not in (KIND_UID, KIND_CODE):
            raise CardSetError("card set: unknown ID kind %d" % d[5])
        if not 1 <= d[6] <= MAX_ID:
            raise CardSetError("card set: ID width %d outside 1..%d" % (d[6], MAX_ID))
        if d[7] or d[13] or d[14] or d[15]:
            raise CardSetError("card set: reserved header bytes are not zero")
        check_covers(d[12])
        self.kind = d[5]
        self.width = d[6]
        self.size = d[6] + _EXTRA
        self.count = d[8] | (d[9] << 8)
        self.decks_a = d[10]
        self.decks_b = d[11]
        self.covers = d[12]
        decks = self.decks_a + self.decks_b
        if decks < 1 or decks > MAX_DECKS:
            raise CardSetError("card set: %d decks, the shoe takes 1..%d" % (decks, MAX_DECKS))
        if self.count != decks * CARDS_PER_DECK + self.covers:
            raise CardSetError("card set: %d records for %d decks and %d cover cards"
                               % (self.count, decks, self.covers))
        want = _HEADER_SIZE + self.count * self.size + _DIGEST_SIZE
        if len(d) != want:
            raise CardSetError("card set: %d bytes, header says %d" % (len(d), want))

    def _check_digest(self):
        end = len(self._data) - _DIGEST_SIZE
        digest = hashlib.sha256(memoryview(self._data)[:end]).digest()
        if digest != bytes(self._data[end:]):
            raise CardSetError("card set: SHA-256 mismatch, the file is corrupt")

    def _check_records(self):
        # Each (batch, deck, card) exactly once, exactly ``covers`` cover
        # records, and IDs strictly ascending: with the record count fixed by
        # the header, a lookup can never be ambiguous and no card of a deck
        # is absent.
        d = self._data
        w = self.width
        covers = 0
        seen = bytearray((MAX_DECKS * 2 * CARDS_PER_DECK + 7) >> 3)
        for i in range(self.count):
            at = _HEADER_SIZE + i * self.size
            n = d[at]
            if not 1 <= n <= w:
                raise CardSetError("card set: record %d has ID length %d" % (i, n))
            for k in range(at + 1 + n, at + 1 + w):
                if d[k]:
                    raise CardSetError("card set: record %d has non-zero padding" % i)
            if i and self._compare_records(at - self.size, at) >= 0:
                raise CardSetError("card set: record %d is out of order or a repeated ID" % i)
            card, deck, batch = d[at + 1 + w], d[at + 2 + w], d[at + 3 + w]
            if card == COVER:
                if deck or batch:
                    raise CardSetError("card set: record %d is a cover card with deck %d batch %d, "
                                       "not deck 0 batch 0" % (i, deck, batch))
                covers += 1
                continue
            top = self.decks_a if batch == BATCH_A else self.decks_b if batch == BATCH_B else 0
            if card >= CARDS_PER_DECK or not 1 <= deck <= top:
                raise CardSetError("card set: record %d names card %d deck %d batch %d"
                                   % (i, card, deck, batch))
            bit = ((batch - 1) * MAX_DECKS + deck - 1) * CARDS_PER_DECK + card
            if seen[bit >> 3] & (1 << (bit & 7)):
                raise CardSetError("card set: card %d of deck %d batch %s enrolled twice"
                                   % (card, deck, batch_name(batch)))
            seen[bit >> 3] |= 1 << (bit & 7)
        if covers != self.covers:
            raise CardSetError("card set: %d cover-card records, the header says %d"
                               % (covers, self.covers))

    def _compare_records(self, a, b):
        d = self._data
        for k in range(self.width + 1):
            x = d[a + k] - d[b + k]
            if x:
                return x
        return 0

    def find(self, buf, n):
        """Record index of ID ``buf[:n]``, or -1. Allocation free: it runs per card."""
        d = self._data
        size = self.size
        lo = 0
        hi = self.count
        while lo < hi:
            mid = (lo + hi) >> 1
            at = _HEADER_SIZE + mid * size
            c = d[at] - n
            k = 0
            while not c and k < n:
                c = d[at + 1 + k] - buf[k]
                k += 1
            if not c:
                return mid
            if c < 0:
                lo = mid + 1
            else:
                hi = mid
        return -1

    def digest(self):
        """The file's SHA-256 (its last 32 bytes): names this exact set."""
        d = self._data
        return bytes(d[len(d) - _DIGEST_SIZE:])

    def card(self, i):
        return self._data[_HEADER_SIZE + i * self.size + 1 + self.width]

    def deck(self, i):
        return self._data[_HEADER_SIZE + i * self.size + 2 + self.width]

    def batch(self, i):
        return self._data[_HEADER_SIZE + i * self.size + 3 + self.width]

    def decks(self, batch):
        return self.decks_a if batch == BATCH_A else self.decks_b

    def id_of(self, i, buf):
        """Copy record i's ID into buf and return its length (for reports)."""
        at = _HEADER_SIZE + i * self.size
        n = self._data[at]
        for k in range(n):
            buf[k] = self._data[at + 1 + k]
        return n


def load(path):
    """Read and verify a card-set file; raise CardSetError or OSError."""
    with open(path, "rb") as f:
        return Registry(f.read())


def encode(kind, entries, decks_a, decks_b):
    """Build a card-set file from ``(id_bytes, card, deck, batch)`` entries,
    a cover card being ``(id_bytes, COVER, 0, 0)``.

    Used by the enrollment station on the pit PC; the shoe only reads. The
    result is run through ``Registry`` so a writer bug cannot produce a file
    the shoe would refuse.
    """
    width = 1
    for e in entries:
        if len(e[0]) > width:
            width = len(e[0])
    if width > MAX_ID:
        raise CardSetError("card set: an ID of %d bytes is longer than %d" % (width, MAX_ID))
    covers = 0
    keyed = []
    for e in entries:
        if e[1] == COVER:
            covers += 1
        key = bytes([len(e[0])]) + bytes(e[0]) + bytes(width - len(e[0]))
        keyed.append((key, e[1], e[2], e[3]))
    check_covers(covers)
    keyed.sort()
    out = bytearray(MAGIC)
    out.extend(bytes([_VERSION, kind, width, 0, len(keyed) & 0xFF, len(keyed) >> 8,
                      decks_a, decks_b, covers, 0, 0, 0]))
    for key, card, deck, batch in keyed:
        out.extend(key)
        out.extend(bytes([card, deck, batch]))
    out.extend(hashlib.sha256(out).digest())
    data = bytes(out)
    Registry(data)
    return data
