"""The order the shuffler sends the shoe (firmware/link/order.py, link/aead.py),
the shoe's check of it (cardset/ordercheck.py), its command and event rows
and the pit's relay, in CPython (tests/e2e/test_order_check.py runs the
check in both MicroPython VMs)."""

import os
import random

import host_tools  # noqa: F401

from firmware.baccarat import events
from firmware.link import aead, order, proto, schema, events_schema
from firmware.link.frame import MAX_PAYLOAD
from firmware.cardset import ordercheck
from host_tools.protocol import alerts, orderrelay
from host_tools.qa.bench import ordercheck as bench


def _sealed(n=416, seed=1, shuffler="SHUF1", shoe="T1", bid="A-3", digest=b"d" * 32, serial=5, secret=None):
    rng = random.Random(seed)
    recs = list(range(2, 2 + n))
    rng.shuffle(recs)
    secret, nonce = secret or os.urandom(32), os.urandom(32)
    key = order.key(secret, shuffler, shoe, bid, serial, digest)
    return recs, secret, nonce, key, order.seal(key, nonce, recs, n)


class _Session:
    """What OrderCheck.part reads of a session: the board's pairing, the
    shoe's id and its card set's digest."""

    def __init__(self, secret, shuffler="SHUF1", shoe="T1", digest=b"d" * 32):
        board = type("B", (), {"pairing": lambda _self: (shuffler, secret)})()
        reg = type("R", (), {"digest": lambda _self: digest})()
        self.board, self.shoe_id = board, shoe
        self.intake = type("I", (), {"registry": reg})()
        self.alerts = []  # (rule, detail) of the irregularities the check raised

    def alert(self, rule, c=-1, detail=None):
        self.alerts.append((rule, detail))


def _load(chk, sess, blob, n, nonce, bid="A-3", serial=5):
    why = None
    for p in range(order.parts_of(n)):
        why = chk.part(sess, bid, p + 1, order.parts_of(n), n, serial, nonce.hex(),
                       blob[p * order.PART:(p + 1) * order.PART].hex())
    return why


def test_the_sealed_order_opens_only_under_its_own_key_label_and_nonce():
    recs, secret, nonce, key, blob = _sealed()
    buf = bytearray(blob)
    assert order.open_into(key, nonce, buf, 416)
    assert [order.record(buf, i) for i in range(416)] == recs
    assert b"".join(r.to_bytes(2, "big") for r in recs[:8]) not in blob  # ciphertext, not the records
    for other in (order.key(secret, "SHUF2", "T1", "A-3", 5, b"d" * 32),   # another shuffler
                  order.key(secret, "SHUF1", "T2", "A-3", 5, b"d" * 32),   # another shoe
                  order.key(secret, "SHUF1", "T1", "A-4", 5, b"d" * 32),   # another batch
                  order.key(secret, "SHUF1", "T1", "A-3", 6, b"d" * 32),   # another serial
                  order.key(secret, "SHUF1", "T1", "A-3", 5, b"e" * 32)):  # another card set
        assert not order.open_into(other, nonce, bytearray(blob), 416)
    assert not order.open_into(key, bytes(32), bytearray(blob), 416)
    # The vault's label gives other keys: an order never opens as a vault blob.
    assert aead.open_(key, nonce, blob, b"shuffler vault") is None
    flipped = bytearray(blob)
    flipped[100] ^= 1
    assert not order.open_into(key, nonce, flipped, 416) and flipped[101:] == blob[101:]  # untouched


def test_the_largest_part_is_well_inside_a_frame():
    _recs, _secret, nonce, _key, blob = _sealed()
    parts = order.parts_of(416)
    assert parts == proto.ORDER_PARTS and parts * order.PART >= len(blob)
    body = schema.command_text("order", {"id": "A-2147483647", "part": parts, "n": 416,
                                         "serial": schema.ORDER_SERIAL,
                                         "nonce": nonce.hex(), "data": blob[:order.PART].hex()})
    assert len(body) + len(" @1073741823 ") + proto.MAC_HEX <= 300 < MAX_PAYLOAD
    name, args = schema.parse_command(body)
    assert name == "order" and args["data"] == blob[:order.PART].hex() and args["n"] == 416


def test_an_order_command_out_of_shape_is_malformed():
    import pytest
    ok = "order id=A-1 part=1 n=52 serial=3 nonce=%s data=00" % ("0" * 64)
    assert schema.parse_command(ok)[1]["serial"] == 3
    for bad in (ok.replace("data=00", "data=abc"),                     # odd hex
                ok.replace("data=00", "data=" + "0" * 130),           # too long
                ok.replace("part=1", "part=15"),
                ok.replace("n=52", "n=417"),
                ok.replace("serial=3", "serial=0"),                   # no seal counter
                ok.replace("serial=3 ", "")):                         # unbound: no serial
        with pytest.raises(proto.Rejected) as e:
            schema.parse_command(bad)
        assert e.value.reason == "malformed"


def test_the_check_learns_the_cut_from_the_first_card_and_names_the_first_difference():
    recs, secret, nonce, _key, blob = _sealed(n=52)
    chk = ordercheck.OrderCheck()
    sess = _Session(secret)
    assert _load(chk, sess, blob, 52, nonce) == ""
    sess = _Session(secret)
    assert b'"order":null' in chk.arm(sess, 2)   # batch B's shoe is not checked against A-3
    assert chk.arm(sess, 1) == b',"order":"A-3","serial":5'
    dealt = recs[30:] + recs[:30]  # Ch 5B: a rotation
    for k in range(11):
        assert chk.step(dealt[k]) == ordercheck.OK
    assert chk.step(dealt[10]) == ordercheck.OK and chk.k == 11  # the same card read twice is one card
    assert chk.step(dealt[12]) == dealt[11] and chk.k == 12  # card 12 is not the order's: named
    assert chk.step(dealt[12]) == ordercheck.OK  # read again: no new card
    assert chk.step(dealt[13]) == dealt[12]      # a substitution: the place after it is next
    assert chk.step(-1) == dealt[13] and chk.k == 14  # an unknown ID where a card was due


def test_a_first_card_not_in_the_order_has_no_expected_card():
    recs, secret, nonce, _key, blob = _sealed(n=52)
    chk = ordercheck.OrderCheck()
    _load(chk, _Session(secret), blob, 52, nonce)
    chk.arm(_Session(secret), 1)
    assert chk.step(999) == ordercheck.NOT_IN_ORDER and chk.k == 1
    assert chk.step(recs[5]) == ordercheck.OK and chk.step(recs[6]) == ordercheck.OK


def test_an_order_is_refused_under_another_key_and_while_a_shoe_is_checked():
    _recs, secret, nonce, _key, blob = _sealed(n=52)
    chk = ordercheck.OrderCheck()
    other = _Session(os.urandom(32))
    assert _load(chk, other, blob, 52, nonce) is False  # foreign: an irregularity, not an error
    assert [r for r, _d in other.alerts] == [events.ORDER_FOREIGN] and "does not open" in other.alerts[0][1]
    assert chk.state == 0 and not any(chk.buf)  # wiped
    assert "paired with no shuffler" in _load(chk, type("S", (), {"board": object()})(), blob, 52, nonce)
    assert _load(chk, _Session(secret), blob, 52, nonce) == ""
    chk.arm(_Session(secret), 1)
    assert "between shoes" in _load(chk, _Session(secret), blob, 52, nonce)
    chk.end()
    assert chk.state == 0 and not any(chk.buf)


def test_the_irregularity_the_order_alert_and_the_relay_are_defined_once():
    stop = {"type": "irregularity", "rule": events_schema.ORDER_MISMATCH, "section": "Ch 5B", "round": 3,
            "card": "4D", "deck": 2, "position": 12, "expected": "JS", "expected_deck": 1,
            "detail": "x", "action": "stopped until clear_stop"}
    assert events_schema.check_event(stop) is None
    assert events_schema.check_event(dict(stop, position="12")) is not None
    assert events_schema.check_event({"type": "order", "source": "link", "id": "A-1", "n": 52, "serial": 4}) is None
    assert alerts.severity(events_schema.ORDER_MISMATCH) == alerts.CRITICAL
    ev = {"type": "order", "source": "shuffler", "batch": "A", "id": "A-1", "shoe": "T1", "part": 1, "parts": 2,
          "n": 52, "serial": 4, "nonce": "0" * 64, "data": "ab" * 64}
    assert events_schema.check_event(ev) is None
    shoe_id, (name, args) = orderrelay.for_shoe(ev)
    assert shoe_id == "T1" and name == "order"
    schema.parse_command(schema.command_text(name, args))  # the shoe takes what the pit relays
    assert orderrelay.for_shoe(dict(ev, source="link")) is None


def test_an_order_not_newer_than_the_last_dealt_is_refused_as_stale():
    recs, secret, nonce, _key, blob = _sealed(n=52, serial=5)
    chk, sess = ordercheck.OrderCheck(), _Session(secret)
    assert _load(chk, sess, blob, 52, nonce) == ""
    assert chk.arm(sess, 1) == b',"order":"A-3","serial":5' and chk.floor == 5
    chk.end()
    # The same parts again (a replay): refused before anything is opened, one
    # irregularity for the whole order, not one per part.
    assert _load(chk, sess, blob, 52, nonce) is False and chk.state == 0
    assert [r for r, _d in sess.alerts] == [events.ORDER_STALE]
    assert "A-3 (serial 5)" in sess.alerts[0][1] and "replayed or stale" in sess.alerts[0][1]
    _r, _s, nonce4, _k, older = _sealed(n=52, bid="A-2", serial=4, secret=secret)
    assert _load(chk, sess, older, 52, nonce4, bid="A-2", serial=4) is False
    assert [r for r, _d in sess.alerts] == [events.ORDER_STALE] * 2
    _r, _s, nonce6, _k, newer = _sealed(n=52, bid="A-4", serial=6, secret=secret)
    assert _load(chk, sess, newer, 52, nonce6, bid="A-4", serial=6) == ""


def test_a_held_order_is_not_displaced_by_an_older_one():
    _r, secret, nonce7, _k, newer = _sealed(n=52, bid="B-2", serial=7)
    chk, sess = ordercheck.OrderCheck(), _Session(secret)
    assert _load(chk, sess, newer, 52, nonce7, bid="B-2", serial=7) == ""
    _r, _s, nonce5, _k, older = _sealed(n=52, bid="A-3", serial=5, secret=secret)
    assert _load(chk, sess, older, 52, nonce5, bid="A-3", serial=5) is False
    assert chk.state == 2 and chk.id == "B-2"   # still held, untouched
    # A claimed serial cannot be raised on the way: the key binds it.
    assert _load(chk, sess, older, 52, nonce5, bid="A-3", serial=8) is False
    assert [r for r, _d in sess.alerts] == [events.ORDER_STALE, events.ORDER_FOREIGN]
    assert chk.arm(sess, 1) == b',"order":null,"unchecked":"no order from the paired shuffler"'


def test_the_shoe_event_says_which_order_checks_it_or_why_none_does():
    _r, secret, nonce, _k, blob = _sealed(n=52, bid="A-3", serial=5)
    chk, sess = ordercheck.OrderCheck(), _Session(secret)
    unpaired = type("S", (), {"board": object()})()
    assert chk.arm(unpaired, 1) == b""   # no shuffler paired: nothing to say
    assert _load(chk, sess, blob, 52, nonce) == ""
    assert chk.arm(sess, 2) == b',"order":null,"unchecked":"the order held is A-3, not of batch B"'
    assert chk.arm(sess, 1, "A-4") == b',"order":null,"unchecked":"the pit named A-4; the order held is A-3"'
    assert chk.arm(sess, 1, "A-3") == b',"order":"A-3","serial":5'
    import json
    for frag in (chk.arm(sess, 1), b',"order":"A-3","serial":5'):
        ev = json.loads(b'{"type":"shoe","decks":1,"designation":"standard","exposed":"simulated","batch":"A",'
                        b'"cards":52,"next":"BURN"' + frag + b"}")
        assert events_schema.check_event(ev) is None, ev


def test_the_floor_comes_back_from_the_journals_shoe_record():
    chk = ordercheck.OrderCheck()
    chk.dealt(b',"order":null,"unchecked":"no order from the paired shuffler"')
    assert chk.floor == 0
    chk.dealt(b',"order":"A-3","serial":1234')
    chk.dealt(b',"order":"B-1","serial":12')
    assert chk.floor == 1234


def test_the_bench_and_the_link_agree_on_the_parts():
    assert bench._MAX_PARTS == proto.ORDER_PARTS
