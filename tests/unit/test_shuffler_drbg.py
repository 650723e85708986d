"""HMAC-DRBG (firmware/shuffler/drbg.py) against NIST CAVP known answers
under CPython (in the MicroPython VM: tests/e2e/test_shuffler_drbg_vm.py).

The vectors (tests/support/cavp_drbg.py) are from the CAVP HMAC_DRBG.rsp files, [SHA-256], 1024 returned
bits. CAVP's procedure: instantiate, (reseed), generate 1024 bits and throw
them away, generate 1024 bits and compare.
"""

import binascii

import pytest

from firmware.shuffler import drbg, entropy
from support.cavp_drbg import NO_RESEED, RESEED

H = binascii.unhexlify


@pytest.mark.parametrize("entropy_hex,nonce_hex,pers_hex,expected", NO_RESEED)
def test_cavp_no_reseed(entropy_hex, nonce_hex, pers_hex, expected):
    d = drbg.HmacDrbg()
    d.instantiate_with(H(entropy_hex), H(nonce_hex), H(pers_hex))
    out = bytearray(128)
    d.generate_into(out)
    assert out.hex() != expected
    d.generate_into(out)
    assert out.hex() == expected


def test_cavp_with_reseed():
    e, nonce, reseed, expected = RESEED
    d = drbg.HmacDrbg()
    d.instantiate_with(H(e), H(nonce))
    d.reseed_with(H(reseed))
    out = bytearray(128)
    d.generate_into(out)
    d.generate_into(out)
    assert out.hex() == expected


def test_generate_in_pieces_is_not_one_request():
    # Each request ends with an update of (Key, V): two 64-byte requests
    # differ from one 128-byte request after the first 64 bytes, as 10.1.2.5
    # says. Guards against an implementation that just streams V.
    a = drbg.HmacDrbg()
    a.instantiate_with(b"\x01" * 32, b"\x02" * 16)
    b = drbg.HmacDrbg()
    b.instantiate_with(b"\x01" * 32, b"\x02" * 16)
    one = a.generate_into(bytearray(128))
    two = b.generate_into(bytearray(64)) + b.generate_into(bytearray(64))
    assert one[:64] == two[:64] and one[64:] != two[64:]


class CountingSource:
    def __init__(self):
        self.inner = entropy.SeededSource(3)
        self.reads = 0

    def read(self, buf):
        self.reads += 1
        return self.inner.read(buf)


def test_reseed_counter_forces_a_reseed_from_the_source():
    src = CountingSource()
    d = drbg.HmacDrbg(src, reseed_interval=3)
    d.instantiate()
    assert src.reads == 1 and d.reseed_counter == 1
    buf = bytearray(16)
    for _ in range(3):
        d.generate_into(buf)
    assert src.reads == 1 and d.reseed_counter == 4
    d.generate_into(buf)  # the 4th request is past the interval: reseed first
    assert src.reads == 2 and d.reseed_counter == 2


def test_without_a_source_past_the_interval_is_reseed_required():
    d = drbg.HmacDrbg(reseed_interval=1)
    d.instantiate_with(b"\x00" * 32, b"\x00" * 16)
    d.generate_into(bytearray(8))
    with pytest.raises(drbg.ReseedRequired):
        d.generate_into(bytearray(8))


def test_refuses_before_instantiate_and_over_max_request():
    d = drbg.HmacDrbg()
    with pytest.raises(drbg.DrbgError):
        d.generate_into(bytearray(8))
    d.instantiate_with(b"\x00" * 32, b"\x00" * 16)
    with pytest.raises(drbg.DrbgError):
        d.generate_into(bytearray(drbg.MAX_REQUEST + 1))


def test_instantiate_reads_seed_and_nonce_from_the_source():
    # 4 bits claimed per byte (health.py): 64 bytes of entropy, 32 of nonce.
    class Recorder:
        def __init__(self):
            self.sizes = []

        def read(self, buf):
            self.sizes.append(len(buf))
            for i in range(len(buf)):
                buf[i] = i & 0xFF
            return buf

    r = Recorder()
    d = drbg.HmacDrbg(r)
    d.instantiate(b"p")
    d.reseed()
    assert r.sizes == [drbg.SEED_BYTES + drbg.NONCE_BYTES, drbg.SEED_BYTES]
    assert drbg.SEED_BYTES * 4 >= 256 and drbg.NONCE_BYTES * 4 >= 128
