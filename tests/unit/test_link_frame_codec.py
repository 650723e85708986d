"""The link's frame codec and tag compare in the test's own process: the
decoder's buffer is fixed, the encoder refuses rather than cuts, and the
compare answers on length and content (tests/e2e/test_link_frame.py runs
the same codec in both VMs)."""

import os

import pytest

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
