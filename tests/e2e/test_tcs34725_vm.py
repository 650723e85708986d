"""The TCS34725 back-sensor driver against the register-level simulation in
the MicroPython VM (the same checks under CPython: tests/unit/test_tcs34725.py)."""

from host_tools.sim import vmcode
import host_tools  # noqa: F401  (makes the firmware package importable)
from support.vmrun import run_vm


VM_SCRIPT = vmcode.LOCK_HEAP + """
import micropython
from emulator.sim_tcs34725 import SimTCS34725
from drivers import tcs34725, ReaderFault
chip = SimTCS34725()
sensor = tcs34725.TCS34725(chip, {"atime": 0xF6, "gain": 1})
for surface in ("face", "back_a", "back_b"):
    chip.show(surface)
    print(surface, sensor.classify(), sensor.clear)
results = bytearray(3)


def locked():
    # The driver's per-card path (status read, 8-byte burst read, shares,
    # nearest reference) and the simulated chip under it must not allocate.
    lock_heap()
    i = 0
    while i < 3:
        results[i] = sensor.classify()
        i += 1
    micropython.heap_unlock()


chip.show("back_b")
locked()
print("locked", results[0], results[1], results[2])
chip.show("none")
try:
    sensor.classify()
except ReaderFault as exc:
    print("fault", exc)
"""


def test_driver_runs_in_the_micropython_vm():
    lines = run_vm(VM_SCRIPT).splitlines()
    assert lines == ["face 0 4680", "back_a 1 2560", "back_b 2 2040", "locked 2 2 2",
                     "fault tcs34725: too dark (clear 0 < 200): no card at the window"]
