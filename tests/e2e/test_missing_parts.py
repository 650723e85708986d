"""A part absent or faulty at boot is a halt or a degraded shoe, never a
crash: the emulated board takes each part away as a board would see it
(`shoe emulate --without PART`, firmware/boards/parts.py), and the shoe in
the MicroPython VM must still boot, feed its watchdog, say in its hello
which part and what its bus answered, and refuse to deal only where dealing
without the part is unsafe (reader, secure element, buttons).

A part's fault raised out of the board's constructor would leave main.py
(the sensor's `ReaderFault: tcs34725: no reply at 0x29`): the VM would
exit, and a real board reboot in a loop with its REPL on the pit's line."""

import contextlib
import shutil

import pytest

from host_tools import deploy
from support.emuhost import Host
from host_tools.sim.emulate import Emulator, TaggedSet

NO_KEY = bytes(32)   # firmware/main.py: a shoe with no link key signs with zeros


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    base = tmp_path_factory.mktemp("parts") / "image"
    deploy.stage("emulator", str(base), "PART1", bytes(range(32)))
    return base


def _boot(staged, tmp_path, key=None, **options):
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    if options.get("reader"):
        cardset = tmp_path / "set.bin"
        TaggedSet(1).write(str(cardset))
        options["cardset"] = str(cardset)
    emu = Emulator(str(flash), "PART1", **options)
    host = Host(emu, key)
    emu.start()
    emu.wait_booted()
    return emu, host


@contextlib.contextmanager
def booted(staged, tmp_path, key=None, **options):
    """(emulator, host, the shoe's last hello), closed afterwards."""
    emu, host = _boot(staged, tmp_path, key, **options)
    try:
        host.connect()
        hello = host.hellos()[-1]
        assert emu.proc.poll() is None, "the VM exited: %s" % open(emu.stderr_path).read()[-2000:]
        yield emu, host, hello
    finally:
        host.close()
        emu.close()


@pytest.mark.parametrize("part,options,says", [
    ("reader", {"reader": "pn532"}, "reader: no ACK from the PN532 to SAMConfiguration"),
    ("buttons", {}, "buttons: no_more_bets reads pressed at power-on"),
])
def test_a_missing_part_dealing_needs_halts_the_shoe_and_its_hello_says_why(staged, tmp_path, part,
                                                                           options, says):
    with booted(staged, tmp_path, without=(part,), **options) as (emu, host, hello):
        assert hello["tilt"].startswith("part missing or faulty, dealing refused: " + says), hello
        emu.deal("shoe decks=8")
        emu.deal("bets")
        host.pump(1.0)
        assert not host.events, "a halted shoe sends nothing but hellos: %r" % host.events
        emu.deal("gpio")
        assert emu.proc.poll() is None


def test_a_missing_back_sensor_degrades_and_the_shoe_deals_on(staged, tmp_path):
    with booted(staged, tmp_path, without=("sensor",)) as (emu, host, hello):
        assert hello["tilt"] is None
        assert hello["parts"] == "back sensor: tcs34725: no reply at 0x29 ([Errno 19] ENODEV)", hello
        _, error = host.wait_event(type="error")
        assert "dealing goes on without: back sensor: tcs34725: no reply at 0x29" in error["message"]
        for line in ["shoe decks=8", "2C", "4S", "5S", "bets", "9H"]:
            emu.deal(line)
        host.wait_event(type="card", card="9H")


def test_a_missing_gate_degrades(staged, tmp_path):
    with booted(staged, tmp_path, without=("gate",)) as (emu, host, hello):
        assert hello["tilt"] is None and hello["parts"].startswith("gate: ")


def test_a_missing_secure_element_halts_naming_the_bus_answer(staged, tmp_path):
    """The chip holds the link key, so without it the shoe has none: its
    hellos go out under the all-zero key (a wrong key is a different
    story for the pit) and name the chip's own fault, not the garbled
    `type object 'Exception' has no attribute '__init__'` of a constructor
    that calls Exception.__init__ (MicroPython has none)."""
    with booted(staged, tmp_path, key=NO_KEY, secure=True, without=("secure_element",)) as (emu, host, hello):
        assert hello["tilt"].startswith("part missing or faulty, dealing refused: secure element: "
                                        "ATECC608 did not acknowledge"), hello
        assert "at 0x60" in hello["tilt"] and "__init__" not in hello["tilt"]
