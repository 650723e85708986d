"""The shuffler as a device: its firmware in the MicroPython VM on the
mechanism model, its events through the real bridge into SQLite
(host_tools/sim/rigs/shuffler.py). The happy path and every fault scenario
of docs/shuffler.md: each ends in the documented state (docs/shuffler.md, "Faults")
with a clear event, and nothing that should not be released is.
"""

import pytest

from firmware.baccarat import cards
from host_tools.sim.shuffler_emulate import TwoBatchSet
from host_tools.sim.rigs.shuffler import Rig, reveal_from
from firmware.shuffler import commit

A, B = 1, 2


@pytest.fixture
def rig(tmp_path):
    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=1, seed=5)
    yield r
    r.close()


def names(uids):
    return [cards.name(TwoBatchSet.card_of(u)[2]) for u in uids]


def nothing_released(rig, batch="A"):
    """Release is refused and the output stays empty."""
    since = rig.mark()
    rig.emu.press("release")
    refused = rig.wait(lambda e: e.get("type") == "custody_refused" and e.get("on") == "release",
                       "release refused", 20, since)
    assert rig.emu.take() == []
    return refused


def test_load_check_shuffle_seal_release_return_reveal(rig):
    uids = rig.emu.cards.new_deck_order(A)
    since = rig.load("A", uids)
    sealed = rig.custody("A", "sealed", since=since)
    assert sealed["id"] == "A-1" and len(sealed["commit"]) == 64
    # Nothing about the order has left the machine: no event names a card.
    assert not [e for e in rig.events if "records" in e or ("cards" in e and isinstance(e["cards"], list))]
    rig.emu.press("release")
    rig.custody("A", "released", since=since)
    stack = rig.emu.take()
    assert sorted(u for u, _c in stack) == sorted(uids) and [u for u, _c in stack] != uids
    # The batch comes back (all of it, dealt or not) and is loaded again:
    # the order and salt are revealed, and they open the published commitment.
    since = rig.load("A", [u for u, _c in stack])
    rig.custody("A", "checked", since=since)
    doc = reveal_from(rig.events, "A-1")
    assert doc is not None and len(doc["records"]) == 52
    assert commit.opens(bytes.fromhex(sealed["commit"]), bytes.fromhex(doc["salt"]), "A-1", doc["records"])
    reg = rig.emu.cards.registry.Registry(rig.emu.cards.encode())
    assert [cards.name(reg.card(r)) for r in doc["records"]] == names([u for u, _c in stack])
    # The read-back is the order the next shuffle pass feeds: committed at
    # once, not published (nothing lists it before A-2 is revealed).
    second = rig.custody("A", "sealed", since=since)
    assert second["id"] == "A-2" and second["commit"] != sealed["commit"]
    committed = rig.wait(lambda e: e.get("type") == "returned_commit" and e.get("id") == "A-1", "returned_commit")
    assert committed["n"] == 52 and len(committed["commit"]) == 64 and "cards" not in committed
    assert not [e for e in rig.events if e.get("type") == "returned"]
    assert doc["returned"] == [] and doc["returned_pending"]
    # A-2 goes to the shoe and comes back: now A-1's read-back is revealed
    # with A-2's order, and it opens its commitment.
    rig.emu.press("release")
    rig.custody("A", "released", since=since)
    stack2 = rig.emu.take()
    since = rig.load("A", [u for u, _c in stack2])
    rig.custody("A", "checked", since=since)
    back = reveal_from(rig.events, "A-1")
    assert back["returned"] == names([u for u, _c in stack])
    rc = back["returned_check"]
    assert rc["published"] == committed["commit"]
    assert commit.opens(bytes.fromhex(rc["published"]), bytes.fromhex(rc["salt"]), "A-1" + commit.RETURNED_SUFFIX,
                        rc["records"])
    assert reveal_from(rig.events, "A-2")["order"] == names([u for u, _c in stack2])


def test_jam_breaks_custody_and_a_new_feed_recovers(rig):
    rig.emu.op("jam 400")
    since = rig.load("A", rig.emu.cards.new_deck_order(A))
    fault = rig.wait(lambda e: e.get("type") == "mech_fault", "mech_fault", since=since)
    assert fault["reason"] == "jam" and fault["batch"] == "A" and fault["card"] == 0
    broken = rig.custody("A", "broken", since=since)
    assert broken["reason"] == "jam" and broken["from"] == "loading"
    nothing_released(rig)
    rig.emu.take(everything=True)
    since = rig.load("A", rig.emu.cards.new_deck_order(A))
    assert rig.custody("A", "sealed", since=since)["id"] == "A-1"


def test_double_feed_breaks_custody(rig):
    rig.emu.op("double")
    since = rig.load("A", rig.emu.cards.new_deck_order(A))
    fault = rig.wait(lambda e: e.get("type") == "mech_fault", "mech_fault", since=since)
    assert fault["reason"] == "double_feed"
    assert rig.custody("A", "broken", since=since)["reason"] == "double_feed"
    nothing_released(rig)


def test_door_opened_while_sealed_breaks_the_seal(rig):
    since = rig.load("A", rig.emu.cards.new_deck_order(A))
    rig.custody("A", "sealed", since=since)
    rig.emu.op("door open")
    broken = rig.custody("A", "broken", since=since)
    assert broken["from"] == "sealed" and broken["reason"] == "door"
    assert rig.wait(lambda e: e.get("type") == "door" and e["shut"] is False, "door event", 10, since)
    refused = nothing_released(rig)
    assert refused["state"] == "broken"


def test_power_cut_mid_shuffle(tmp_path):
    """The cut lands halfway through the shuffle: the model holds there
    (``hold``: the check pass stacks every card once, the shuffle again),
    since a fast host finishes a whole batch between two looks at the
    record."""
    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=4, seed=6)
    try:
        cards = r.emu.cards.new_deck_order(A)
        r.emu.op("hold %d" % (len(cards) + len(cards) // 2))
        since = r.load("A", cards)
        assert r.emu.notice("held ") == "held %d" % (len(cards) // 2)
        r.emu.power_cut()
        assert not [e for e in r.events if e.get("to") == "shuffled"]  # cut before the stack was complete
        since = r.mark()
        r.emu.start()
        broken = r.custody("A", "broken", since=since)
        assert broken["reason"] == "power" and broken["on"] == "power_up"
        # The first power-on's events may reach the store only after the cut
        # (the restored shuffler resends what was never acked), so the boots
        # are told apart by order, not by the mark.
        boots = [e["restored"] for e in r.events if e.get("type") == "shuffler_boot"]
        assert boots == [False, True], boots
        nothing_released(r)
    finally:
        r.close()


def test_entropy_failure_tilts(rig):
    rig.emu.op("entropy stuck")
    since = rig.load("A", rig.emu.cards.new_deck_order(A))
    tilt = rig.wait(lambda e: e.get("type") == "tilt" and e.get("source") == "shuffler", "tilt", since=since)
    assert tilt["reason"] == "entropy_rct"
    assert rig.custody("A", "broken", since=since)["reason"] == "entropy_rct"
    assert not [e for e in rig.events if e.get("to") == "sealed"]
    refused = nothing_released(rig)
    assert "tilted" in refused["why"]
    since = rig.mark()
    rig.emu.press("clear")  # still stuck: the start-up test refuses
    rig.wait(lambda e: e.get("type") == "error" and "clear refused" in e.get("message", ""), "clear refused",
             20, since)
    rig.emu.op("entropy good")
    rig.emu.press("clear")
    rig.wait(lambda e: e.get("type") == "tilt_cleared", "tilt_cleared", 20, since)


def test_a_foreign_card_is_named_and_the_batch_rejected(rig):
    uids = rig.emu.cards.new_deck_order(A)
    foreign = bytes([4, 0xEE, 1, 2, 3, 4, 5])
    since = rig.load("A", uids[:10] + [foreign] + uids[10:])
    bad = rig.wait(lambda e: e.get("type") == "batch_card", "batch_card", since=since)
    assert bad["kind"] == "unknown_card" and bad["pos"] == 11 and "04ee0102030405" in bad["name"].lower()
    rejected = rig.custody("A", "rejected", since=since)
    assert rejected["bad"] == 1
    assert not [e for e in rig.events if e.get("to") in ("shuffling", "sealed")]
    assert len(rig.emu.take()) == 53  # the rejected stack goes back to the operator, not to a shoe


def test_a_missing_card_is_named_and_the_batch_rejected(rig):
    uids = rig.emu.cards.new_deck_order(A)
    since = rig.load("A", uids[:20] + uids[21:])
    rejected = rig.custody("A", "rejected", since=since)
    assert rejected["missing"] == 1
    missing = [e for e in rig.shuffler_events("batch_card") if e["kind"] == "missing_card"]
    assert len(missing) == 1 and missing[0]["card"] == names([uids[20]])[0]
    assert len(rig.emu.take()) == 51  # back to the operator
    nothing_released(rig)


def leds(rig, want, timeout=10.0):
    """The LEDs (ready, sealed, fault) once they show ``want`` (the loop
    sets them after it answered the operator line), or what they last showed."""
    import time
    end = time.monotonic() + timeout
    while True:
        s = rig.emu.state()
        got = (s["led_ready"], s["led_sealed"], s["led_fault"])
        if got == want or time.monotonic() > end:
            return got
        time.sleep(0.05)


def test_status_leds(rig):
    assert leds(rig, (1, 0, 0)) == (1, 0, 0)
    since = rig.load("A", rig.emu.cards.new_deck_order(A))
    rig.custody("A", "sealed", since=since)
    assert leds(rig, (1, 1, 0)) == (1, 1, 0)
    rig.emu.op("door open")
    rig.custody("A", "broken", since=since)
    assert leds(rig, (1, 0, 1)) == (1, 0, 1)


def test_the_journal_is_compacted_and_the_chain_survives_a_power_cut(tmp_path):
    import os
    import time

    from host_tools.store import db
    from host_tools.verify import check_shoe
    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=1, seed=8, journal_compact=600)
    journal = os.path.join(r.emu.dir, "journal.bin")
    try:
        since = r.load("A", r.emu.cards.new_deck_order(A))
        r.custody("A", "sealed", since=since)
        end = time.monotonic() + 20
        while os.path.getsize(journal) > 600 and time.monotonic() < end:
            time.sleep(0.1)  # the host acks everything, then the idle shuffler compacts
        assert os.path.getsize(journal) <= 600
        r.emu.power_cut()
        since = r.mark()
        r.emu.start()
        boot = r.wait(lambda e: e.get("type") == "shuffler_boot", "shuffler_boot", 20, since)
        assert boot["restored"] is True
        r.custody("A", "broken", since=since)   # the power cut broke the seal, as ever
        seqs = [s for s, _e in r.bridge.events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no seq lost or repeated
    finally:
        r.close()
    with db.Store(str(tmp_path / "s.db")) as store:
        assert check_shoe(store, "SHUF1") is None  # the hash chain and tags hold across the compaction
