"""What of a batch's order must outlive a power cut, kept on flash only as
ciphertext under a key the flash does not hold (docs/shuffler.md, "Nothing
of the order at rest").

Why anything at all: a batch released to the shoe stays in play across a
power cut of the shuffler, and its order and salt are what open its
commitment at the reveal. A sealed batch needs nothing: a power cut breaks
its seal and it is fed again. So custody keeps in clear only states, ids,
sizes and commitments, and the released batch's salt and records go
through ``seal`` here.

The cipher is link/aead.py's (HMAC-SHA256 in CTR mode, then a 16-byte
tag, encrypt then MAC), under the label "shuffler vault"; the shoe's order
(link/order.py) is the same construction under its own label. The nonce is
the batch's commitment: public, and different for every sealed order, so
no keystream is ever used for two orders. Off the per-card path (a few
times per batch), so the hash objects it makes do not matter.

The key is the board's ``sealing_key()``: on the board, a key the secure
element holds (the seam: the ATECC608B driver does not yet run the KDF
or ECDH command that would give it, see docs/shuffler.md); in the
emulator, a file outside the flash directory that stands for the chip.
"""

from link import aead

TAG_BYTES = aead.TAG_BYTES
LABEL = b"shuffler vault"


def seal(key, nonce, plain):
    """ciphertext || tag (bytes)."""
    return aead.seal(key, nonce, plain, LABEL)


def open_(key, nonce, blob):
    """The plain text, or None when the blob was not sealed under this key
    and nonce (altered, or another key)."""
    return aead.open_(key, nonce, blob, LABEL)
