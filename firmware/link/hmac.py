"""HMAC-SHA256 (RFC 2104) over ``hashlib.sha256``, which MicroPython has.

MicroPython ships no ``hmac`` module, and the shoe and the bridge must compute
the very same MACs, so both use this one. Commands are rare (a few per round),
so the hash objects allocated here are outside the per-card path.
"""

import binascii
import hashlib

BLOCK = 64
MAC_BYTES = 16  # the link sends the first 128 bits (docs/protocol.md 4)


def digest(key, msg, more=None):
    """The full 32-byte HMAC-SHA256 of ``msg`` (then ``more``, when given:
    two parts hashed in turn, never joined into one block) under ``key``."""
    if len(key) > BLOCK:
        key = hashlib.sha256(key).digest()
    ipad = bytearray(BLOCK)
    opad = bytearray(BLOCK)
    for i in range(BLOCK):
        k = key[i] if i < len(key) else 0
        ipad[i] = k ^ 0x36
        opad[i] = k ^ 0x5C
    inner = hashlib.sha256(ipad)
    inner.update(msg)
    if more is not None:
        inner.update(more)
    outer = hashlib.sha256(opad)
    outer.update(inner.digest())
    return outer.digest()


def mac_hex(key, msg):
    """The link's MAC: the first 16 bytes of the HMAC as 32 lower-case hex bytes."""
    return binascii.hexlify(digest(key, msg)[:MAC_BYTES])


def equal(a, b):
    """Compare without an early exit, so timing does not reveal how much of a
    forged MAC was right."""
    if len(a) != len(b):
        return False
    diff = 0
    for i in range(len(a)):
        diff |= a[i] ^ b[i]
    return diff == 0
