"""TCS34725 back sensor against the register-level simulation, under CPython
(in the MicroPython VM: tests/e2e/test_tcs34725_vm.py).

The simulation refuses what the chip refuses (a byte without the command
bit, the wrong address) and only reports data once PON and AEN are set, so
these tests check the driver's set-up as well as its decisions.
"""

import pytest

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.emulator.sim_tcs34725 import SimTCS34725
from firmware.drivers import ReaderFault
from firmware.drivers import tcs34725


def test_set_up_writes_atime_gain_then_power_then_adc():
    chip = SimTCS34725()
    tcs34725.TCS34725(chip, {"atime": 0xF0, "gain": 2})
    # Datasheet order: timing and gain, PON alone (oscillator warm-up), then PON|AEN.
    assert chip.writes == [(0x01, 0xF0), (0x0F, 2), (0x00, 0x01), (0x00, 0x03)]


@pytest.mark.parametrize("surface, expected", [
    ("face", tcs34725.FACE), ("back_a", tcs34725.BACK_A), ("back_b", tcs34725.BACK_B)])
def test_face_and_both_back_colours_are_told_apart(surface, expected):
    chip = SimTCS34725()
    sensor = tcs34725.TCS34725(chip)
    chip.show(surface)
    assert sensor.classify() == expected


def test_the_decision_holds_when_the_light_is_dimmer():
    chip = SimTCS34725()
    sensor = tcs34725.TCS34725(chip)
    chip.show((12, 5, 4))  # back A at a third of the light
    assert sensor.classify() == tcs34725.BACK_A
    # 21 counts per cycle, 10 cycles, 4x gain
    assert sensor.clear == 21 * 10 * 4


@pytest.mark.parametrize("light, message", [
    ("none", "too dark"),
    ((900, 900, 900), "saturated"),
    ((10, 40, 10), "colour 166/666/166 per mille"),
])
def test_readings_it_cannot_decide_are_faults_with_the_reason(light, message):
    chip = SimTCS34725()
    sensor = tcs34725.TCS34725(chip)
    chip.show(light)
    with pytest.raises(ReaderFault, match=message):
        sensor.classify()


def test_wrong_chip_and_dead_bus_are_named():
    with pytest.raises(ReaderFault, match="ID register reads 0x12 at 0x29"):
        tcs34725.TCS34725(SimTCS34725(chip_id=0x12))
    chip = SimTCS34725()
    sensor = tcs34725.TCS34725(chip)
    chip.fail = True
    with pytest.raises(ReaderFault, match="no reply at 0x29"):
        sensor.classify()


def test_the_simulation_refuses_a_byte_without_the_command_bit():
    chip = SimTCS34725()
    with pytest.raises(OSError):
        chip.readfrom_mem(0x29, 0x12, 1)
    assert chip.readfrom_mem(0x29, 0x92, 1) == b"\x44"


def test_no_data_before_the_adc_is_enabled():
    chip = SimTCS34725()
    sensor = tcs34725.TCS34725(chip)
    chip.regs[0x00] = 0x01  # someone turned AEN off
    chip.show("face")
    with pytest.raises(ReaderFault, match="AVALID clear"):
        sensor.classify()
