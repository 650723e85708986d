"""The shuffler's intake check, custody state machine and commitment
(firmware/shuffler/{batch,custody,commit}.py; docs/shuffler.md)."""

import json

import pytest

from firmware.baccarat import cards
from firmware.shuffler import batch, commit, custody, entropy, shuffle
from support.custody_rig import A, B, clean_reads, feed, machine, make_set, rec, REG


def test_a_clean_batch_passes_in_any_order_and_keeps_its_feed_records():
    reads = clean_reads()
    reads.reverse()
    ok, found = batch.check(REG, A, reads)
    assert ok and found == []
    no_sensor = [(r, batch.NO_SENSOR) for r, _ in clean_reads(B)]
    assert batch.check(REG, B, no_sensor)[0]


def test_every_bad_card_is_named_with_its_position():
    reads = clean_reads()
    h7 = cards.make(6, 2)  # 7H
    ks = cards.make(12, 3)  # KS
    reads[9] = (rec(A, 1, h7), A)  # a second 7H replaces card code 9 (4D), which is now missing
    missing_card = [c for c in range(52) if c not in {REG.card(r) for r, _ in reads}]
    reads.insert(20, (-1, A))                      # position 21: a foreign card
    reads.insert(30, (rec(B, 1, ks), B))           # position 31: batch B's KS
    reads.insert(40, (rec(A, 1, ks), B))           # position 41: KS of A with B's back
    reads.insert(45, (REG.find(b"\x0c\x0c\x01", 3), batch.NO_SENSOR))  # position 46: cover card
    ok, found = batch.check(REG, A, reads)
    assert not ok
    kinds = [p.kind for p in found]
    assert sorted(kinds) == sorted([batch.DUPLICATE, batch.UNKNOWN, batch.WRONG_BATCH, batch.WRONG_BACK,
                                    batch.COVER_CARD, batch.MISSING])
    by = {p.kind: p for p in found}
    assert by[batch.UNKNOWN].pos == 21
    assert by[batch.WRONG_BATCH].pos == 31 and by[batch.WRONG_BATCH].text().startswith(
        "wrong_batch KS of deck 1 batch B at position 31")
    assert by[batch.WRONG_BACK].pos == 41 and "back seen as batch B" in by[batch.WRONG_BACK].text()
    assert by[batch.COVER_CARD].pos == 46
    assert by[batch.MISSING].pos == 0 and by[batch.MISSING].card == missing_card[0]
    dup = by[batch.DUPLICATE]  # the later of the two 7H reads: index 26, moved to 28 by the foreign card
    assert dup.pos == 28
    assert cards.name(dup.card) == "7H" and reads[dup.pos - 1][0] == rec(A, 1, h7)
    assert dup.event() == {"type": "batch_card", "kind": "duplicate_card", "pos": dup.pos,
                           "name": "7H of deck 1 batch A", "card": "7H", "deck": 1}


def test_unknown_id_is_named_by_its_id_and_face_up_is_wrong_back():
    found = []
    bc = batch.BatchCheck(REG, found.append)
    bc.start(A)
    assert not bc.read_id(b"\xde\xad\xbe\xef", 4, A)
    assert not bc.read(rec(A, 1, 0), batch.FACE)
    assert not bc.finish()
    assert found[0].text() == "unknown_card ID deadbeef at position 1: not in the card set"
    assert found[1].kind == batch.WRONG_BACK and "back seen as a face" in found[1].text()
    assert sum(p.kind == batch.MISSING for p in found) == 52  # the face-up AC counts as missing too


def test_every_missing_card_of_an_empty_batch_is_reported():
    ok, found = batch.check(REG, B, [])
    assert not ok and len(found) == 52 and {p.kind for p in found} == {batch.MISSING}


def test_batch_check_refuses_a_batch_the_set_lacks():
    with pytest.raises(ValueError):
        batch.BatchCheck(make_set(1, 0)).start(B)


# -- custody ------------------------------------------------------------------

def prepare(m, b):
    """Load, check, shuffle and seal a clean batch; return the seal event."""
    feed(m, b, clean_reads(b))
    assert m.shuffle(b)[0]["to"] == custody.SHUFFLING
    assert m.shuffled(b)[0]["to"] == custody.SHUFFLED
    ev = m.seal(b)[0]
    assert ev["to"] == custody.SEALED
    return ev


def test_a_clean_batch_is_released_and_batches_alternate():
    m = machine()
    seal_a = prepare(m, A)
    assert seal_a["id"] == "A-1" and len(seal_a["commit"]) == 64
    assert m.reveal(A) is None  # sealed: the order stays inside
    assert m.release(A) == [{"type": "custody", "batch": "A", "from": "sealed", "to": "released",
                             "on": "release", "id": "A-1"}]
    assert m.reveal(A) is None  # being dealt: still secret
    prepare(m, B)
    refused = m.release(B)[0]
    assert refused["type"] == "custody_refused" and "batch A is still in play" in refused["why"]
    assert m.state[B] == custody.SEALED
    assert m.load(A)[0]["from"] == custody.RELEASED  # the shoe ended; A comes back
    assert m.release(B)[0]["to"] == custody.RELEASED
    rv = m.reveal(A)
    assert rv["id"] == "A-1" and rv["commitment"] == seal_a["commit"]
    assert commit.opens(bytes.fromhex(rv["commitment"]), bytes.fromhex(rv["salt"]), rv["id"], rv["records"])
    assert sorted(rv["records"]) == sorted(r for r, _ in clean_reads(A))


def test_a_bad_batch_is_rejected_with_every_bad_card_and_never_released():
    m = machine()
    reads = clean_reads()[:-1] + [(-1, A)]
    events = feed(m, A, reads)
    assert [e["kind"] for e in events if e["type"] == "batch_card"] == ["unknown_card", "missing_card"]
    assert events[-1]["to"] == custody.REJECTED and events[-1]["bad"] == 1 and events[-1]["missing"] == 1
    for step in (m.shuffle, m.seal, m.release):
        assert step(A)[0]["type"] == "custody_refused"
    assert m.state[A] == custody.REJECTED
    prepare(m, A)  # corrected and fed again
    assert m.release(A)[0]["to"] == custody.RELEASED


def test_door_opened_while_sealed_breaks_the_seal_and_forces_a_reshuffle():
    m = machine()
    first = prepare(m, A)
    ev = m.door_open()
    assert ev == [{"type": "custody", "batch": "A", "from": "sealed", "to": "broken",
                   "on": "door_open", "reason": "door"}]
    assert m.release(A)[0]["type"] == "custody_refused" and m.state[A] == custody.BROKEN
    assert m.shuffle(A)[0]["type"] == "custody_refused"  # no reshuffle without re-reading the cards
    second = prepare(m, A)
    assert second["id"] == "A-2" and second["commit"] != first["commit"]
    assert m.release(A)[0]["to"] == custody.RELEASED
    assert m.door_open() == []  # the released batch is in the shoe, not inside


def test_power_cut_mid_shuffle_breaks_the_batch():
    m = machine()
    feed(m, A, clean_reads())
    m.shuffle(A)
    saved = json.loads(json.dumps(m.snapshot()))  # what the journal would keep
    m2 = machine(seed=6)
    ev = m2.power_up(saved)
    assert ev == [{"type": "custody", "batch": "A", "from": "shuffling", "to": "broken",
                   "on": "power_up", "reason": "power"}]
    assert m2.shuffled(A)[0]["type"] == "custody_refused"
    assert m2.release(A)[0]["type"] == "custody_refused"
    prepare(m2, A)
    assert m2.release(A)[0]["to"] == custody.RELEASED


KEY = bytes(range(32))


def test_power_cut_keeps_a_released_batch_in_play_and_revealable_later():
    m = machine()
    seal = prepare(m, A)
    m.release(A)
    saved = json.loads(json.dumps(m.snapshot(KEY)))
    assert "salt" not in saved and "records" not in saved  # only the vault's ciphertext
    m2 = machine(seed=7)
    assert m2.power_up(saved, KEY) == []
    assert m2.state[A] == custody.RELEASED and m2.reveal(A) is None
    m2.load(A)
    r = m2.reveal(A)
    assert r["commitment"] == seal["commit"]
    assert r["records"] == list(m.records[A][:52]) and r["salt"] == commit.hexlify(m.salt[A])


def test_a_released_order_does_not_come_back_without_the_sealing_key():
    """The flash alone (another key, no key, an altered vault) gives no
    order: the batch stays in play, its reveal is lost and said to be."""
    m = machine()
    prepare(m, A)
    m.release(A)
    saved = json.loads(json.dumps(m.snapshot(KEY)))
    for key, vault in ((bytes(32), saved["vault"]), (None, saved["vault"]),
                       (KEY, [saved["vault"][0][:-2] + ("00" if saved["vault"][0][-2:] != "00" else "01"), None])):
        m2 = machine(seed=7)
        m2.power_up(dict(saved, vault=vault), key)
        assert m2.state[A] == custody.RELEASED and m2.lost[A]
        m2.load(A)
        assert m2.reveal(A) is None
    assert machine().snapshot()["vault"] == [None, None]


def test_mechanism_fault_breaks_a_batch_inside():
    m = machine()
    feed(m, A, clean_reads())
    m.shuffle(A)
    assert m.fault("jam")[0]["reason"] == "jam" and m.state[A] == custody.BROKEN


class FailAfter:
    """A source that is good for ``good`` bytes, then sticks."""

    def __init__(self, good):
        self.inner = entropy.SeededSource(1)
        self.left = good

    def read(self, buf):
        self.inner.read(buf)
        for i in range(len(buf)):
            if self.left <= 0:
                buf[i] = 0
            self.left -= 1
        return buf


def test_entropy_fault_tilts_and_breaks_the_batch():
    m = custody.Shuffler(REG, shuffle.Decider(FailAfter(1024 + 96 + 64), max_cards=52), max_cards=52)
    prepare(m, B)  # start-up, instantiation and one reseed: good
    feed(m, A, clean_reads())
    events = m.shuffle(A)  # the reseed reads the stuck source
    assert events[0] == {"type": "tilt", "reason": "entropy_rct"}
    assert {(e["batch"], e["to"]) for e in events[1:]} == {("A", "broken"), ("B", "broken")}
    for step in (m.release, m.load):
        assert "tilted" in step(B)[0]["why"]
    assert m.clear_tilt(shuffle.Decider(entropy.SeededSource(2), max_cards=52)) == [{"type": "tilt_cleared"}]
    prepare(m, B)
    assert m.release(B)[0]["to"] == custody.RELEASED


def test_a_good_card_read_allocates_no_event():
    m = machine()
    m.load(A)
    assert m.read(rec(A, 1, 0), A) is custody.NONE
    assert m.read(rec(A, 1, 0), A)[0]["kind"] == "duplicate_card"
    assert m.read(-1, A)[0]["kind"] == "unknown_card"
    assert m.load(B)[0]["type"] == "custody_refused"  # one intake


# -- commitment -----------------------------------------------------------------

def test_commitment_layout_and_it_opens_only_for_the_right_order_and_salt():
    import hashlib
    salt = bytes(range(16))
    order = [5, 3, 800, 0]
    h = commit.digest(salt, "A-1", order)
    expected = hashlib.sha256(b"baccarat shuffler commit v1\x00" + salt + b"\x03A-1" + b"\x00\x04"
                              + b"".join(r.to_bytes(2, "big") for r in order)).digest()
    assert h == expected
    assert commit.opens(h, salt, "A-1", order)
    assert not commit.opens(h, salt, "A-1", [3, 5, 800, 0])          # two cards swapped
    assert not commit.opens(h, bytes(16), "A-1", order)              # wrong salt
    assert not commit.opens(h, salt, "A-2", order)                   # wrong batch
    assert not commit.opens(h, salt, "A-1", order[:3])               # a card short
    assert not commit.opens(h, salt[:15], "A-1", order)              # malformed salt: False, not a crash
    big = list(range(416))
    assert commit.digest(salt, "B-9", big) == hashlib.sha256(
        commit.TAG + salt + b"\x03B-9" + (416).to_bytes(2, "big")
        + b"".join(r.to_bytes(2, "big") for r in big)).digest()
