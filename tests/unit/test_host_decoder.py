"""The pit PC's frame decoder (host_tools/protocol/decoder.py) is the
firmware's, faster: on any byte stream, cut into chunks anywhere, it makes
the same handler calls with the same frames and messages, and keeps the
same state between chunks."""

import random

from host_tools.protocol import decoder
from firmware.link import frame


class Calls:
    def __init__(self):
        self.seen = []

    def on_frame(self, dec):
        self.seen.append(("frame", dec.kind, dec.seq, bytes(dec.buf[dec.pstart:dec.pend])))

    def on_bad(self, _dec, code, message):
        self.seen.append(("bad", code, message))


def _frame(kind, seq, payload):
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
    return bytes(out[:n])


def _stream(rng):
    """Good frames, damaged ones and line noise, as a hostile line carries them."""
    parts = []
    for _ in range(rng.randrange(1, 12)):
        good = _frame(rng.choice("EABH"), rng.choice((0, 1, 7, 42, 1234567890)),
                      bytes(rng.randrange(0x20, 0x7F) for _ in range(rng.randrange(0, 60))))
        roll = rng.random()
        if roll < 0.4:
            parts.append(good)
        elif roll < 0.6:  # a flipped or inserted byte anywhere
            at = rng.randrange(len(good))
            parts.append(good[:at] + bytes([rng.randrange(256)]) + good[at + (rng.random() < 0.5):])
        elif roll < 0.7:
            parts.append(good[:rng.randrange(len(good))])  # cut short
        elif roll < 0.8:
            parts.append(b"$" + bytes(rng.randrange(0x20, 0x7F) for _ in range(frame.MAX_FRAME + 5)))
        elif roll < 0.9:
            parts.append(good.replace(b"\n", b"\r\n"))
        else:
            parts.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))))
    return b"".join(parts)


def _run(dec, data, cuts):
    calls = Calls()
    at = 0
    for cut in sorted(cuts) + [len(data)]:
        chunk = data[at:cut]
        dec.feed(chunk, len(chunk), calls)
        at = cut
    return calls.seen, (dec.n, dec.in_frame, dec.skipped)


def test_same_calls_and_state_as_the_firmware_decoder():
    rng = random.Random(33)
    for _ in range(400):
        data = _stream(rng)
        cuts = [rng.randrange(len(data) + 1) for _ in range(rng.randrange(0, 6))]
        want = _run(frame.Decoder(), data, [])
        assert _run(decoder.Decoder(), data, cuts) == want
        assert _run(decoder.Decoder(), data, []) == want


def test_a_good_frame_arrives_whole():
    calls = Calls()
    data = _frame("E", 12, b'{"type":"card"} 00ff')
    decoder.Decoder().feed(data, len(data), calls)
    assert calls.seen == [("frame", ord("E"), 12, b'{"type":"card"} 00ff')]
