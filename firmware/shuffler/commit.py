"""The commitment to a sealed batch's order (issue 14 item 6; docs/shuffler.md).

No card order leaves the shuffler in the clear. When a batch is sealed the
shuffler publishes only ``(batch id, H)``; after the shoe ends it reveals the
order and the salt, and anyone can recompute H. The salt (16 bytes from the
DRBG, fresh per batch) is what keeps H from being opened by trying orders:
without it, a guessed order (for example the feed order, or an order leaked
by a stacked shoe) could be checked against H before the shoe ends.

The byte layout is defined here and nowhere else (host_tools/shuffler/
audit.py imports this module)::

    H = SHA-256( TAG                     b"baccarat shuffler commit v1\\x00" (28 bytes)
               || salt                   16 bytes
               || u8 len(batch id)       1..MAX_ID_LEN
               || batch id               ASCII, e.g. b"A-3"
               || u16 n                  cards in the order, big-endian
               || u16 record[0..n-1] )   card-set record numbers, top card first, big-endian

The lengths make the split between fields unambiguous, so no two different
(salt, id, order) triples hash the same bytes. Card-set record numbers name
the physical card (deck and card), not just its rank and suit, so a card
of another deck of the batch cannot stand in for it.
"""

import binascii
import hashlib

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

TAG = b"baccarat shuffler commit v1\x00"
SALT_BYTES = const(16)
MAX_ID_LEN = const(32)
DIGEST_BYTES = const(32)
# A returned batch's read-back (the cards as read back at the intake) is
# committed with this layout too, under the batch id plus this suffix
# ("A-1/returned"), so that it can never open a seal's commitment.
RETURNED_SUFFIX = "/returned"


class CommitError(ValueError):
    """Arguments no commitment can be made from."""


def digest(salt, batch_id, records, n=-1):
    """H over records[0..n-1] (all of them by default). ``batch_id`` is str
    or bytes; ``records`` any indexable of ints 0..65535 (an array("H")
    works, so the shuffler hashes its order buffer in place)."""
    if len(salt) != SALT_BYTES:
        raise CommitError("salt must be %d bytes, not %d" % (SALT_BYTES, len(salt)))
    if isinstance(batch_id, str):
        batch_id = batch_id.encode()
    if not 1 <= len(batch_id) <= MAX_ID_LEN:
        raise CommitError("batch id must be 1..%d bytes" % MAX_ID_LEN)
    if n < 0:
        n = len(records)
    if n > 0xFFFF:
        raise CommitError("too many cards")
    h = hashlib.sha256(TAG)
    h.update(salt)
    h.update(bytes([len(batch_id)]))
    h.update(batch_id)
    two = bytearray(2)
    two[0] = n >> 8
    two[1] = n & 0xFF
    h.update(two)
    # Hash in chunks of 64 records: bounded memory whatever the batch size.
    chunk = bytearray(128)
    i = 0
    while i < n:
        k = 0
        while k < 64 and i < n:
            r = records[i]
            if not 0 <= r <= 0xFFFF:
                raise CommitError("record %d out of range" % r)
            chunk[2 * k] = r >> 8
            chunk[2 * k + 1] = r & 0xFF
            k += 1
            i += 1
        h.update(chunk if k == 64 else memoryview(chunk)[:2 * k])
    return h.digest()


def hexlify(b):
    """Lower-case hex text of ``b``: one block of 2n bytes (a list of n
    two-digit strings took 8 KiB in the 64-bit VM for a sealed 8-deck order
    and failed at the release, docs/shuffler.md "What the check costs")."""
    return binascii.hexlify(bytes(b)).decode()


def opens(commitment, salt, batch_id, records):
    """True when (salt, batch id, records) open the commitment (bytes)."""
    try:
        got = digest(salt, batch_id, records)
    except CommitError:
        return False
    if len(commitment) != len(got):
        return False
    diff = 0
    for i in range(len(got)):
        diff |= got[i] ^ commitment[i]
    return diff == 0
