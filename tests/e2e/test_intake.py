"""Reader ID -> game, with unknown, duplicate and wrong-batch cards and the cover card.

A shoe is dealt through the intake into the real game core twice: once
clean and once with bad cards drawn between the good ones. Apart from the
irregularity events, the two event streams must be identical. A recording
fake game is used only where the test is about the exact call made.
"""

import json
import random
import subprocess
import sys

import pytest

from host_tools.sim import vmcode
from host_tools.sim.chipwait import EMULATED_ACK_MS
from host_tools.vm import ROOT, exec_firmware
from support.cardsets import make_entries
from support.vmrun import compiled_firmware, run_vm


from firmware.baccarat import cards, game
from firmware.cardset import intake, registry


class Recorder:
    def __init__(self):
        self.calls = []

    def card(self, c, up):
        self.calls.append(("card", c, up))

    def alert(self, rule, card, detail):
        self.calls.append(("alert", rule, card, detail))

    def cover(self):
        self.calls.append(("cover",))


@pytest.fixture()
def setup():
    entries = make_entries(8, 8, seed=11, covers=2)
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 8, 8))
    game = Recorder()
    feeder = intake.Intake(reg, game)
    feeder.new_shoe(registry.BATCH_A)
    return entries, feeder, game


def take(feeder, ident, colour=intake.NO_SENSOR):
    buf = bytearray(16)
    buf[:len(ident)] = ident
    return feeder.take(buf, len(ident), colour)


def test_good_cards_reach_the_game_with_the_sensor_face_flag(setup):
    entries, feeder, game = setup
    a = [e for e in entries if e[3] == registry.BATCH_A]
    assert take(feeder, a[0][0], 0) == a[0][1]
    assert take(feeder, a[1][0], 1) == a[1][1]
    assert take(feeder, a[2][0]) == a[2][1]
    assert game.calls == [("card", a[0][1], True), ("card", a[1][1], False), ("card", a[2][1], False)]


def test_a_cover_card_goes_to_game_cover_whatever_its_back_and_however_often(setup):
    entries, feeder, game = setup
    covers = [e for e in entries if e[1] == registry.COVER]
    a = [e for e in entries if e[3] == registry.BATCH_A]
    assert len(covers) == 2
    # The cover's back is neither batch colour: the sensor may read either
    # (or a face); none of that is a wrong-batch card.
    assert take(feeder, covers[0][0], registry.BATCH_B) == registry.COVER
    assert take(feeder, a[0][0], registry.BATCH_A) == a[0][1]
    assert take(feeder, covers[1][0], intake.FACE) == registry.COVER
    assert take(feeder, covers[0][0], registry.BATCH_A) == registry.COVER  # no duplicate bit
    assert take(feeder, covers[1][0]) == registry.COVER
    assert game.calls == [("cover",), ("card", a[0][1], False), ("cover",), ("cover",), ("cover",)]
    feeder.new_shoe(registry.BATCH_B)  # cover cards serve either batch
    assert take(feeder, covers[0][0], registry.BATCH_A) == registry.COVER
    assert game.calls[-1] == ("cover",)


def test_bad_cards_raise_irregularities_and_leave_the_deal_unchanged(setup):
    entries, feeder, game = setup
    rng = random.Random(3)
    a = [e for e in entries if e[3] == registry.BATCH_A]
    b = [e for e in entries if e[3] == registry.BATCH_B]
    deal = rng.sample(a, 30)
    assert len(a) == len(b) == 416
    unknown = bytes.fromhex("04deadbeef0001")
    assert unknown not in {e[0] for e in entries}
    dup = deal[4]
    A, B = registry.BATCH_A, registry.BATCH_B
    stream = ([(e, A) for e in deal[:10]] + [((unknown, -1, 0, 0), A)]
              + [(e, A) for e in deal[10:15]] + [(dup, A)]
              + [(e, A) for e in deal[15:20]] + [(b[7], B)]
              + [(e, A) for e in deal[20:25]] + [(deal[25], B)]  # A card whose back reads B
              + [(e, A) for e in deal[25:]])
    results = [take(feeder, e[0], col) for e, col in stream]

    dealt = [c for c in game.calls if c[0] == "card"]
    assert dealt == [("card", e[1], False) for e in deal]
    alerts = [c for c in game.calls if c[0] == "alert"]
    name = cards.name
    assert alerts == [
        ("alert", "unknown_card", -1, "ID 04deadbeef0001 is not in the loaded card set"),
        ("alert", "duplicate_card", dup[1],
         "%s of deck %d batch A was already dealt from this shoe" % (name(dup[1]), dup[2])),
        ("alert", "wrong_batch", b[7][1],
         "%s of deck %d batch B, but the shoe deals batch A" % (name(b[7][1]), b[7][2])),
        ("alert", "wrong_batch", deal[25][1],
         "%s of deck %d batch A shows the back colour of batch B" % (name(deal[25][1]), deal[25][2])),
    ]
    assert results.count(-1) == 4
    # The alerts sit exactly where the bad cards were drawn.
    order = [c[1] if c[0] == "alert" else None for c in game.calls]
    assert [i for i, r in enumerate(order) if r] == [10, 16, 22, 28]


DEAL = """
import json
from baccarat import game
from cardset import intake


def deal(reg, stream, events=None):
    # stream: (ID bytes, back-sensor colour); returns the game's events as
    # text, appended to ``events`` (the VM's prints them as they come: a
    # whole shoe's list no longer fits its 128 KiB beside the game core
    # compiled from source).
    if events is None:
        events = []
    g = game.Game(lambda buf, n: events.append(bytes(buf[:n]).decode()))
    feeder = intake.Intake(reg, g)
    g.new_shoe(8)
    feeder.new_shoe(1)
    buf = bytearray(16)
    for ident, colour in stream:
        if g.phase == game.OPEN:
            g.bets()
        for k in range(len(ident)):
            buf[k] = ident[k]
        feeder.take(buf, len(ident), colour)
    return events
"""
deal = exec_firmware(DEAL)["deal"]


def shoe_streams(entries, seed):
    """A clean 8-deck deal of 120 cards, and the same with bad cards drawn in between."""
    rng = random.Random(seed)
    a = [e for e in entries if e[3] == registry.BATCH_A]
    b = [e for e in entries if e[3] == registry.BATCH_B]
    rng.shuffle(a)
    clean = [(a[0][0], intake.FACE)] + [(e[0], registry.BATCH_A) for e in a[1:120]]
    bad = list(clean)
    # (position in the clean deal before which it is drawn, ID, sensor colour)
    inserts = [
        (3, bytes.fromhex("04c0ffee000001"), registry.BATCH_A),   # unknown tag, during the burn
        (20, a[15][0], registry.BATCH_A),                         # duplicate tag, mid-shoe
        (41, b[0][0], registry.BATCH_B),                          # the other batch's card
        (66, a[130][0], registry.BATCH_B),                        # batch A tag under a B back
        (90, a[89][0], intake.FACE),                              # duplicate, face up
    ]
    for pos, ident, colour in reversed(inserts):
        bad.insert(pos, (ident, colour))
    return clean, bad, a, b


def test_a_shoe_dealt_through_the_reader_is_unchanged_by_bad_cards(setup):
    entries, _feeder, _game = setup
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 8, 8))
    clean, bad, a, b = shoe_streams(entries, seed=9)
    plain = deal(reg, clean)
    mixed = deal(reg, bad)
    irregular = [e for e in mixed if '"type":"irregularity"' in e and '"action":"ignored; game unchanged"' in e]
    assert [e for e in mixed if e not in irregular] == plain
    assert sum('"type":"result"' in e for e in plain) >= 8  # rounds were really dealt
    got = [json.loads(e) for e in irregular]
    assert [(e["rule"], e.get("card"), e["section"]) for e in got] == [
        ("unknown_card", None, "Ch 4"),
        ("duplicate_card", cards.name(a[15][1]), "Ch 4"),
        ("wrong_batch", cards.name(b[0][1]), "Ch 3B, 4D"),
        ("wrong_batch", cards.name(a[130][1]), "Ch 3B, 4D"),
        ("duplicate_card", cards.name(a[89][1]), "Ch 4"),
    ]
    assert got[0]["detail"] == "ID 04c0ffee000001 is not in the loaded card set"
    assert got[3]["detail"] == "%s of deck %d batch A shows the back colour of batch B" % (
        cards.name(a[130][1]), a[130][2])


COVERED = DEAL + """

def deal_direct(reg, stream, covers_at):
    # The same deal fed straight to the game, with game.cover() called where
    # the cover cards were drawn: what the intake must reproduce.
    events = []
    g = game.Game(lambda buf, n: events.append(bytes(buf[:n]).decode()))
    g.new_shoe(8)
    for j in range(len(stream)):
        if g.phase == game.OPEN:
            g.bets()
        if j in covers_at:
            g.cover()
        else:
            ident, colour = stream[j]
            g.card(reg.card(reg.find(ident, len(ident))), colour == 0)
    return events
"""
deal_direct = exec_firmware(COVERED)["deal_direct"]


def test_the_cover_card_ends_the_shoe_through_the_intake_and_a_second_is_the_games_error(setup):
    entries, _feeder, _game = setup
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 8, 8))
    clean, _bad, _a, _b = shoe_streams(entries, seed=9)
    covers = [e[0] for e in entries if e[1] == registry.COVER]
    # Cover 1 drawn at 60 (its back read as batch B's colour), then, before
    # the shoe ends, the second cover card (read as a face).
    stream = clean[:60] + [(covers[0], registry.BATCH_B)] + clean[60:62] + [(covers[1], intake.FACE)] + clean[62:]
    events = deal(reg, stream)
    assert events == deal_direct(reg, stream, (60, 63))
    got = [json.loads(e) for e in events]
    kinds = [e["type"] for e in got]
    assert kinds.count("cover") == 1 and "irregularity" not in kinds
    cover = got[kinds.index("cover")]
    assert (cover["rule"], cover["left"]) == ("9D", 8 * 52 - 60)
    end = kinds.index("shoe_end")
    errors = [e for e in got[:end] if e["type"] == "error"]
    assert [e["message"] for e in errors] == ["cover card seen twice in one shoe"]
    assert kinds.index("error") > kinds.index("cover")
    # Ch 9D: complete the hand, "last hand", one more hand, then the shoe ends
    # (the rest of the stream is drawn from a finished shoe).
    assert got[end]["reason"] == "cover"
    assert kinds.index("cover") < kinds.index("last_hand") < end
    assert kinds[kinds.index("last_hand"):end].count("result") == 1


VM_DEAL = DEAL + """
import sys
from cardset import registry
reg = registry.load(sys.argv[1])
raw = open(sys.argv[2], "rb").read()
stream = []
for k in range(len(raw) // 8):
    stream.append((raw[8 * k:8 * k + 7], raw[8 * k + 7] - 1))
class Printer:
    def append(self, e):
        print(e)


deal(reg, stream, Printer())
"""


def test_the_same_bad_shoe_gives_the_same_events_in_the_micropython_vm(setup, tmp_path):
    entries, _feeder, _game = setup
    data = registry.encode(registry.KIND_UID, entries, 8, 8)
    _clean, bad, _a, _b = shoe_streams(entries, seed=9)
    (tmp_path / "set.bin").write_bytes(data)
    (tmp_path / "stream.bin").write_bytes(b"".join(i + bytes([c + 1]) for i, c in bad))
    vm = run_vm(VM_DEAL, str(tmp_path / "set.bin"), str(tmp_path / "stream.bin")).splitlines()
    assert vm == deal(registry.Registry(data), bad)


def test_a_new_shoe_lets_every_card_be_dealt_again_and_switches_batch(setup):
    entries, feeder, game = setup
    a0 = [e for e in entries if e[3] == registry.BATCH_A][0]
    b0 = [e for e in entries if e[3] == registry.BATCH_B][0]
    take(feeder, a0[0])
    take(feeder, a0[0])
    feeder.new_shoe(registry.BATCH_A)
    take(feeder, a0[0])
    feeder.new_shoe(registry.BATCH_B)
    take(feeder, b0[0], registry.BATCH_B)
    assert [c[:2] for c in game.calls] == [("card", a0[1]), ("alert", "duplicate_card"),
                                           ("card", a0[1]), ("card", b0[1])]


def test_a_batch_the_card_set_does_not_hold_is_refused():
    entries = make_entries(1, 0)
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 1, 0))
    with pytest.raises(ValueError, match="card set has no batch B"):
        intake.Intake(reg, Recorder()).new_shoe(registry.BATCH_B)


def test_printed_codes_are_named_as_text_when_unknown():
    entries = make_entries(1, 0, kind=registry.KIND_CODE)
    reg = registry.Registry(registry.encode(registry.KIND_CODE, entries, 1, 0))
    game = Recorder()
    take(intake.Intake(reg, game), b"NOPE-42")
    assert game.calls == [("alert", "unknown_card", -1, 'ID "NOPE-42" is not in the loaded card set')]


VM_SCRIPT = vmcode.LOCK_HEAP + """
import sys, micropython
from cardset import registry, intake
data = open(sys.argv[1], "rb").read()
ids = open(sys.argv[2], "rb").read()
class Game:
    def __init__(self):
        self.n = 0
        self.sum = 0
        self.covers = 0
        self.alerts = []
    def card(self, c, up):
        self.n += 1
        self.sum += c
    def cover(self):
        self.covers += 1
    def alert(self, rule, card, detail):
        self.alerts.append((rule, card, detail))
g = Game()
feeder = intake.Intake(registry.Registry(data), g)
feeder.new_shoe(registry.BATCH_A)
buf = bytearray(7)


def deal_all(count):
    # In a function: new module globals would grow the globals dict.
    lock_heap()  # the normal path must not allocate at all
    j = 0
    while j < count:
        k = 0
        while k < 7:
            buf[k] = ids[j * 7 + k]
            k += 1
        feeder.take(buf, 7, 1)
        j += 1
    micropython.heap_unlock()


deal_all(len(ids) // 7)
feeder.take(buf, 7, 1)
buf[0] ^= 0xFF
feeder.take(buf, 7, 1)
print(g.n, g.sum, g.covers)
for a in g.alerts:
    print(a[0], a[1], a[2])
"""


def test_intake_in_the_vm_allocates_nothing_for_good_cards_and_covers(tmp_path):
    entries = make_entries(8, 8, seed=2, covers=2)
    (tmp_path / "set.bin").write_bytes(registry.encode(registry.KIND_UID, entries, 8, 8))
    a = [e for e in entries if e[3] == registry.BATCH_A]
    covers = [e[0] for e in entries if e[1] == registry.COVER]
    ids = [e[0] for e in a]
    ids[100:100] = [covers[0]]
    ids[300:300] = [covers[1], covers[0]]  # a repeated cover is the game's to report
    (tmp_path / "ids.bin").write_bytes(b"".join(ids))
    lines = run_vm(VM_SCRIPT, str(tmp_path / "set.bin"), str(tmp_path / "ids.bin")).splitlines()
    assert lines[0] == "%d %d 3" % (len(a), sum(e[1] for e in a))
    last = a[-1]
    assert lines[1] == "duplicate_card %d %s of deck %d batch A was already dealt from this shoe" % (
        last[1], cards.name(last[1]), last[2])
    assert lines[2].startswith("unknown_card -1 ID %02x" % (last[0][0] ^ 0xFF))
    assert len(lines) == 3


SHOE_VM = """
import sys
from emulator.ptyuart import PtyUART
from emulator.sim_tcs34725 import SimTCS34725
from drivers import ReaderFault
from drivers.pn532_uart import PN532_UART
from drivers.tcs34725 import TCS34725
from baccarat import game
from cardset import intake, registry

reg = registry.load(sys.argv[1])
surfaces = open(sys.argv[3]).read().split()
reader = PN532_UART(PtyUART(sys.argv[2], 115200), int(sys.argv[4]))   # a simulator's ACK wait
reader.begin()
chip = SimTCS34725()
sensor = TCS34725(chip)
g = game.Game(lambda buf, n: print(bytes(buf[:n]).decode()))
feeder = intake.Intake(reg, g)
g.new_shoe(8)
feeder.new_shoe(registry.BATCH_A)
buf = bytearray(16)
drawn = 0
empty_polls = 0
while drawn < len(surfaces) and empty_polls < 500:
    if g.phase == game.OPEN:
        g.bets()
    try:
        n = reader.poll(buf)
    except ReaderFault as exc:
        print("FAULT", exc)
        continue
    if not n:
        empty_polls += 1
        continue
    chip.show(surfaces[drawn])  # the card passes the back sensor as it leaves
    drawn += 1
    feeder.take(buf, n, sensor.classify())
"""


def test_a_shoe_dealt_through_the_simulated_pn532_and_back_sensor_in_the_vm(setup, tmp_path):
    """PN532 simulator -> firmware PN532 driver and TCS34725 driver in the VM ->
    intake -> game; the bad tags raise their irregularities and nothing else changes."""
    entries, _feeder, _game = setup
    data = registry.encode(registry.KIND_UID, entries, 8, 8)
    (tmp_path / "set.bin").write_bytes(data)
    clean, _bad, a, b = shoe_streams(entries, seed=4)
    clean = clean[:70]
    shoe = [(ident, "face" if colour == intake.FACE else "back_a") for ident, colour in clean]
    shoe.insert(12, (bytes.fromhex("04badbadbad001"), "back_a"))   # unknown tag
    shoe.insert(30, (clean[20][0], "back_a"))                      # duplicate tag
    shoe.insert(50, (b[3][0], "back_b"))                           # batch B card
    (tmp_path / "uids.txt").write_text("\n".join(i.hex() for i, _s in shoe) + "\n")
    (tmp_path / "surfaces.txt").write_text(" ".join(s for _i, s in shoe))
    sim = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "sim", "pn532",
                            "--uids", str(tmp_path / "uids.txt")],
                           cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        port = sim.stdout.readline().strip()
        frozen = compiled_firmware(tmp_path / "mpy", ["emulator/ptyuart.py", "emulator/sim_tcs34725.py",
                                                      "drivers/pn532_uart.py", "drivers/tcs34725.py",
                                                      "baccarat/game.py", "cardset/intake.py"])
        events = run_vm(SHOE_VM, str(tmp_path / "set.bin"), port, str(tmp_path / "surfaces.txt"),
                        str(EMULATED_ACK_MS), frozen=frozen).splitlines()
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    irregular = [e for e in events if '"action":"ignored; game unchanged"' in e]
    assert [json.loads(e)["rule"] for e in irregular] == ["unknown_card", "duplicate_card", "wrong_batch"]
    assert [e for e in events if e not in irregular] == deal(registry.Registry(data), clean)


LOCKED_GAME = vmcode.LOCK_HEAP + """
import sys, micropython
from baccarat import game
from cardset import registry, intake
reg = registry.load(sys.argv[1])
ids = open(sys.argv[2], "rb").read()
tally = [0, 0, 0, 0]  # events, bytes, sum of bytes, "cover card seen twice" errors


def emit(buf, n):
    tally[0] += 1
    tally[1] += n
    k = 0
    while k < n:
        tally[2] += buf[k]
        k += 1
    if buf.find(b"cover card seen twice", 0, n) >= 0:
        tally[3] += 1


g = game.Game(emit)
feeder = intake.Intake(reg, g)
g.new_shoe(8)
feeder.new_shoe(registry.BATCH_A)
buf = bytearray(7)


def deal_all(total):
    # In a function: new module globals would grow the globals dict.
    lock_heap()  # cards, covers and the game's events: no allocation
    j = 0
    while j < total:
        if g.phase == game.OPEN:
            g.bets()
        k = 0
        while k < 7:
            buf[k] = ids[j * 7 + k]
            k += 1
        feeder.take(buf, 7, registry.BATCH_A)
        j += 1
    micropython.heap_unlock()


deal_all(len(ids) // 7)
print(tally[0], tally[1], tally[2], tally[3])
"""


def test_the_real_game_takes_cards_and_both_covers_heap_locked_in_the_vm(setup, tmp_path):
    entries, _feeder, _game = setup
    data = registry.encode(registry.KIND_UID, entries, 8, 8)
    clean, _bad, _a, _b = shoe_streams(entries, seed=5)
    covers = [e[0] for e in entries if e[1] == registry.COVER]
    stream = clean[:70] + [(covers[1], registry.BATCH_A)] + clean[70:73] + [(covers[0], registry.BATCH_A)]
    stream = [(ident, registry.BATCH_A) for ident, _colour in stream + clean[73:90]]
    (tmp_path / "set.bin").write_bytes(data)
    (tmp_path / "ids.bin").write_bytes(b"".join(ident for ident, _c in stream))
    vm = run_vm(LOCKED_GAME, str(tmp_path / "set.bin"), str(tmp_path / "ids.bin")).split()
    events = [e.encode() for e in deal(registry.Registry(data), stream)]
    assert sum(b'"type":"cover"' in e for e in events) == 1
    assert [int(x) for x in vm] == [len(events), sum(len(e) for e in events),
                                    sum(sum(e) for e in events),
                                    sum(b"cover card seen twice" in e for e in events)]
    assert int(vm[3]) == 1
