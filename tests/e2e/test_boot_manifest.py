"""Only deployed code runs: the boot check against the manifest, as an
attacker with the shoe's flash tries it, in the MicroPython VM (the emulated
shoe's flash is a staged `shoe deploy` image).

Each attack must end in a tilt whose reason the hello carries, with nothing
else sent and nothing recorded: no event frame, no journal written, and the
added code never run (it would have copied the shoe's key)."""

import hashlib
import json
import shutil

import pytest

from support.emuhost import Host
from host_tools.sim.emulate import Emulator


# What the attacker added: imported in place of the deployed .mpy,
# it copies the key and then behaves like the real module would.
STEAL = ("import os\n"
         "open('stolen.bin', 'wb').write(open('shoe_key.bin', 'rb').read())\n"
         "raise ImportError('stand-in')\n")


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "EMU1", key=bytes(range(32))).close()
    return base


def _boot(staged, tmp_path, change=None, **options):
    """Power on a copy of the staged flash after ``change(flash)``; the
    change comes after the emulator writes this run's board_config (and its
    hash into the manifest), as an attacker's would, just before power-on."""
    flash = tmp_path / "flash"
    if not flash.exists():
        shutil.copytree(staged, flash)
    emu = Emulator(str(flash), "EMU1", **options)
    if change:
        change(flash)
    host = Host(emu)
    emu.start()
    emu.wait_booted()
    host.connect()
    host.pump(1.5)   # long enough for a halted shoe's second hello
    return emu, host


def _tilted_silently(emu, host, flash):
    kinds = {k for k, _, _ in host.frames}
    hello = host.hellos()[-1]
    emu.close()
    host.close()
    assert kinds == {"H"}, "a tilted shoe sent %r" % kinds
    assert not (flash / "journal.bin").exists(), "a tilted shoe recorded events"
    assert not (flash / "stolen.bin").exists(), "code that was not deployed ran"
    return hello


def test_a_clean_image_boots_and_its_hello_names_the_manifest(staged, tmp_path):
    emu, host = _boot(staged, tmp_path)
    host.wait_event(type="boot")
    hello = host.hellos()[-1]
    flash = tmp_path / "flash"
    digest = hashlib.sha256((flash / "manifest.json").read_bytes()).hexdigest()
    emu.close()
    host.close()
    assert hello["tilt"] is None
    assert hello["manifest"] == digest
    assert hello["service"] is False


def test_service_mode_is_announced(staged, tmp_path):
    emu, host = _boot(staged, tmp_path, service=True)
    hello = host.hellos()[-1]
    emu.close()
    host.close()
    assert hello["service"] is True


def test_service_mode_is_refused_while_a_shoe_is_in_play(staged, tmp_path):
    """NEW SHOE held at power-on while the journal shows a shoe in play: no
    service mode (the watchdog would be off and the REPL open mid-shoe);
    the hello says so and the record says why."""
    emu, host = _boot(staged, tmp_path)
    for line in ("shoe decks=8", "2C", "4S", "5S", "bets", "9H"):
        emu.deal(line)
    host.wait(lambda: host.find(type="card", card="9H"), what="the last card")
    emu.close()
    host.close()
    emu, host = _boot(staged, tmp_path, service=True)
    try:
        seq, event = host.wait_event(type="service_refused")
        hello = host.hellos()[-1]
    finally:
        emu.close()
        host.close()
    assert hello["service"] is False
    assert event["source"] == "link" and "a shoe is in play" in event["reason"]
    from firmware.link import events_schema
    assert events_schema.check_event(event) is None


def test_a_py_shadowing_the_deployed_mpy_tilts_and_never_runs(staged, tmp_path):
    flash = tmp_path / "flash"
    emu, host = _boot(staged, tmp_path, lambda f: (f / "link" / "reports.py").write_text(STEAL))
    hello = _tilted_silently(emu, host, flash)
    assert hello["tilt"].startswith("self-test: link/reports.py would be imported in place of the "
                                     "deployed link/reports.mpy")
    assert (flash / "quarantine" / "link" / "reports.py").read_text() == STEAL
    # The tilt outlives a power cycle: quarantine/ is itself not deployed.
    emu, host = _boot(staged, tmp_path)
    hello = _tilted_silently(emu, host, flash)
    assert "quarantine/link/reports.py is not in the manifest" in hello["tilt"]


def test_a_py_shadowing_the_manifest_module_itself(staged, tmp_path):
    flash = tmp_path / "flash"
    emu, host = _boot(staged, tmp_path, lambda f: (f / "manifest.py").write_text(STEAL))
    hello = _tilted_silently(emu, host, flash)
    assert hello["tilt"].startswith("self-test: manifest.py would be imported in place of the deployed manifest.mpy")


def test_an_added_file_tilts(staged, tmp_path):
    flash = tmp_path / "flash"
    emu, host = _boot(staged, tmp_path, lambda f: (f / "notes.txt").write_text("hello"))
    hello = _tilted_silently(emu, host, flash)
    assert hello["tilt"].startswith("self-test: notes.txt is not in the manifest")


# A missing or damaged manifest halts the shoe before any import: tests/e2e/test_boot_order.py.


def test_the_bridge_keeps_the_hellos_manifest_and_service_mode(staged, tmp_path):
    import time

    from host_tools.sim.rigs.bridge import ThreadedBridge
    from host_tools.store import db
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    emu = Emulator(str(flash), "EMU1", service=True)
    emu.start()
    bridge = ThreadedBridge(str(tmp_path / "s.db"), emu.host_path, emu.key)
    try:
        end = time.monotonic() + 20
        seen = None
        while time.monotonic() < end and seen is None:
            time.sleep(0.2)
            with db.Store(tmp_path / "s.db") as store:
                row = store.db.execute("SELECT settings FROM shoes WHERE shoe_id = 'EMU1'").fetchone()
                seen = json.loads(row[0]) if row and row[0] else None
    finally:
        bridge.close()
        emu.close()
    assert seen is not None, "the bridge never accepted the hello"
    assert seen["service"] is True
    assert seen["manifest"] == hashlib.sha256((flash / "manifest.json").read_bytes()).hexdigest()


def test_shoe_emulate_service_and_secure_element_options(tmp_path):
    from support.emuhost import emulate_cli
    with emulate_cli(tmp_path / "flash", "--no-dealer", "--service", "--secure-element") as host:
        host.wait(lambda: not host.pending, what="the hello")
        hello = host.hellos()[-1]
    assert hello["service"] is True and hello["tilt"] is None
