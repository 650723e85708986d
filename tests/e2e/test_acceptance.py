"""`shoe acceptance` against the emulated shoe and shuffler, through the
real Bridge into a real SQLite store, with a bench technician who acts on
the emulator (presents the test card to the PN532 simulator, holds card
backs and a face under the simulated TCS34725, presses the dealer's buttons
on the dealer channel, opens the shuffler's door on the model) and the
broken parts the issue names: the reader unplugged, a stuck button, an
elevator stepper that never reaches home, the secure element missing or
never provisioned, a chip whose key is not the registered one, a back
sensor stuck on one colour.

The shoe's ATECC608B is the wire-level simulator on the emulated I2C bus,
provisioned by the firmware's own provisioning code (run here under
CPython on an in-process bus, as `shoe deploy` will on the board); its
public key is registered in the .pub file host_tools/protocol/pubkeys.py
defines, and the report's signature is checked with `cryptography`.

The technician's answers about the lights and the gate come from the
emulated board's own state (the `gpio` line of its dealer channel,
firmware/emulator/shoe_board.py): what main.py last drove, as a technician
would see it.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from host_tools import acceptance, cli, vm  # noqa: F401
from host_tools.boards import config
from host_tools.protocol import pubkeys
from host_tools.sim import atecc608, i2cbus
from host_tools.sim.emulate import Emulator
from host_tools.sim.shuffler_emulate import ShufflerEmulator

from firmware.cardset import registry
from firmware.drivers import atecc608_setup
from firmware.drivers.atecc608 import ATECC608

TEST_CARD = bytes([4, 0x7E, 0x57, 0xCA, 0x4D, 0x00, 0x01])   # a tag in no card set
STOP_ONLY = 4  # firmware/main.py LIGHT_STOP: no card due on a board with no shoe


def _chip_state(flash):
    return str(flash) + ".atecc608.json"   # where Emulator(secure=True) keeps the chip's EEPROM


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A flashed shoe whose chip was provisioned, and its registered public key."""
    entries = [(bytes([4, registry.BATCH_A, 1, c, 0x5A, 0xC3, 0x11]), c, 1, registry.BATCH_A) for c in range(52)]
    entries.append((bytes([4, 0xC0, 0xFE, 1, 2, 3, 4]), registry.COVER, 0, 0))
    cardset = tmp_path_factory.mktemp("set") / "cardset.bin"
    cardset.write_bytes(registry.encode(registry.KIND_UID, entries, 1, 0))
    base = tmp_path_factory.mktemp("staged") / "flash"
    emu = Emulator(str(base), "ACC1", reader="pn532", cardset=cardset, secure=True)
    try:
        public = bytearray(64)
        se = ATECC608(i2cbus.DirectI2C(i2cbus.Bus({atecc608.ADDRESS: emu.secure})))
        # The emulator provisioned its chip at power-on, as `shoe deploy` does a
        # board's; provisioning again makes nothing and hands back the key.
        assert atecc608_setup.provision(se, public) is False
        assert bytes(public) == emu.public_key
    finally:
        emu.close()
    return base, cardset, bytes(public)


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
            elif what == "button:new_shoe":
                self.emu.deal("new_shoe")
            elif what.startswith("sensor:"):
                self.emu.deal("sensor " + what.split(":")[1])
            elif what == "card:put":
                self.emu.op("card %s back_a" % TEST_CARD.hex())
            elif what == "card:take":
                self.emu.op("takeall")
            elif what == "door:open":
                self.emu.op("door open")
            elif what == "door:shut":
                self.emu.op("door close")

    def gpio(self):
        """(light mask, gate open) as the emulated board drives them."""
        with self.lock:
            return self.emu.gpio()

    def confirm(self, what, question):
        self.asked.append(what)
        if what == "lights":
            return self.gpio()[0] == STOP_ONLY
        if what == "gate shut":
            return not self.gpio()[1]
        if what == "gate open":
            return self.gpio()[1]
        return False


def _args(tmp_path, port, key_file, manifest, device="shoe", public=None):
    parser = argparse.ArgumentParser()
    acceptance.add_arguments(parser)
    argv = ["--port", port, "--key-file", str(key_file), "--db", str(tmp_path / "table.db"),
            "--device", device, "--manifest", str(manifest), "--test-card", TEST_CARD.hex(),
            "--report", str(tmp_path / "report.md")]
    if public is not None:
        argv += ["--public-key", str(public)]
    return parser.parse_args(argv)


def _verify_args(report, public):
    parser = argparse.ArgumentParser()
    acceptance.add_arguments(parser)
    return parser.parse_args(["--verify", str(report), "--public-key", str(public)])


SPLIT = ("button", "door", "round", "secure", "back", "gate", "report", "card", "intake")


def _lines(out):
    lines = {}
    for line in out.splitlines():
        if line.startswith(("PASS  ", "FAIL  ")):
            w = line.split()
            name = w[1] + " " + w[2] if w[1] in SPLIT else w[1]
            if w[1] == "back":
                name += " " + w[3]
            lines[name] = line
    return lines


SHOE_STEPS = ("link", "firmware", "round trip", "secure element", "reader", "back sensor back_a",
              "back sensor back_b", "back sensor face", "button no_more_bets", "button exposed", "lights",
              "gate shut", "button new_shoe", "gate open", "heap", "report signed")


@pytest.fixture
def shoe_factory(staged, tmp_path):
    """A powered shoe from the staged flash: with its provisioned chip, a
    blank one, or none; its registered public key in tmp_path."""
    base, cardset, public = staged
    made = []

    def make(chip="provisioned", registered=None):
        flash = tmp_path / "flash"
        if chip == "provisioned":
            shutil.copytree(base, flash)
            shutil.copyfile(_chip_state(base), _chip_state(flash))
            # the pit's copy of the link key the chip derives (none on the flash)
            shutil.copyfile(str(base) + ".key", str(flash) + ".key")
            os.chmod(str(flash) + ".key", 0o600)
        # else a freshly staged shoe: no chip, or one never provisioned, its
        # link key on its flash as before provisioning
        pub = tmp_path / "ACC1.pub"
        pubkeys.write_public(pub, registered or public)
        emu = Emulator(str(flash), "ACC1", reader="pn532", cardset=cardset, secure=chip != "none",
                       provision=False)
        made.append(emu)
        emu.start()
        emu.wait_booted()
        return emu, _args(tmp_path, emu.host_path, emu.key_path, flash / "manifest.json", public=pub)
    yield make
    for emu in made:
        emu.close()


@pytest.fixture
def shoe(shoe_factory):
    return shoe_factory()


def test_a_good_shoe_passes_every_step_and_its_report_is_signed_by_its_chip(shoe, staged, tmp_path, capsys):
    emu, args = shoe
    bench = Bench(emu)
    assert acceptance.run(args, bench) == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    assert sorted(lines) == sorted(SHOE_STEPS)
    # The console's count is the report's (the signing is said apart).
    report = (tmp_path / "report.md").read_text()
    assert "| result | PASS (%d of %d steps pass) |" % (len(SHOE_STEPS) - 1, len(SHOE_STEPS) - 1) in report
    assert out.rstrip().splitlines()[-1].startswith("PASS: %d of %d steps pass; report in " % (
        len(SHOE_STEPS) - 1, len(SHOE_STEPS) - 1))
    for step in SHOE_STEPS:
        assert lines[step].startswith("PASS"), lines[step]
    assert TEST_CARD.hex() in lines["reader"]
    assert emu.secure.serial.hex() in lines["secure element"]
    heap = int(lines["heap"].split()[2])
    assert acceptance.HEAP_FREE_MIN <= heap < emu.heap
    # The test card once, or again when a missed poll took it (acceptance.reader_step).
    assert bench.done[0] == "test_card"
    assert [w for w in bench.done if w != "test_card"] == ["sensor:back_a", "sensor:back_b", "sensor:face",
                                                           "button:no_more_bets", "button:exposed",
                                                           "button:new_shoe"]
    assert bench.asked == ["lights", "gate shut", "gate open"]
    report = (tmp_path / "report.md").read_text()
    assert "| reader | PASS |" in report and "| secure element | PASS |" in report and "ACC1" in report
    # The signature, checked here with cryptography alone: ECDSA P-256 over
    # the domain, the shoe id and the SHA-256 of the report above it.
    import hashlib
    import re
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    body = report[:report.rindex("\n## Signature\n")]
    sig = bytes.fromhex(re.search(r"signature: ([0-9a-f]{128})", report).group(1))
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + staged[2])
    message = b"baccarat shoe acceptance report v1\x00ACC1\x00" + hashlib.sha256(body.encode()).digest()
    key.verify(encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")),
               message, ec.ECDSA(hashes.SHA256()))
    # The acceptance's events are in the table's store, verified and in order.
    from host_tools.store import db
    with db.Store(str(tmp_path / "table.db"), readonly=True) as store:
        kinds = [row["type"] for row in store.rows("ACC1")]
    for kind in ("irregularity", "status", "secure", "sensor", "shoe", "signature"):
        assert kind in kinds, kind


def test_verify_passes_the_signed_report_and_fails_an_edited_one_or_another_key(shoe, tmp_path, capsys):
    emu, args = shoe
    assert acceptance.run(args, Bench(emu)) == 0
    capsys.readouterr()
    report = tmp_path / "report.md"
    assert acceptance.run(_verify_args(report, args.public_key)) == 0
    assert capsys.readouterr().out.startswith("PASS: ")
    # One step's result changed by hand after signing.
    edited = tmp_path / "edited.md"
    edited.write_text(report.read_text().replace("| lights | PASS |", "| lights | FAIL |"))
    assert acceptance.run(_verify_args(edited, args.public_key)) == cli.EXIT_FOUND
    out = capsys.readouterr().out
    assert out.startswith("FAIL: ") and "changed after it was signed" in out
    # The right report, another device's key.
    other = tmp_path / "other.pub"
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives import serialization
    xy = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)[1:]
    pubkeys.write_public(other, xy)
    assert acceptance.run(_verify_args(report, other)) == cli.EXIT_FOUND
    out = capsys.readouterr().out
    assert out.startswith("FAIL: ") and "does not verify under this public key" in out
    # Not a key file, not a report: one line each, no traceback.
    (tmp_path / "junk.pub").write_text("not a key\n")
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "acceptance", "--verify", str(report),
                        "--public-key", str(tmp_path / "junk.pub")], capture_output=True, text=True,
                       timeout=60, cwd=vm.ROOT)
    assert r.returncode == cli.EXIT_USAGE and len(r.stderr.strip().splitlines()) == 1
    assert "is not a PEM public key" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "acceptance", "--verify", str(tmp_path / "no.md"),
                        "--public-key", str(args.public_key)], capture_output=True, text=True, timeout=60,
                       cwd=vm.ROOT)
    assert r.returncode == cli.EXIT_USAGE and r.stderr.startswith("shoe acceptance: cannot read ")


def test_the_chip_signs_only_under_the_report_domain(shoe, staged):
    """The attacker holds the link key (the pit PC) and asks the shoe to sign
    a digest of its choosing, say of a statement another verifier trusts:
    what comes back must not verify over that digest, only over the report
    domain (firmware/probes.py)."""
    import hashlib
    from host_tools.store import db
    emu, args = shoe
    digest = hashlib.sha256(b"checkpoint ACC1 seq 99 head 00").digest()
    with db.Store(args.db) as store:
        link = acceptance.Link(store, emu.host_path, emu.key)
        try:
            assert link.hello() is not None
            got, reply = acceptance.ask(link, "sign digest=" + digest.hex(), "signature")
        finally:
            link.close()
    assert got is not None, reply
    sig = bytes.fromhex(got["sig"])
    public = staged[2]
    from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    from cryptography.hazmat.primitives import hashes
    from cryptography.exceptions import InvalidSignature
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + public)
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    with pytest.raises(InvalidSignature):
        key.verify(der, digest, ec.ECDSA(Prehashed(hashes.SHA256())))
    key.verify(der, b"baccarat shoe acceptance report v1\x00ACC1\x00" + digest, ec.ECDSA(hashes.SHA256()))


def test_the_first_bench_question_is_refused_while_a_shoe_is_in_play(shoe):
    """It loads firmware/probes.py, and nothing is loaded mid-shoe
    (docs/design.md): the shoe says so in a signed error, one line."""
    from host_tools.store import db
    emu, args = shoe
    with db.Store(args.db) as store:
        link = acceptance.Link(store, emu.host_path, emu.key)
        try:
            assert link.hello() is not None
            emu.deal("new_shoe")
            assert link.wait(lambda e: e.get("type") == "shoe", 10) is not None
            got, reply = acceptance.ask(link, "sensor", "sensor")
        finally:
            link.close()
    assert got is None and reply == "sensor: a bench question, taken only while no shoe is in play"


@pytest.mark.parametrize("chip,registered,words", [
    ("none", None, ("no ATECC608B answers at I2C 0x60", "secure_element in wiring.md")),
    ("blank", None, ("is present but not locked", "the configuration zone is not locked", "provision it")),
    ("provisioned", bytes(range(1, 65)), ("not the one registered at deploy", "replaced chip")),
])
def test_a_missing_unlocked_or_foreign_secure_element_is_a_clear_fail_line(shoe_factory, tmp_path, capsys, chip,
                                                                            registered, words):
    if registered is not None:   # a valid point that is not the chip's: another device's key
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives import serialization
        registered = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)[1:]
    emu, args = shoe_factory(chip, registered)
    assert acceptance.run(args, Bench(emu)) == cli.EXIT_FOUND
    lines = _lines(capsys.readouterr().out)
    line = lines["secure element"]
    assert line.startswith("FAIL"), line
    for w in words:
        assert w in line, line
    assert lines["report signed"].startswith("FAIL")
    for step in ("reader", "back sensor face", "heap"):   # the rest of the board still passes
        assert lines[step].startswith("PASS"), lines[step]
    report = (tmp_path / "report.md").read_text()
    if chip != "provisioned":
        assert "NOT SIGNED: the secure element is missing or not locked" in report


def test_a_back_sensor_stuck_on_one_colour_is_a_clear_fail_line(shoe, capsys):
    emu, args = shoe
    emu.deal("sensor back_a")
    emu.deal("sensor stuck")     # a card jammed before its window: it sees colour A whatever is shown
    assert acceptance.run(args, Bench(emu)) == cli.EXIT_FOUND
    lines = _lines(capsys.readouterr().out)
    assert lines["back sensor back_a"].startswith("PASS")
    for shown in ("back_b", "face"):
        line = lines["back sensor " + shown]
        assert line.startswith("FAIL") and "shown %s, it reads back_a" % shown in line and "stuck" in line, line
        assert "TCS34725" in line


def test_the_technician_reads_the_lights_and_gate_from_the_board(shoe):
    emu, _args_ = shoe
    bench = Bench(emu)
    bench.gpio()   # answered in the main loop's first pass, before it first drives the lights
    assert bench.gpio() == (STOP_ONLY, False)     # no shoe: STOP lit, the gate closed
    assert bench.confirm("lights", "?") and bench.confirm("gate shut", "?") and not bench.confirm("gate open", "?")
    bench.act("button:new_shoe", "")
    end = time.monotonic() + 5
    while not bench.gpio()[1] and time.monotonic() < end:
        time.sleep(0.05)
    assert bench.gpio() == (STOP_ONLY, True)      # the burn card is due: the gate opens


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
        emu = ShufflerEmulator(str(tmp_path / "shuf"), "SHUF7", decks=1, stall=stall)
        manifest = tmp_path / "SHUF7.manifest.json"
        manifest.write_text(json.dumps({"firmware_version": config.firmware_version(), "files": {}}))
        emu.start()
        emu.wait_booted()
        made.append(emu)
        return emu, _args(tmp_path, emu.host_path, emu.key_path, manifest, "shuffler", public=emu.pub_path)
    yield make
    for emu in made:
        emu.close()


SHUFFLER_STEPS = ("link", "firmware", "round trip", "secure element", "steppers", "door open", "door shut",
                  "card present", "throat", "gap", "intake reader", "heap", "report signed")


def test_a_good_shuffler_passes_every_step_and_its_report_is_signed_by_its_chip(shuffler_factory, tmp_path,
                                                                               capsys):
    emu, args = shuffler_factory()
    bench = Bench(emu)
    assert acceptance.run(args, bench) == 0
    lines = _lines(capsys.readouterr().out)
    assert sorted(lines) == sorted(SHUFFLER_STEPS)
    for step in SHUFFLER_STEPS:
        assert lines[step].startswith("PASS"), lines[step]
    # The sensors changed state as the model's card moved them.
    assert "empty tray 0, test card 1; through the cycle 101" in lines["card present"]
    assert TEST_CARD.hex() in lines["intake reader"] and "back_a" in lines["intake reader"]
    assert bench.done == ["door:open", "door:shut", "card:put", "card:take"]
    # The chip's key is the registered one; the report verifies under it, by the shoe's check.
    report = tmp_path / "report.md"
    assert report.read_text().startswith("# Acceptance: shuffler SHUF7\n")
    assert acceptance.run(_verify_args(report, args.public_key)) == 0
    assert capsys.readouterr().out.startswith("PASS: ")
    edited = tmp_path / "edited.md"
    edited.write_text(report.read_text().replace("| throat | PASS |", "| throat | FAIL |"))
    assert acceptance.run(_verify_args(edited, args.public_key)) == cli.EXIT_FOUND
    assert "changed after it was signed" in capsys.readouterr().out
    # The test card was taken out: the machine is empty again, as the
    # technician found it.
    assert emu.take(everything=True) == []


@pytest.mark.parametrize("sensor,level,step,words", [
    ("present", 1, "card present", ("reads a card with the intake tray empty", "inputs.card_present")),
    ("throat", 1, "throat", ("reads covered with nothing fed", "inputs.throat")),
    ("throat", 0, "throat", ("never saw the card pass", "missed_pick", "inputs.throat")),
    ("gap", 0, "gap", ("never saw gap 0 at the gripper slot", "gap_lost", "inputs.gap")),
])
def test_a_stuck_shuffler_sensor_is_a_clear_fail_line(shuffler_factory, capsys, sensor, level, step, words):
    emu, args = shuffler_factory()
    emu.op("stick %s %d" % (sensor, level))
    assert acceptance.run(args, Bench(emu)) == cli.EXIT_FOUND
    lines = _lines(capsys.readouterr().out)
    fails = [name for name, line in lines.items() if line.startswith("FAIL")]
    assert step in fails, lines
    for w in words:
        assert w in lines[step], lines[step]
    for other in ("link", "secure element", "steppers", "door open", "heap"):
        assert lines[other].startswith("PASS"), lines[other]


def test_a_shuffler_refuses_bench_questions_while_it_holds_a_batch(shuffler_factory):
    """A cycle would move the cards of a batch in custody (its order is the
    secret): with a batch inside, every probe is refused in one
    signed line, and the batch is untouched."""
    from host_tools.store import db
    emu, args = shuffler_factory()
    emu.feed(emu.cards.new_deck_order(1))
    emu.press("load A")
    with db.Store(args.db) as store:
        link = acceptance.Link(store, emu.host_path, emu.key)
        try:
            assert link.hello() is not None
            assert link.wait(lambda e: e.get("type") == "custody" and e.get("to") == "loading", 30) is not None
            for question, kind in (("cycle", "cycle"), ("sensor", "inputs"), ("secure", "secure")):
                got, reply = acceptance.ask(link, question, kind)
                assert got is None and reply == ("%s: a bench question, taken only while the shuffler is idle "
                                                 "and holds no batch" % question), reply
        finally:
            link.close()
    state = dict(w.split("=") for w in emu.op("state")[1].split()[1:])
    assert int(state["tray"]) + int(state["path"]) + int(state["stack"]) == 52 and state["output"] == "0", state


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
