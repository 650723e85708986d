"""Signed commands and the shoe's outbox, under CPython (the VM runs the
same files in tests/test_emulator*.py).

The MAC oracle is CPython's hmac module over the input docs/protocol.md 4
defines; the outbox is checked against a plain list model.
"""

import hashlib
import hmac as py_hmac
import random
import zlib

import pytest

from host_tools import vm

vm.use_firmware()
from link import commands  # noqa: E402
from link.session import Outbox  # noqa: E402

KEY = bytes(range(32))


def _split(frame_bytes):
    text = frame_bytes.decode()
    assert text[0] == "$" and text.endswith("\n")
    body, _, crc = text[1:-1].rpartition("*")
    assert int(crc, 16) == zlib.crc32(body.encode())
    return body


def test_command_frame_is_the_documented_text():
    data = commands.encode(KEY, "T1", 13, "shoe", [("decks", "6"), ("designation", "ez")])
    body = _split(data)
    mac = py_hmac.new(KEY, b"T1 C13 shoe decks=6 designation=ez", hashlib.sha256).hexdigest()[:32]
    assert body == "C13 shoe decks=6 designation=ez " + mac


def test_ack_frame_is_the_documented_text():
    body = _split(commands.encode_ack(KEY, "T1", 42))
    assert body == "A42 " + py_hmac.new(KEY, b"T1 A42", hashlib.sha256).hexdigest()[:32]


def test_verify_accepts_the_genuine_and_names_the_forged():
    payload = _split(commands.encode(KEY, "T1", 7, "bets")).split(" ", 1)[1].encode()
    assert commands.verify(KEY, "T1", "C", 7, payload) == b"bets"
    for key, shoe, counter in ((bytes(32), "T1", 7), (KEY, "T2", 7), (KEY, "T1", 8)):
        with pytest.raises(commands.Rejected) as err:
            commands.verify(key, shoe, "C", counter, payload)
        assert err.value.reason == "bad_mac" and err.value.name == "bets"
    with pytest.raises(commands.Rejected) as err:
        commands.verify(KEY, "T1", "C", 7, b"bets")
    assert err.value.reason == "bad_mac" and "no 32-digit MAC" in err.value.message


def test_a_signed_body_parses_through_the_schema():
    # Parsing is link/schema.py's (tests/test_schema.py has every argument
    # error); a body signed in the schema's canonical order verifies and parses.
    from link import schema
    args = [("decks", "6"), ("batch", "B")]
    body = _split(commands.encode(KEY, "T1", 9, "shoe", args))
    assert body.rsplit(" ", 1)[0] == "C9 " + schema.command_text("shoe", args)
    payload = body.split(" ", 1)[1].encode()
    assert schema.parse_command(commands.verify(KEY, "T1", "C", 9, payload)) == (
        "shoe", {"decks": 6, "designation": 0, "exposed": 0, "batch": 2, "set": "", "setdigest": ""})


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
    import os
    text = open(os.path.join(vm.ROOT, "docs", "protocol.md")).read()
    key = bytes(range(32))
    mac = py_hmac.new(key, b"T1 C13 bets", hashlib.sha256).hexdigest()[:32]
    body = "C13 bets " + mac
    assert "`$%s*%08x`" % (body, zlib.crc32(body.encode())) in text
    mac = py_hmac.new(key, b"T1 A42", hashlib.sha256).hexdigest()[:32]
    body = "A42 " + mac
    assert "`$%s*%08x`" % (body, zlib.crc32(body.encode())) in text
    for body in ("H0 ", "B0 "):
        assert "`$%s*%08x`" % (body, zlib.crc32(body.encode())) in text


def test_boot_known_answers_pass_on_this_core():
    import main  # firmware/main.py: importable without a board
    assert main._known_answers() is None
    assert main._check_manifest() is None  # a source tree has no manifest.json


def test_boot_known_answers_catch_a_broken_core(monkeypatch):
    import main
    from baccarat import cards
    monkeypatch.setattr(cards, "POINTS", bytes(13))  # every card counts zero
    problem = main._known_answers()
    assert problem is not None and problem.startswith("self-test: game core known answer failed")
