"""The PN532 frames as bytes, in the test's own process: the driver's
command frames and the simulator's replies against the user manual's, and
the simulator's fault specs (tests/e2e/test_pn532_frames.py drives the
driver on a pty)."""

from firmware.drivers.pn532 import frame
from host_tools.sim import pn532 as sim

GET_FIRMWARE_VERSION = bytes.fromhex("0000ff02fed4022a00")
FIRMWARE_REPLY = bytes.fromhex("0000ff06fad50332010607e800")
SAM_NORMAL = bytes.fromhex("0000ff05fbd4140114010200")


def test_command_frames_match_the_manual():
    assert bytes(frame(0x02)) == GET_FIRMWARE_VERSION
    assert bytes(frame(0x14, b"\x01\x14\x01")) == SAM_NORMAL
    # InListPassiveTarget, one target at 106 kbps type A: D4 4A 01 00, DCS E1.
    assert bytes(frame(0x4A, b"\x01\x00")) == bytes.fromhex("0000ff04fcd44a0100e100")


def test_simulator_replies_match_the_manual():
    assert sim.reply_frame(0x02, b"\x32\x01\x06\x07") == FIRMWARE_REPLY
    assert sim.reply_frame(0x14) == bytes.fromhex("0000ff02fed5151600")


def test_fault_spec_parses():
    assert sim.parse_faults(" 3:dcs, 7:slow ,") == {3: "dcs", 7: "slow"}
