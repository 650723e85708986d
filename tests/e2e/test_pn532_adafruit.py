"""The independent judge of the simulator: the unmodified adafruit_pn532
driver (PN532_UART over pyserial) reads the firmware version and every UID
from `shoe sim pn532`, running as its own process on a real pty."""

import pytest
import serial
from adafruit_pn532.uart import PN532_UART

from host_tools.sim.pn532_vm import start_sim

UIDS = [
    "04A1B2C3D4E5F6", "8A7B6C5D", "04:10:20:30:40:50:60", "04 FF 00 FF 00 FF 00",
    "00000000", "0401020304050F", "DEADBEEF", "04E2F3A4B5C6D7",
]


@pytest.fixture
def sim(tmp_path):
    path = tmp_path / "uids.txt"
    path.write_text("# a mixed set: NTAG21x (7 bytes) and MIFARE Classic (4 bytes)\n"
                    + "\n".join(UIDS) + "\n\n")
    proc, pty = start_sim(path)
    yield pty
    proc.terminate()
    proc.wait(5)


GET_FIRMWARE_VERSION = 0x02
WAIT_S = 10   # an answer's bound; the chip answers at once


def _hex(text):
    return bytes.fromhex(text.replace(":", "").replace(" ", ""))


def test_adafruit_reads_version_and_every_uid_then_no_card(sim):
    port = serial.Serial(sim, 115200, timeout=0.05)
    try:
        # The constructor sends Adafruit's HSU wake-up (55 55 00...) and
        # SAMConfiguration, then GetFirmwareVersion: a sleeping chip that
        # ignored them would make it raise here.
        pn532 = PN532_UART(port)
        # The driver's own calls, with a bound a loaded machine can meet (its
        # `firmware_version` property gives a simulator process 0.5 s).
        assert tuple(pn532.call_function(GET_FIRMWARE_VERSION, 4, timeout=WAIT_S)) == (0x32, 0x01, 0x06, 0x07)
        read = [pn532.read_passive_target(timeout=WAIT_S) for _ in UIDS]
        assert [bytes(u) for u in read] == [_hex(u) for u in UIDS]
        # With the retries at their power-on "for ever", the chip keeps
        # looking and stays silent, which Adafruit reports as no card.
        assert pn532.read_passive_target(timeout=0.2) is None
    finally:
        port.close()


def test_adafruit_reads_the_uid_pages_of_the_selected_ntag(sim):
    port = serial.Serial(sim, 115200, timeout=0.05)
    try:
        pn532 = PN532_UART(port)
        uid = bytes(pn532.read_passive_target(timeout=WAIT_S))
        page0 = bytes(pn532.ntag2xx_read_block(0))
        page1 = bytes(pn532.ntag2xx_read_block(1))
        # NTAG21x: page 0 = UID0..2 and BCC0 = 0x88^UID0^UID1^UID2, page 1 = UID3..6.
        assert page0 == uid[:3] + bytes([0x88 ^ uid[0] ^ uid[1] ^ uid[2]])
        assert page1 == uid[3:7]
    finally:
        port.close()
