"""The shoe's streaming frame signer (firmware/link/auth.py) under CPython; in the
MicroPython VM: tests/e2e/test_emulator_link.py."""

import hashlib
import hmac
import random

from firmware.link import auth


def test_the_signer_equals_cpython_hmac_for_every_split_of_the_message():
    """The streaming signer (parts fed as views, pads made once) against
    CPython's hmac over the joined message, for links and payloads of many
    lengths, offsets and seqs; the signer is reused message after message."""
    rng = random.Random(10)
    key = bytes(rng.randrange(256) for _ in range(32))
    signer = auth.FrameSigner(key, "T9")
    fkey = hmac.new(key, b"shoe frames v3", hashlib.sha256).digest()
    for n in list(range(0, 140)) + [255, 256, 257, 900]:
        payload = bytes(rng.randrange(0x20, 0x7F) for _ in range(n + 5))
        link = bytes(rng.randrange(0x30, 0x3A) for _ in range(rng.choice((1, 16, 32))))
        seq = rng.choice((0, 1, 9, 10, rng.randrange(1 << 31), 4294967295))
        out = bytearray(40)
        signer.sign_into(0x45, seq, link, 0, len(link), payload, 3, 3 + n, out, 4)
        msg = b"T9 E%d %s %s" % (seq, link, payload[3:3 + n])
        assert bytes(out[4:36]).decode() == hmac.new(fkey, msg, hashlib.sha256).hexdigest()[:32]
