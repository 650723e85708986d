"""Signed commands and the shoe's outbox, under CPython (the VM runs the
same files in tests/e2e/test_emulator*.py).

The MAC oracle is CPython's hmac module over the input docs/protocol.md 4
defines; the outbox is checked against a plain list model.
"""

import hashlib
import hmac as py_hmac
import random
import zlib

import pytest

from host_tools import vm

from firmware.link import auth, host_frames, proto
from firmware.link.outbox import Outbox

KEY = bytes(range(32))
NONCE = b"0123456789abcdef"


def _split(frame_bytes):
    text = frame_bytes.decode()
    assert text[0] == "$" and text.endswith("\n")
    body, _, crc = text[1:-1].rpartition("*")
    assert int(crc, 16) == zlib.crc32(body.encode())
    return body


def test_command_frame_is_the_documented_text():
    data = host_frames.encode_command(KEY, "T1", NONCE, 13, "shoe decks=6 designation=ez", 4242)
    body = _split(data)
    mac = py_hmac.new(KEY, b"T1 0123456789abcdef C13 shoe decks=6 designation=ez @4242",
                      hashlib.sha256).hexdigest()[:32]
    assert body == "C13 shoe decks=6 designation=ez @4242 " + mac


def test_ack_frame_is_the_documented_text():
    body = _split(host_frames.encode_ack(KEY, "T1", NONCE, 42))
    assert body == "A42 " + py_hmac.new(KEY, b"T1 0123456789abcdef A42", hashlib.sha256).hexdigest()[:32]


def test_verify_accepts_the_genuine_and_names_the_forged():
    payload = _split(host_frames.encode_command(KEY, "T1", NONCE, 7, "bets", 99)).split(" ", 1)[1].encode()
    assert auth.verify_host(KEY, "T1", NONCE, proto.COMMAND, 7, payload) == b"bets @99"
    # Another key, another shoe, another counter, another connection's nonce.
    for key, shoe, counter, nonce in ((bytes(32), "T1", 7, NONCE), (KEY, "T2", 7, NONCE),
                                      (KEY, "T1", 8, NONCE), (KEY, "T1", 7, b"fedcba9876543210")):
        with pytest.raises(proto.Rejected) as err:
            auth.verify_host(key, shoe, nonce, proto.COMMAND, counter, payload)
        assert err.value.reason == "bad_mac" and err.value.name == "bets"
    with pytest.raises(proto.Rejected) as err:
        auth.verify_host(KEY, "T1", NONCE, proto.COMMAND, 7, b"bets")
    assert err.value.reason == "bad_mac" and "no 32-digit MAC" in err.value.message
    # A sender's name word is cut and never taken as text if it is not printable.
    with pytest.raises(proto.Rejected) as err:
        auth.verify_host(KEY, "T1", NONCE, proto.COMMAND, 7, b'"\\x' + b"q" * 40 + b" " + b"0" * 32)
    assert err.value.name == "?"


def test_a_signed_body_parses_through_the_schema():
    # Parsing is link/schema.py's (tests/unit/test_schema.py has every argument
    # error); a body signed in the schema's canonical order verifies and parses.
    from firmware.link import schema
    args = [("decks", "6"), ("batch", "B")]
    body = _split(host_frames.encode_command(KEY, "T1", NONCE, 9, schema.command_text("shoe", args), 7))
    assert body.rsplit(" ", 1)[0] == "C9 " + schema.command_text("shoe", args) + " @7"
    payload = body.split(" ", 1)[1].encode()
    signed = auth.verify_host(KEY, "T1", NONCE, proto.COMMAND, 9, payload)
    assert schema.parse_command(signed.rsplit(b" @", 1)[0]) == (
        "shoe", {"decks": 6, "designation": 0, "exposed": 0, "batch": 2, "set": "", "setdigest": "", "order": ""})


def test_outbox_matches_a_list_model_through_wraparound():
    rng = random.Random(3)
    box = Outbox(nbytes=600, slots=8)
    model = []  # (seq, bytes) in the box
    seq = 0
    acked = 0
    for _ in range(5000):
        if rng.random() < 0.55:
            n = rng.randint(1, 150)
            data = bytes(rng.randrange(256) for _ in range(n))
            if box.push(seq + 1, data, n):
                seq += 1
                model.append((seq, data))
            else:
                # Refused only when it truly cannot fit: slots full or no gap of n bytes.
                assert len(model) == 8 or sum(len(d) for _, d in model) + n > 600 - 150
                acked = seq  # the host catches up
                box.drop_through(acked)
                model = []
        elif model:
            acked = rng.randint(acked, seq)
            box.drop_through(acked)
            model = [(s, d) for s, d in model if s > acked]
        assert box.count == len(model)
        if model:
            assert box.first_seq == model[0][0] and box.last_seq() == model[-1][0]
        for s, d in model:
            slot = box.slot(s)
            off = box.off[slot]
            assert bytes(box.data[off:off + box.len[slot]]) == d


def test_protocol_document_examples_are_exact():
    """docs/protocol.md 4's examples, rebuilt from the standard library alone."""
    import os
    text = open(os.path.join(vm.ROOT, "docs", "protocol.md")).read()
    key = bytes(range(32))
    nonce = "0123456789abcdef"

    def frame_text(body):
        return "`$%s*%08x`" % (body, zlib.crc32(body.encode()))

    mac = py_hmac.new(key, ("T1 %s C13 bets @4242" % nonce).encode(), hashlib.sha256).hexdigest()[:32]
    assert frame_text("C13 bets @4242 " + mac) in text
    assert frame_text("B0 " + nonce) in text
    mac = py_hmac.new(key, ("T1 %s A42" % nonce).encode(), hashlib.sha256).hexdigest()[:32]
    assert frame_text("A42 " + mac) in text
    assert frame_text("H0 3 " + nonce) in text and frame_text("B0 ") in text
    frames_key = py_hmac.new(key, b"shoe frames v3", hashlib.sha256).digest()
    event = '{"type":"bets","round":3}'
    tag = py_hmac.new(frames_key, ("T1 E7 " + "0" * 32 + " " + event).encode(),
                      hashlib.sha256).hexdigest()[:32]
    assert frame_text("E7 %s %s" % (event, tag)) in text
    # ...and the project's own code makes the very same frames.
    assert host_frames.encode_command(key, "T1", nonce.encode(), 13, "bets", 4242).decode().strip() == \
        frame_text("C13 bets @4242 " + py_hmac.new(key, ("T1 %s C13 bets @4242" % nonce).encode(),
                                                   hashlib.sha256).hexdigest()[:32]).strip("`")
    assert host_frames.encode_beat(nonce.encode()).decode().strip() == frame_text("B0 " + nonce).strip("`")
    assert host_frames.frame_mac(auth.frames_key(key), "T1", ord("E"), 7, auth.ZERO_MAC,
                                 event.encode()).decode() == tag
    signer = auth.FrameSigner(key, "T1")
    out = bytearray(32)
    body = event.encode()
    signer.sign_into(ord("E"), 7, auth.ZERO_MAC, 0, 32, body, 0, len(body), out, 0)
    assert out.decode() == tag


def test_boot_known_answers_pass_on_this_core():
    from firmware import main  # firmware/main.py: importable without a board
    assert main._known_answers() is None
    # A source tree has no manifest.json: nothing vouches for it, so a shoe
    # booted from one would tilt (tests/e2e/test_boot_manifest.py).
    assert main._check_manifest().startswith("self-test: manifest.json is missing")


def test_boot_known_answers_catch_a_broken_core(monkeypatch):
    from firmware import main
    from firmware.baccarat import cards
    monkeypatch.setattr(cards, "POINTS", bytes(13))  # every card counts zero
    problem = main._known_answers()
    assert problem is not None and problem.startswith("self-test: game core known answer failed")
