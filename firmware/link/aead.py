"""The one authenticated encryption the firmware has: HMAC-SHA256 in CTR
mode plus a tag, encrypt then MAC (docs/shuffler.md, "Nothing of the order
at rest" and "The real-time check inside the shoe").

Built from the one primitive every board and both VMs have (link/hmac.py):
a keystream of HMAC(k_enc, nonce || counter) blocks XORed over the plain
text, then a 16-byte tag HMAC(k_mac, nonce || ciphertext). k_enc and k_mac
are derived from the key under a label naming the use, so one key can never
serve two uses by mistake. The nonce must differ for every plain text sealed
under one key (both users take the batch's commitment: public, and new for
every sealed order).

Two users: the shuffler's vault (shuffler/vault.py, what must outlive a
power cut) and the order the shuffler sends the shoe (link/order.py). The
shoe opens its order in place, into the buffer it made at boot
(``open_into``): the ciphertext is replaced by the plain text and no block
the size of the order is made.
"""

from link import hmac as _hmac

TAG_BYTES = 16


def _keys(key, label):
    return _hmac.digest(key, label + b" enc"), _hmac.digest(key, label + b" mac")


def _xor_stream(kenc, nonce, buf, n):
    """XOR the keystream over ``buf[:n]`` in place."""
    block = bytearray(len(nonce) + 4)
    block[:len(nonce)] = nonce
    m = len(nonce)
    ctr = 0
    i = 0
    while i < n:
        block[m] = ctr >> 24
        block[m + 1] = (ctr >> 16) & 0xFF
        block[m + 2] = (ctr >> 8) & 0xFF
        block[m + 3] = ctr & 0xFF
        ks = _hmac.digest(kenc, block)
        k = 0
        while k < 32 and i < n:
            buf[i] ^= ks[k]
            i += 1
            k += 1
        ctr += 1


def _tag(kmac, nonce, ct, n):
    return _hmac.digest(kmac, nonce, memoryview(ct)[:n])[:TAG_BYTES]


def seal(key, nonce, plain, label):
    """ciphertext || tag (bytes)."""
    kenc, kmac = _keys(key, label)
    ct = bytearray(plain)
    _xor_stream(kenc, nonce, ct, len(ct))
    return bytes(ct) + _tag(kmac, nonce, ct, len(ct))


def open_(key, nonce, blob, label):
    """The plain text, or None when the blob was not sealed under this key,
    nonce and label (altered, or another key)."""
    buf = bytearray(blob)
    n = open_into(key, nonce, buf, len(buf), label)
    return None if n < 0 else bytes(buf[:n])


def open_into(key, nonce, buf, n, label):
    """``buf[:n]`` holds ciphertext || tag: check the tag, then decrypt in
    place. The plain text's length, or -1 (and ``buf`` untouched) when the
    tag does not verify."""
    if n < TAG_BYTES:
        return -1
    kenc, kmac = _keys(key, label)
    m = n - TAG_BYTES
    if not _hmac.equal(_tag(kmac, nonce, buf, m), memoryview(buf)[m:n]):
        return -1
    _xor_stream(kenc, nonce, buf, m)
    return m
