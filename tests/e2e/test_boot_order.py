"""Nothing runs before the boot check has passed (docs/security.md, "The
code"), tried as someone with the flash tries it, in the MicroPython VM: the
manifest deleted (or damaged) and a trojan module added where MicroPython
imports it in place of the deployed .mpy. The shoe halts before importing
anything the check did not verify (the shuffler's image likewise:
tests/e2e/test_shuffler_deploy.py): the trojan never runs,
nothing is sent, and the shoe's secure element is never asked for anything
(no key derived, none read)."""

import shutil
import time

import pytest

from host_tools.sim.emulate import Emulator

# The trojan: imported in place of the deployed link/reports.mpy, it
# would copy the link key (here: it leaves a mark on the flash that it ran).
TROJAN = ("open('ran.txt', 'w').write('trojan ran')\n"
          "raise ImportError('stand-in')\n")


def _halted(emu, flash, stderr_path, wait=6.0):
    """Power on, give it ``wait`` seconds (a booting shoe says hello within
    about one), and read what came out: (frames sent, VM console)."""
    emu.start()
    end = time.monotonic() + wait
    while time.monotonic() < end and not emu.booted.is_set() and emu.proc.poll() is None:
        time.sleep(0.05)
    console = ""
    end = time.monotonic() + 10
    while time.monotonic() < end and "halted" not in console:
        with open(stderr_path) as f:
            console = f.read()
        time.sleep(0.05)
    return emu.booted.is_set(), console


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    base = tmp_path_factory.mktemp("staged") / "flash"
    Emulator(str(base), "EMU1", key=bytes(range(32))).close()
    return base


@pytest.mark.parametrize("damage", ["deleted", pytest.param('{"files": ', marks=pytest.mark.slow),
                                    pytest.param('{"data": []}', marks=pytest.mark.slow)])
def test_without_a_manifest_the_shoe_halts_before_any_unverified_import(staged, tmp_path, damage):
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    emu = Emulator(str(flash), "EMU1", secure=True)
    try:
        if damage == "deleted":
            (flash / "manifest.json").unlink()
        else:
            (flash / "manifest.json").write_text(damage)
        (flash / "link" / "reports.py").write_text(TROJAN)
        emu.secure.executions.clear()   # what provisioning asked; from here on only the shoe
        sent, console = _halted(emu, flash, emu.stderr_path)
        ops = [op for op, _s in emu.secure.executions]
    finally:
        emu.close()
    assert not (flash / "ran.txt").exists(), "the trojan ran"
    assert not sent, "a shoe whose boot check failed sent a frame"
    assert ops == [], "a shoe whose boot check failed used its secure element: %r" % ops
    assert "manifest.json" in console and "halted" in console, console
    assert not (flash / "journal.bin").exists()


def _bridge_line(flash, tmp_path, change=None, deployed=None, wait=20.0):
    """The bridge's one line for an emulated shoe (its own flash, after
    ``change``), once its hello is in: what the console and the page show."""
    from host_tools.sim.rigs.bridge import ThreadedBridge
    emu = Emulator(str(flash), "EMU1")
    if change:
        change(flash)
    if callable(deployed):
        deployed = deployed(flash)   # the deploy record of this power-on's image
    emu.start()
    tb = ThreadedBridge(str(tmp_path / "pit.db"), emu.host_path, emu.key, deployed=deployed)
    try:
        end = time.monotonic() + wait
        lines = []
        while time.monotonic() < end:
            b = tb.bridge
            if b is not None and b.hello is not None and b.state == "up":
                lines.append(b.recording_line())
                if len(lines) >= 5:
                    break
            time.sleep(0.1)
        return tb.bridge.hello, lines
    finally:
        tb.close()
        emu.close()


def test_a_tilted_shoe_is_never_recording(staged, tmp_path):
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    hello, lines = _bridge_line(flash, tmp_path, lambda f: (f / "notes.txt").write_text("not deployed"))
    assert hello["tilt"] and "notes.txt" in hello["tilt"], hello
    assert lines and not any(line.startswith("RECORDING") for line in lines), lines
    assert "tilted" in lines[-1] and "notes.txt" in lines[-1], lines


def test_a_shoe_under_firmware_mismatch_is_never_recording(staged, tmp_path):
    flash = tmp_path / "flash"
    shutil.copytree(staged, flash)
    hello, lines = _bridge_line(flash, tmp_path, deployed="00" * 32)
    assert hello["tilt"] is None
    assert lines and not any(line.startswith("RECORDING") for line in lines), lines
    assert "firmware_mismatch" in lines[-1], lines
    # The same shoe, the deploy record matching: recording.
    import hashlib
    (tmp_path / "again").mkdir()
    hello, lines = _bridge_line(flash, tmp_path / "again",
                                deployed=lambda f: hashlib.sha256((f / "manifest.json").read_bytes()).hexdigest())
    assert lines and lines[-1].startswith("RECORDING"), lines
