"""`shoe acceptance` against the emulated shoe and shuffler, through the
real Bridge into a real SQLite store, with a bench technician who acts on
the emulator (presents the test card to the PN532 simulator, presses the
dealer's buttons on the dealer channel, opens the shuffler's door on the
model) and the broken parts the issue names: the reader unplugged, a stuck
button, an elevator stepper that never reaches home.

The technician's answers about the lights and the gate come from the
emulated board's own state (the `gpio` line of its dealer channel,
firmware/boards/emulator.py): what main.py last drove, as a technician
would see it.
"""

import argparse
import json
import os
import select
import shutil
import threading
import time

import pytest

from host_tools import acceptance, cli, vm
from host_tools.boards import config
from host_tools.sim.emulate import Emulator
from host_tools.sim.shuffler_emulate import ShufflerEmulator


from cardset import registry  # noqa: E402

TEST_CARD = bytes([4, 0x7E, 0x57, 0xCA, 0x4D, 0x00, 0x01])   # a tag in no card set
STOP_ONLY = 4  # firmware/main.py LIGHT_STOP: no card due on a board with no shoe


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    entries = [(bytes([4, registry.BATCH_A, 1, c, 0x5A, 0xC3, 0x11]), c, 1, registry.BATCH_A) for c in range(52)]
    entries.append((bytes([4, 0xC0, 0xFE, 1, 2, 3, 4]), registry.COVER, 0, 0))
    cardset = tmp_path_factory.mktemp("set") / "cardset.bin"
    cardset.write_bytes(registry.encode(registry.KIND_UID, entries, 1, 0))
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "ACC1", reader="pn532", cardset=cardset).close()
    return base, cardset


class Bench(acceptance.Technician):
    """The technician, acting on the emulator."""

    def __init__(self, emu):
        self.emu = emu
        self.lock = threading.Lock()
        self.asked = []
        self.done = []

    def act(self, what, text):
        self.done.append(what)
        with self.lock:
            if what == "test_card":
                self.emu.present(TEST_CARD)
            elif what == "button:no_more_bets":
                self.emu.deal("bets")
            elif what == "button:exposed":
                self.emu.deal("exposed")
            elif what == "door:open":
                self.emu.op("door open")
            elif what == "door:shut":
                self.emu.op("door close")

    def gpio(self):
        """(light mask, gate open) as the emulated board drives them."""
        fd = self.emu._deal_m
        with self.lock:
            while select.select([fd], [], [], 0)[0]:
                os.read(fd, 64)
            os.write(fd, b"gpio\n")
            buf, end = b"", time.monotonic() + 5
            while b"\n" not in buf and time.monotonic() < end:
                if select.select([fd], [], [], 0.1)[0]:
                    buf += os.read(fd, 64)
        words = buf.replace(b"\x06", b"").split(b"\n")[0].split()
        assert words[:1] == [b"gpio"], buf
        return int(words[1]), int(words[2]) == 1

    def confirm(self, what, question):
        self.asked.append(what)
        if what == "lights":
            return self.gpio()[0] == STOP_ONLY
        if what == "gate":
            return not self.gpio()[1]
        return False


def _args(tmp_path, port, key_file, manifest, device="shoe"):
    parser = argparse.ArgumentParser()
    acceptance.add_arguments(parser)
    return parser.parse_args(["--port", port, "--key-file", str(key_file), "--db", str(tmp_path / "table.db"),
                              "--device", device, "--manifest", str(manifest), "--test-card", TEST_CARD.hex(),
                              "--report", str(tmp_path / "report.md")])


def _lines(out):
    return {line.split()[1] + ("" if line.split()[1] not in ("button", "door", "round", "secure", "back") else
                               " " + line.split()[2]): line
            for line in out.splitlines() if line.startswith(("PASS", "FAIL"))}


@pytest.fixture
def shoe(staged, tmp_path):
    base, cardset = staged
    flash = tmp_path / "flash"
    shutil.copytree(base, flash)
    emu = Emulator(str(flash), "ACC1", reader="pn532", cardset=cardset)
    emu.start()
    emu.wait_booted()
    try:
        yield emu, _args(tmp_path, emu.host_path, emu.key_path, flash / "manifest.json")
    finally:
        emu.close()


def test_a_good_shoe_passes_every_step_that_exists_and_names_the_ones_that_do_not(shoe, tmp_path, capsys):
    emu, args = shoe
    bench = Bench(emu)
    assert acceptance.run(args, bench) == cli.EXIT_FOUND   # the secure element cannot pass yet
    out = capsys.readouterr().out
    lines = _lines(out)
    for step in ("link", "firmware", "round trip", "reader", "button no_more_bets", "button exposed",
                 "lights", "gate"):
        assert lines[step].startswith("PASS"), lines[step]
    assert TEST_CARD.hex() in lines["reader"]
    for step in ("secure element", "back sensor", "heap"):
        assert lines[step].startswith("FAIL") and "not available" in lines[step], lines[step]
    assert bench.done == ["test_card", "button:no_more_bets", "button:exposed"]
    report = (tmp_path / "report.md").read_text()
    assert "| reader | PASS |" in report and "| secure element | FAIL |" in report and "ACC1" in report
    # The acceptance's events are in the table's store, verified and in order.
    from host_tools.store import db
    with db.Store(str(tmp_path / "table.db"), readonly=True) as store:
        kinds = [row["type"] for row in store.rows("ACC1")]
    assert "irregularity" in kinds and "status" in kinds


def test_the_technician_reads_the_lights_and_gate_from_the_board(shoe):
    emu, _args_ = shoe
    bench = Bench(emu)
    bench.gpio()   # answered in the main loop's first pass, before it first drives the lights
    assert bench.gpio() == (STOP_ONLY, False)     # no shoe: STOP lit, the gate closed
    assert bench.confirm("lights", "?") and bench.confirm("gate", "?")


def test_an_unplugged_reader_is_a_clear_fail_line(shoe, capsys):
    emu, args = shoe
    emu.chip.receive = lambda data: None      # the PN532 no longer answers: its cable is out
    assert acceptance.run(args, Bench(emu)) == cli.EXIT_FOUND
    line = _lines(capsys.readouterr().out)["reader"]
    assert line.startswith("FAIL") and "check the PN532" in line and "readers.pn532" in line


def test_a_stuck_button_is_a_clear_fail_line(shoe, capsys):
    emu, args = shoe
    bench = Bench(emu)
    stop = threading.Event()

    def stuck():
        while not stop.wait(0.3):
            with bench.lock:
                emu.deal("bets")
    t = threading.Thread(target=stuck, daemon=True)
    t.start()
    try:
        assert acceptance.run(args, bench) == cli.EXIT_FOUND
    finally:
        stop.set()
        t.join(5)
    line = _lines(capsys.readouterr().out)["button no_more_bets"]
    assert line.startswith("FAIL") and "reads pressed while nobody touches it" in line
    assert "button:no_more_bets" not in bench.done


@pytest.fixture
def shuffler_factory(tmp_path):
    made = []

    def make(stall=False):
        emu = ShufflerEmulator(str(tmp_path / "shuf"), "SHUF7", decks=1)
        if stall:
            with open(tmp_path / "shuf" / "board_config.py", "a") as f:
                f.write("STALL = True\n")
        manifest = tmp_path / "SHUF7.manifest.json"
        manifest.write_text(json.dumps({"firmware_version": config.firmware_version(), "files": {}}))
        emu.start()
        emu.wait_booted()
        made.append(emu)
        return emu, _args(tmp_path, emu.host_path, emu.key_path, manifest, "shuffler")
    yield make
    for emu in made:
        emu.close()


def test_a_good_shuffler_homes_and_its_door_switch_works(shuffler_factory, capsys):
    emu, args = shuffler_factory()
    bench = Bench(emu)
    assert acceptance.run(args, bench) == cli.EXIT_FOUND
    lines = _lines(capsys.readouterr().out)
    for step in ("link", "firmware", "round trip", "steppers", "door open", "door shut"):
        assert lines[step].startswith("PASS"), lines[step]
    assert lines["secure element"].startswith("FAIL") and "not available" in lines["secure element"]
    assert bench.done == ["door:open", "door:shut"]


def test_a_stepper_that_never_reaches_home_is_a_clear_fail_line(shuffler_factory, capsys):
    emu, args = shuffler_factory(stall=True)
    assert acceptance.run(args, Bench(emu)) == cli.EXIT_FOUND
    line = _lines(capsys.readouterr().out)["steppers"]
    assert line.startswith("FAIL") and "never reached home" in line and "inputs.home" in line


def test_no_device_on_the_port_is_one_fail_line(tmp_path, capsys):
    from host_tools.protocol import keys
    from host_tools.sim import ptys
    master, slave, path = ptys.open_raw(nonblocking=True)
    keys.write_key(str(tmp_path / "k.key"), b"k" * keys.KEY_BYTES)
    (tmp_path / "m.json").write_text("{}")
    args = _args(tmp_path, path, tmp_path / "k.key", tmp_path / "m.json")
    acceptance.HELLO_S, saved = 2.0, acceptance.HELLO_S
    try:
        assert acceptance.run(args, acceptance.Technician(yes=True)) == cli.EXIT_FOUND
    finally:
        acceptance.HELLO_S = saved
        ptys.close(master, slave)
    out = capsys.readouterr().out
    fails = [line for line in out.splitlines() if line.startswith("FAIL  ")]
    assert len(fails) == 1 and "no verified hello" in fails[0] and "Traceback" not in out
