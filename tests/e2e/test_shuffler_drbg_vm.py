"""HMAC-DRBG (firmware/shuffler/drbg.py) against NIST CAVP known answers in the
MicroPython VM (the same vectors under CPython: tests/unit/test_shuffler_drbg.py)."""

from host_tools import vm
from support.cavp_drbg import NO_RESEED, RESEED


def test_cavp_vectors_in_the_micropython_vm():
    program = (
        "from binascii import unhexlify as H, hexlify\n"
        "from shuffler import drbg\n"
        "out = bytearray(128)\n")
    for e, nonce, pers, _ in NO_RESEED:
        program += ("d = drbg.HmacDrbg(); d.instantiate_with(H('%s'), H('%s'), H('%s'))\n"
                    "d.generate_into(out); d.generate_into(out); print(hexlify(out).decode())\n"
                    % (e, nonce, pers))
    e, nonce, reseed, _ = RESEED
    program += ("d = drbg.HmacDrbg(); d.instantiate_with(H('%s'), H('%s')); d.reseed_with(H('%s'))\n"
                "d.generate_into(out); d.generate_into(out); print(hexlify(out).decode())\n"
                % (e, nonce, reseed))
    rc, out, err = vm.run_micropython(["-c", program])
    assert rc == 0, err.decode()
    assert out.decode().split() == [v[3] for v in NO_RESEED] + [RESEED[3]]
