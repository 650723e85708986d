"""The board bring-up modules type-check against each port's published
MicroPython stubs, and the check is sharp enough to catch a misuse."""

import pytest

from host_tools.boards import typecheck


@pytest.mark.parametrize("port", sorted(typecheck.TARGETS))
def test_bring_up_passes_mypy_against_the_port_stubs(port):
    status, report = typecheck.check(port)
    assert status == 0, report


@pytest.mark.parametrize("port", sorted(typecheck.TARGETS))
def test_stub_check_catches_a_misused_machine_api(port, tmp_path):
    bad = tmp_path / "bad_board.py"
    bad.write_text(
        "from machine import I2C, UART, WDT, Pin\n"
        "def bring_up():\n"
        "    uart = UART(0, 115200, tx=Pin(0), rx=Pin(1), timeout='fast')\n"
        "    i2c = I2C(0, scl=Pin(5), sda=Pin(4), frequency=400000)\n"
        "    WDT(timeout=5000).kick()\n"
        "    return uart, i2c\n")
    status, report = typecheck.check(port, [str(bad)])
    assert status == 1
    lines = [line for line in report.splitlines() if ": error:" in line]
    assert sorted({line.split(":")[1] for line in lines}) == ["3", "4", "5"], report
    assert '"WDT" has no attribute "kick"' in report


def test_stub_check_sees_port_differences(tmp_path):
    # rp2.PIO exists only in the rp2 stubs; esp32.RMT only in the ESP32 ones.
    probe = tmp_path / "probe.py"
    probe.write_text("import rp2\n"
                     "def f():\n"
                     "    return rp2.PIO(0)\n")
    assert typecheck.check("rp2", [str(probe)])[0] == 0
    status, report = typecheck.check("esp32s3", [str(probe)])
    assert status == 1 and "rp2" in report
