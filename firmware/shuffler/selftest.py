"""The shuffler's known-answer self-test, run once at boot before anything
is sent (shuffler/main.py): SHA-256, HMAC-SHA256 (RFC 4231 test case 2) and
HMAC-DRBG (NIST CAVP). A module of its own so that its code and constants
leave the heap once it has run (lazy.py); in play nothing imports it."""

import binascii
import hashlib


def _known_answers():
    if binascii.hexlify(hashlib.sha256(b"abc").digest()) != \
            b"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad":
        return "self-test: SHA-256 known answer failed"
    from link import hmac
    # RFC 4231 test case 2.
    if binascii.hexlify(hmac.digest(b"Jefe", b"what do ya want for nothing?")) != \
            b"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843":
        return "self-test: HMAC-SHA256 known answer failed"
    from shuffler import drbg
    # NIST CAVP HMAC_DRBG.rsp [SHA-256], no reseed, COUNT = 0: instantiate,
    # generate 1024 bits, generate 1024 bits; the first 16 bytes of the second.
    d = drbg.HmacDrbg()
    d.instantiate_with(binascii.unhexlify("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488"),
                       binascii.unhexlify("659ba96c601dc69fc902940805ec0ca8"), b"")
    out = bytearray(128)
    d.generate_into(out)
    d.generate_into(out)
    if binascii.hexlify(out[:16]) != b"e528e9abf2dece54d47c7e75e5fe3021":
        return "self-test: HMAC-DRBG known answer failed"
    return None


def run():
    """None, or why a known answer failed (a test that crashes has failed)."""
    try:
        return _known_answers()
    except Exception as e:
        return "self-test: %s" % e
