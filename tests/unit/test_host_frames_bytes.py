"""The host builds its frames with CPython's zlib and hmac (link/host_frames.py),
the shoe byte by byte (link/frame.py, link/hmac.py): both must give the same
bytes for every kind, seq and payload, bytes a frame may not carry included,
or a shoe would refuse the pit's acks and commands."""

import os
import random

import pytest

from firmware.link import auth, frame, hmac, host_frames


def _shoe_frame(kind, seq, payload):
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
    return bytes(out[:n])


def test_host_frames_are_the_shoes_bytes():
    r = random.Random(3)
    cases = [(k, s, bytes(r.randrange(256) for _ in range(n)))
             for k in "ABCEH" for s in (0, 1, 9, 10, 65535, (1 << 30) - 1) for n in (0, 1, 37, 980)]
    cases.append(("A", 7, b"$\n\r\x00\x7f ~ok"))  # every byte that goes out as "?"
    for kind, seq, payload in cases:
        assert host_frames._frame(kind, seq, payload) == _shoe_frame(kind, seq, payload), (kind, seq, payload)


def test_host_frames_refuse_what_the_shoe_refuses():
    for kind, seq, payload in (("A", 1, b"x" * (frame.MAX_PAYLOAD + 1)), ("A", -1, b"")):
        with pytest.raises(ValueError):
            _shoe_frame(kind, seq, payload)
        with pytest.raises(ValueError):
            host_frames._frame(kind, seq, payload)


def test_ack_and_command_macs_are_the_shoes():
    key, nonce = os.urandom(32), b"0123456789abcdef"
    for seq in (1, 2, 999):
        want = _shoe_frame("A", seq, hmac.mac_hex(key, auth.host_message("T1", nonce, "A", seq)))
        assert host_frames.encode_ack(key, "T1", nonce, seq) == want
    signed = "bets @%d" % 4242
    want = _shoe_frame("C", 5, signed.encode() + b" " + hmac.mac_hex(key, auth.host_message("T1", nonce, "C", 5, signed)))
    assert host_frames.encode_command(key, "T1", nonce, 5, "bets", 4242) == want
