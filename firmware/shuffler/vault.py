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

The key is the board's ``sealing_key()``, on every board with the secure
element (the emulator's too): SHA-256(VAULT_LABEL || ECDH(the chip's
slot-2 key, the public key in VAULT_PEER_FILE on the flash)), derived at
boot (drivers/atecc608_link.py, which names both) and held only in RAM. Provisioning made
that peer and dropped its private half, so nothing outside the chip can
compute the key: not a dump of the flash (which holds only the peer's
public half and the ciphertext), not the pit PC (which holds the link key,
derived from another peer under another label, and public keys).
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
