"""HMAC-DRBG (firmware/shuffler/drbg.py) against NIST CAVP known answers.

The vectors are from the CAVP HMAC_DRBG.rsp files, [SHA-256], 1024 returned
bits. CAVP's procedure: instantiate, (reseed), generate 1024 bits and throw
them away, generate 1024 bits and compare.
"""

import binascii

import pytest

from host_tools import vm
from shuffler import drbg, entropy

H = binascii.unhexlify

# drbgvectors_no_reseed, [SHA-256] [PredictionResistance = False],
# no personalization / no additional input, COUNT = 0 and 1.
NO_RESEED = [
    ("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488",
     "659ba96c601dc69fc902940805ec0ca8", "",
     "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89d54fbb978a15b5c443c9ec21036d2460"
     "b6f73ebad0dc2aba6e624abf07745bc107694bb7547bb0995f70de25d6b29e2d3011bb19d27676c07162c8b5ccde0668"
     "961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8"),
    ("79737479ba4e7642a221fcfd1b820b134e9e3540a35bb48ffae29c20f5418ea3",
     "3593259c092bef4129bc2c6c9e19f343", "",
     "cf5ad5984f9e43917aa9087380dac46e410ddc8a7731859c84e9d0f31bd43655b924159413e2293b17610f211e09f770"
     "f172b8fb693a35b85d3b9e5e63b1dc252ac0e115002e9bedfb4b5b6fd43f33b8e0eafb2d072e1a6fee1f159df9b51e6c"
     "8da737e60d5032dd30544ec51558c6f080bdbdab1de8a939e961e06b5f1aca37"),
    # the same file, with a 256-bit personalization string, COUNT = 0
    ("5cacc68165a2e2ee20812f35ec73a79dbf30fd475476ac0c44fc6174cdac2b55",
     "6f885496c1e63af620becd9e71ecb824",
     "e72dd8590d4ed5295515c35ed6199e9d211b8f069b3058caa6670b96ef1208d0",
     "f1012cf543f94533df27fedfbf58e5b79a3dc517a9c402bdbfc9a0c0f721f9d53faf4aafdc4b8f7a1b580fcaa52338d4"
     "bd95f58966a243cdcd3f446ed4bc546d9f607b190dd69954450d16cd0e2d6437067d8b44d19a6af7a7cfa8794e5fbd72"
     "8e8fb2f2e8db5dd4ff1aa275f35886098e80ff844886060da8b1e7137846b23b"),
]

# drbgvectors_pr_false, [SHA-256], COUNT = 0: instantiate, reseed, generate x2.
RESEED = ("06032cd5eed33f39265f49ecb142c511da9aff2af71203bffaf34a9ca5bd9c0d",
          "0e66f71edc43e42a45ad3c6fc6cdc4df",
          "01920a4e669ed3a85ae8a33b35a74ad7fb2a6bb4cf395ce00334a9c9a5a5d552",
          "76fc79fe9b50beccc991a11b5635783a83536add03c157fb30645e611c2898bb2b1bc215000209208cd506cb28da2a51"
          "bdb03826aaf2bd2335d576d519160842e7158ad0949d1a9ec3e66ea1b1a064b005de914eac2e9d4f2d72a8616a802254"
          "22918250ff66a41bd2f864a6a38cc5b6499dc43f7f2bd09e1e0f8f5885935124")


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
