"""A shoe dealt through its reader: main.py in the MicroPython VM polls the
firmware PN532 driver over a pty, answered by the wire-level simulator, and
checks every tag against the enrolled card set in its flash, as a board does.

Unknown, duplicate and wrong-batch tags each raise their irregularity and
leave the game exactly as if they had never been drawn; a duplicate is still
caught after a power cut, because the journal records which physical card
left; the enrolled cover card ends the shoe by Ch 9D.
"""

import shutil
import time

import pytest

from support.emuhost import emulate_cli, powered_on, started
from host_tools.sim.chipwait import EMULATED_ACK_MS
from host_tools.sim.emulate import Emulator

from firmware.baccarat import cards, script
from firmware.cardset import registry


def uid(card_name, deck, batch=registry.BATCH_A):
    return bytes([4, batch, deck, cards.parse(card_name), 0x5A, 0xC3, 0x11])


COVER_UID = bytes([4, 0xC0, 0xFE, 0x01, 0x02, 0x03, 0x04])
UNKNOWN_UID = bytes([4, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE])


@pytest.fixture(scope="module")
def cardset(tmp_path_factory):
    """Batch A of 8 decks and batch B of 1 deck in one file, one cover card."""
    entries = [(uid(cards.name(c), d + 1, b), c, d + 1, b)
               for b, decks in ((registry.BATCH_A, 8), (registry.BATCH_B, 1))
               for d in range(decks) for c in range(52)]
    entries.append((COVER_UID, registry.COVER, 0, 0))
    path = tmp_path_factory.mktemp("set") / "cardset.bin"
    path.write_bytes(registry.encode(registry.KIND_UID, entries, 8, 1))
    return path


@pytest.fixture(scope="module")
def staged(tmp_path_factory, cardset):
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "EMU2", reader="pn532", cardset=cardset).close()
    return base


@pytest.fixture
def shoe(staged, cardset, tmp_path):
    with powered_on(staged, tmp_path / "flash", "EMU2", reader="pn532", cardset=cardset) as (emu, host):
        host.hello()
        yield emu, host


def draw(emu, host, tag, **expect):
    """Present one tag and wait for the event it must cause."""
    emu.present(tag)
    return host.wait_event(**expect)


def core(host):
    return [e for e in host.event_list() if e.get("source") != "link"]


def reference(lines):
    import json
    out = []
    script.run(lines, lambda buf, n: out.append(json.loads(bytes(buf[:n]))))
    return out


GOOD = [("2C", 1), ("4S", 1), ("5S", 1), "bets", ("9H", 1), ("2C", 2), ("KS", 1), ("3D", 1)]


def deal_good(emu, host, steps):
    for step in steps:
        if step == "bets":
            emu.deal("bets")
            host.wait_event(type="bets")
        else:
            name, deck = step
            n = len([e for e in host.event_list() if e.get("type") == "card"])
            emu.present(uid(name, deck))
            host.wait(lambda: len([e for e in host.event_list() if e.get("type") == "card"]) > n,
                      what="the card event of %s" % name)


def test_bad_tags_raise_irregularities_and_change_nothing(shoe):
    emu, host = shoe
    emu.deal("shoe decks=8")
    host.wait_event(type="shoe")
    deal_good(emu, host, GOOD[:5])  # burn, bets, P1 9H of deck 1
    _, unknown = draw(emu, host, UNKNOWN_UID, type="irregularity", rule="unknown_card")
    _, dup = draw(emu, host, uid("9H", 1), type="irregularity", rule="duplicate_card")
    _, wrong = draw(emu, host, uid("QH", 1, registry.BATCH_B), type="irregularity", rule="wrong_batch")
    deal_good(emu, host, GOOD[5:])
    host.wait_event(type="result")
    assert "eeeeeeeeeeee" in unknown["detail"]
    assert dup["card"] == "9H" and "deck 1" in dup["detail"]
    assert wrong["card"] == "QH" and "batch B" in wrong["detail"]
    # Without the three irregularities, the stream is the one the same good
    # cards give through the core alone.
    kept = [e for e in core(host) if e["type"] != "irregularity"]
    # Each card event names its physical card's deck from the card set
    # (docs/rules.md, "Cold decks"); the core alone, without a card set, has none.
    decks = [e.pop("deck") for e in kept if e["type"] == "card"]
    assert decks == [step[1] for step in GOOD if step != "bets"]
    want = reference(["shoe decks=8", "2C", "4S", "5S", "bets", "9H", "2C", "KS", "3D"])
    assert kept == want
    # Nothing on the way compared a bytes rule with a str one (MicroPython
    # warns on its stderr, and such a comparison is always False).
    with open(emu.stderr_path) as f:
        assert "Warning" not in f.read()


def test_duplicate_is_caught_after_a_power_cut(shoe):
    emu, host = shoe
    emu.deal("shoe decks=8")
    host.wait_event(type="shoe")
    deal_good(emu, host, GOOD[:6])
    emu.power_cut()
    emu.start()
    emu.wait_booted()
    host.hello()
    host.wait_event(type="boot", resumed=True)
    # 2C of deck 2 left the shoe before the cut: the same tag again is a duplicate.
    _, dup = draw(emu, host, uid("2C", 2), type="irregularity", rule="duplicate_card")
    assert dup["card"] == "2C" and "deck 2" in dup["detail"]
    # The round goes on from where it was: P2 is next.
    _, card = draw(emu, host, uid("KS", 1), type="card", card="KS")
    assert card["pos"] == "P2"


def test_enrolled_cover_card_ends_the_shoe(shoe):
    emu, host = shoe
    emu.deal("shoe decks=8")
    host.wait_event(type="shoe")
    deal_good(emu, host, GOOD[:5])
    _, cover = draw(emu, host, COVER_UID, type="cover")
    deal_good(emu, host, GOOD[5:])
    host.wait_event(type="last_hand")
    assert cover["rule"] == "9D"


def test_a_shoe_without_its_card_set_says_so(staged, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(staged, bare)
    (bare / "cardset.bin").unlink()
    with powered_on(bare, tmp_path / "flash", "EMU2", reader="pn532") as (emu, host):
        host.hello()
        _, err = host.wait_event(type="error")
        assert "card set" in err["message"] and "not loaded" in err["message"]


def test_a_reader_deaf_to_its_first_command_at_power_on_still_deals(staged, cardset, tmp_path):
    """A PN532 can lose what it is sent while it wakes: the board configures
    it again (boards/parts.py BEGIN_TRIES) instead of halting the shoe over
    one lost command, and the shoe deals through it. Here the chip hears
    nothing for its first EMULATED_ACK_MS + 200 ms awake, so the first
    command is always lost and the third is always heard, however loaded
    the machine."""
    shutil.copytree(staged, tmp_path / "flash")
    emu = Emulator(str(tmp_path / "flash"), "EMU2", reader="pn532", cardset=cardset)
    answer = emu.chip.receive
    deaf = []

    def wakes_late(data):
        now = time.monotonic()
        if not deaf:
            deaf.append(now + (EMULATED_ACK_MS + 200) / 1000)
        if now < deaf[0]:
            return None
        return answer(data)

    emu.chip.receive = wakes_late
    with started(emu) as host:
        host.connect()
        hello = host.hellos()[-1]
        assert deaf and hello["tilt"] is None and "parts" not in hello, hello
        emu.deal("shoe decks=8")
        host.wait_event(type="shoe")
        deal_good(emu, host, GOOD[:1])   # the burn card, read by the reader


def test_shoe_emulate_deals_a_whole_shoe_through_the_reader(tmp_path):
    with emulate_cli(tmp_path / "flash", "--seed", "5", "--interval", "0.001", "--reader", "pn532",
                     "--irregularities", "0.05") as h:
        h.wait_event(timeout=60, type="shoe_end")
        events = h.event_list()
        assert not [e for e in events if e["type"] == "error"], events[:12]
        assert not [e for e in events if e.get("rule") in ("unknown_card", "duplicate_card",
                                                           "wrong_batch", "reader_fault")]
        # The dealer's face-up mistakes reach the shoe as "exposed card" presses.
        assert [e for e in events if e.get("rule") == "13D"]
        end = [e for e in events if e["type"] == "shoe_end"][0]
        assert end["reason"] == "cover" and end["excess"] == {}
        assert sum(end["counts"].values()) == len([e for e in events if e["type"] == "card"])


def test_back_sensor_catches_a_foreign_back_and_a_face_up_card(shoe):
    emu, host = shoe
    emu.deal("shoe decks=8")
    host.wait_event(type="shoe")
    deal_good(emu, host, GOOD[:4])  # burn, then "no more bets"
    # A card of batch A whose back reads as batch B's colour (Ch 3B).
    emu.deal("sensor back_b")
    _, wrong = draw(emu, host, uid("9H", 1), type="irregularity", rule="wrong_batch")
    assert "back colour of batch B" in wrong["detail"]
    emu.deal("sensor back_a")
    deal_good(emu, host, [("9H", 2)])
    # B1 leaves face up: the sensor sees its face, and 13D follows.
    emu.deal("sensor face")
    _, card = draw(emu, host, uid("3H", 1), type="card", card="3H")
    assert card["pos"] == "B1" and card["up"] is True
    host.wait_event(type="irregularity", rule="13D")
    host.wait_event(type="void", rule="13D")


def test_with_a_reader_no_card_bypasses_the_card_set(shoe):
    emu, host = shoe
    emu.deal("shoe decks=8")
    host.wait_event(type="shoe")
    emu.deal("9H")
    _, err = host.wait_event(type="error")
    assert "'9H' ignored" in err["message"] and "from the reader" in err["message"]
    assert not host.find(type="card")


def test_new_shoe_batch_b_from_the_bridge_then_a_batch_a_card_is_refused(staged, cardset, tmp_path):
    """`shoe bridge --send "new_shoe batch=B"` reaches the shoe through the
    bridge's signed command: the shoe event says batch B, and a card of
    batch A is then an irregularity (Ch 3B), not a card of the game."""
    import json
    import subprocess
    import sys
    from support.bridgecli import send as _send, start_bridge as _bridge, wait_event as _wait_event, wait_up as _wait_up
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    emu = Emulator(str(flash), "EMU2", reader="pn532", cardset=cardset)
    emu.start()
    path = tmp_path / "s.db"
    bridge = _bridge(emu.host_path, path, emu.key_path)
    try:
        _wait_up(path)
        assert _send(path, "new_shoe batch=B").startswith("ok sent shoe")
        shoe = _wait_event(path, "EMU2", lambda e: e["type"] == "shoe")[0]
        assert shoe["batch"] == "B"
        emu.deal("sensor back_b")  # the dealer now deals batch B's backs
        emu.present(uid("7C", 1, registry.BATCH_B))  # batch B's first burn card is taken
        _wait_event(path, "EMU2", lambda e: e["type"] == "card" and e["card"] == "7C")
        emu.present(uid("9H", 3))  # a batch-A card
        wrong = _wait_event(path, "EMU2", lambda e: e.get("rule") == "wrong_batch")[0]
        assert wrong["card"] == "9H" and "batch B" in wrong["detail"]
    finally:
        bridge.terminate()
        bridge.wait(10)
        emu.close()
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "export", "--db", str(path)],
                       capture_output=True, text=True, timeout=60)
    cards = [json.loads(line) for line in r.stdout.splitlines() if '"type":"card"' in line]
    assert [c["card"] for c in cards] == ["7C"]  # the foreign card never entered the game
