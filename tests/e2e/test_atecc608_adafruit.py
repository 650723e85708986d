"""The independent judge of the secure-element simulator: the unmodified
adafruit_atecc driver, on a busio.I2C-shaped bus whose transactions cross a
real pty to `shoe sim atecc608` running as its own process (as
test_pn532_adafruit.py gives adafruit_pn532 a real pty to `shoe sim pn532`).

adafruit_atecc waits the ATECC508A's execution times (Sign 70 ms), shorter
than the ATECC608's maxima (Sign 115 ms), and polls only 20 times without
pausing; the simulator therefore runs at 0.4 of the maxima here, as a part
faster than the worst case does (the firmware driver's tests run it at 1.0)."""

import pytest
from adafruit_atecc.adafruit_atecc import ATECC
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature

from firmware.drivers.atecc608_setup import shoe_config
from host_tools.sim.atecc608 import start_sim
from host_tools.sim.chipwait import EMULATED_WATCHDOG_S
from host_tools.sim.i2cbus import BusioI2C


@pytest.fixture
def chip(tmp_path):
    # adafruit_atecc wakes the chip per command and idles it after; a
    # pytest worker descheduled past tWATCHDOG (1.3 s) in between would find
    # it asleep, so the chip here keeps the emulated devices' watchdog.
    proc, pty = start_sim(state=tmp_path / "chip.json", timing=0.4, watchdog=EMULATED_WATCHDOG_S)
    bus = BusioI2C(pty)
    yield ATECC(bus), tmp_path / "chip.json"
    bus.deinit()
    proc.terminate()
    proc.wait(5)


def _public(raw):
    return ec.EllipticCurvePublicNumbers(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"),
                                         ec.SECP256R1()).public_key()


def test_serial_number_and_revision(chip):
    atecc, _ = chip
    serial = atecc.serial_number
    assert len(serial) == 18 and serial.startswith("0123") and serial.endswith("EE")
    assert atecc.version() >> 8 == 0x60   # the constructor already refused anything else
    assert not atecc.locked


def test_provision_random_keygen_sign_counter(chip):
    atecc, _ = chip
    # Unlocked, the RNG gives the chip's fixed test pattern, never randomness.
    assert bytes(atecc._random(bytearray(16))) == b"\xff\xff\x00\x00" * 4
    # The shoe's slot layout, written and locked by adafruit_atecc itself
    # (its own CFG_TLS is not a 128-byte zone: it is 219 bytes in 1.3.2).
    config = bytearray()
    for block in range(4):
        part = bytearray(32)
        atecc._read(0, block << 3, part)
        config += part
    atecc.write_config(shoe_config(config))
    atecc.lock_all_zones()
    assert atecc.locked
    a, b = bytes(atecc._random(bytearray(16))), bytes(atecc._random(bytearray(16)))
    assert a != b and a != b"\xff\xff\x00\x00" * 4
    public = bytes(atecc.gen_key(bytearray(64), 0, True))
    key = _public(public)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(b"shoe SHOE-1A2B3C seq 41")
    message = digest.finalize()
    signature = bytes(atecc.ecdsa_sign(0, message))
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    key.verify(der, message, ec.ECDSA(Prehashed(hashes.SHA256())))
    with pytest.raises(InvalidSignature):
        key.verify(der, bytes(32), ec.ECDSA(Prehashed(hashes.SHA256())))
    counts = [int.from_bytes(atecc.counter(0), "little") for _ in range(3)]
    assert counts[1] == counts[0] + 1 and counts[2] == counts[0] + 2
    assert int.from_bytes(atecc.counter(0, increment_counter=False), "little") == counts[2]
    # The private key never comes out: the chip answers a read of its slot
    # with a 4-byte status group, which adafruit_atecc (expecting 35 bytes)
    # reports as a CRC mismatch.
    with pytest.raises(RuntimeError, match="CRC Mismatch"):
        atecc._read(2, 0, bytearray(32))
