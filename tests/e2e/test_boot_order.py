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


@pytest.mark.parametrize("damage", ["deleted", '{"files": ', '{"data": []}'])
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
