"""The link's frame codec and tag compare in the test's own process: the
decoder's buffer is fixed, the encoder refuses rather than cuts, and the
compare answers on length and content (tests/e2e/test_link_frame.py runs
the same codec in both VMs)."""

import os

import pytest

from host_tools.qa.soak import fuzz

from firmware.link import frame
from firmware.link import hmac as link_hmac


def test_decoder_memory_is_fixed():
    d = frame.Decoder()
    buf_id = id(d.buf)

    class Sink:
        def on_frame(self, dec):
            pass

        def on_bad(self, dec, code, message):
            pass

    junk = b"$" + os.urandom(50000).replace(b"$", b"x")
    d.feed(junk, len(junk), Sink())
    assert id(d.buf) == buf_id and len(d.buf) == frame.MAX_FRAME


def test_encoder_refuses_a_payload_it_would_have_to_cut():
    out = bytearray(frame.MAX_FRAME)
    with pytest.raises(ValueError):
        frame.encode(out, ord("E"), 1, b"x" * (frame.MAX_PAYLOAD + 1), 0, frame.MAX_PAYLOAD + 1)


def test_constant_time_compare():
    assert link_hmac.equal(b"abcd", b"abcd")
    assert not link_hmac.equal(b"abcd", b"abce")
    assert not link_hmac.equal(b"abc", b"abcd")


def test_ten_digit_seqs_frame_and_decode():
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord("E"), 4294967295, b"{}", 0, 2, b"0" * 32, 0, 32)

    class Got:
        def on_frame(self, d):
            self.seq = d.seq

        def on_bad(self, d, code, message):
            raise AssertionError(message)

    got = Got()
    frame.Decoder().feed(out, n, got)
    assert got.seq == 4294967295


def test_decoder_messages_hold_only_bytes_a_frame_can_carry():
    """Found by `shoe soak noise`: the shoe reports garbled frames in an
    event carrying the decoder's message, signed as written; the message
    "a new '$' after N bytes" went out with '?' for '$' (a frame cannot
    carry '$'), its tag never verified, and the link stalled for good on
    that event. Every message the decoder can give must be frame-safe."""
    import random
    from firmware.link import frame

    class Keep:
        def __init__(self):
            self.messages = []

        def on_bad(self, _d, _code, message):
            self.messages.append(message)

        def on_frame(self, _d):
            pass

    keep = Keep()
    dec = frame.Decoder()
    rng = random.Random(4)
    good = fuzz.encode_frame(ord("E"), 12, b'{"type":"bets","round":1} ' + b"0" * 32)
    samples = [good[:20] + good, b"$E1 x\n", b"$\x01\n", b"$" + b"x" * 1100 + b"\n", good[:-3] + b"zz\n",
               b"$e1 x*00000000\n", b"$E01 x*" + good[-9:]]
    samples += [fuzz.mutate(rng, good) for _ in range(3000)]
    for data in samples:
        dec.feed(data, len(data), keep)
    assert any("truncated" in m for m in keep.messages)
    for m in keep.messages:
        assert all(0x20 <= ord(ch) <= 0x7E and ch != "$" for ch in m), m
