"""What of a batch's order must outlive a power cut, kept on flash only as
ciphertext under a key the flash does not hold (docs/shuffler.md, "Nothing
of the order at rest").

Why anything at all: a batch released to the shoe stays in play across a
power cut of the shuffler, and its order and salt are what open its
commitment at the reveal. A sealed batch needs nothing: a power cut breaks
its seal and it is fed again. So custody keeps in clear only states, ids,
sizes and commitments, and the released batch's salt and records go
through ``seal`` here.

The cipher is built from the one primitive both VMs have, HMAC-SHA256
(link/hmac.py): a keystream of HMAC(k_enc, nonce || counter) blocks XORed
over the plain text, then a 16-byte tag HMAC(k_mac, nonce || ciphertext)
(encrypt then MAC), with k_enc and k_mac derived from the key. The nonce
is the batch's commitment: public, and different for every sealed order, so
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

from link import hmac as _hmac

TAG_BYTES = 16


def _keys(key):
    return _hmac.digest(key, b"shuffler vault enc"), _hmac.digest(key, b"shuffler vault mac")


def _stream(kenc, nonce, data):
    out = bytearray(len(data))
    block = bytearray(len(nonce) + 4)
    block[:len(nonce)] = nonce
    ctr = 0
    i = 0
    while i < len(data):
        block[len(nonce)] = ctr >> 24
        block[len(nonce) + 1] = (ctr >> 16) & 0xFF
        block[len(nonce) + 2] = (ctr >> 8) & 0xFF
        block[len(nonce) + 3] = ctr & 0xFF
        ks = _hmac.digest(kenc, block)
        for k in range(32):
            if i >= len(data):
                break
            out[i] = data[i] ^ ks[k]
            i += 1
        ctr += 1
    return out


def seal(key, nonce, plain):
    """ciphertext || tag (bytes)."""
    kenc, kmac = _keys(key)
    ct = _stream(kenc, nonce, plain)
    return bytes(ct) + _hmac.digest(kmac, bytes(nonce) + bytes(ct))[:TAG_BYTES]


def open_(key, nonce, blob):
    """The plain text, or None when the blob was not sealed under this key
    and nonce (altered, or another key)."""
    if len(blob) < TAG_BYTES:
        return None
    kenc, kmac = _keys(key)
    ct = blob[:len(blob) - TAG_BYTES]
    want = _hmac.digest(kmac, bytes(nonce) + bytes(ct))[:TAG_BYTES]
    if not _hmac.equal(want, blob[len(blob) - TAG_BYTES:]):
        return None
    return bytes(_stream(kenc, nonce, ct))
