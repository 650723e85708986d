"""A part of the shuffler absent or faulty at boot is a halt or a degraded
shuffler, never a crash, as for the shoe (firmware/boards/parts.py): the
emulated shuffler takes each part away as a board would see it (`shoe
shuffler emulate --without PART`), and the shuffler in the MicroPython VM
must still boot, say in its hello which part and what its bus answered, and
refuse to shuffle only without the intake reader or the secure element.

Before, the board's constructor raised out of boot (a chip that does not
acknowledge its address, a sensor with no reply), the VM exited, and a real
board would have rebooted in a loop on its watchdog.

Each case boots a shuffler VM (tens of seconds on a loaded machine), so they
run in `pytest -m slow`, not the default suite."""

import pytest

from support.emuhost import Host
from host_tools.sim.shuffler_emulate import ShufflerEmulator

NO_KEY = bytes(32)   # a device with no link key signs its hellos with zeros


def _boot(tmp_path, part):
    emu = ShufflerEmulator(str(tmp_path / "flash"), decks=1, seed=3, without=(part,))
    emu.shoe_id = emu.device_id   # the id Host checks the hello's tag under
    host = Host(emu, NO_KEY if part == "secure_element" else None)
    emu.start()
    emu.wait_booted()
    return emu, host


@pytest.mark.slow
@pytest.mark.parametrize("part,says", [
    ("reader", "reader: no answer from the intake reader"),
    ("secure_element", "secure element: ATECC608 did not acknowledge"),
])
def test_a_missing_part_shuffling_needs_halts_and_the_hello_says_why(tmp_path, part, says):
    emu, host = _boot(tmp_path, part)
    try:
        host.connect()
        hello = host.hellos()[-1]
        assert emu.proc.poll() is None, open(emu.stderr_path).read()[-2000:]
        assert hello["tilt"].startswith("part missing or faulty, shuffling refused: " + says), hello
        assert "__init__" not in hello["tilt"]
        host.pump(1.0)
        assert not host.events, "a halted shuffler sends nothing but hellos: %r" % host.events
        assert emu.proc.poll() is None
    finally:
        host.close()
        emu.close()


@pytest.mark.slow
def test_a_missing_back_sensor_degrades_and_the_shuffler_shuffles_on(tmp_path):
    emu, host = _boot(tmp_path, "sensor")
    try:
        host.connect()
        assert host.hellos()[-1]["tilt"] is None
        _, error = host.wait_event(type="error")
        assert error["message"].startswith("back sensor: tcs34725: no reply at 0x29"), error
        emu.feed(emu.cards.new_deck_order(1))
        emu.press("load A")
        host.wait_event(type="custody", to="checked", timeout=240)   # the batch judged by its tags alone
    finally:
        host.close()
        emu.close()
