"""The firmware's ATECC608 driver against the simulated chip on an
in-process bus: provisioning, signatures, the counter, the wire's CRC and
power states, the datasheet's timing. Every signature is checked with
`cryptography`, never with the code that made it (the same driver in the
MicroPython VM over a pty: tests/e2e/test_atecc608.py)."""

import os
import stat

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature

from firmware.drivers import atecc608_setup as setup
from firmware.drivers.atecc608 import ATECC608, COUNTER_MAX, EXEC_MS, OP_SIGN, SecureElementFault
from firmware.drivers.atecc608_setup import provision
from host_tools.sim.atecc608 import ADDRESS, Chip, crc16, group
from host_tools.sim.i2cbus import Bus, DirectI2C


def _check(public, digest, signature):
    key = ec.EllipticCurvePublicNumbers(int.from_bytes(public[:32], "big"), int.from_bytes(public[32:], "big"),
                                        ec.SECP256R1()).public_key()
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    key.verify(der, digest, ec.ECDSA(Prehashed(hashes.SHA256())))


def _driver(chip):
    return ATECC608(DirectI2C(Bus({ADDRESS: chip})))


def _digest(text):
    h = hashes.Hash(hashes.SHA256())
    h.update(text)
    return h.finalize()


def test_provision_sign_counter_and_the_key_stays_put(tmp_path):
    chip = Chip(str(tmp_path / "chip.json"), timing=0.05)
    se = _driver(chip)
    assert setup.revision(se) == 0x6003
    out = bytearray(32)
    se.random(out)
    assert bytes(out) == b"\xff\xff\x00\x00" * 8      # unlocked: the test pattern
    public = bytearray(64)
    assert provision(se, public) is True
    assert chip.config_locked and chip.data_locked
    se.random(out)
    assert bytes(out) != b"\xff\xff\x00\x00" * 8
    signature = bytearray(64)
    digest = _digest(b"checkpoint 1")
    se.sign(0, digest, signature)
    _check(public, digest, signature)
    with pytest.raises(InvalidSignature):
        _check(public, _digest(b"checkpoint 2"), signature)
    first = se.counter(0, True)
    assert se.counter(0, True) == first + 1 and se.counter(0, False) == first + 1
    # A second provisioning keeps the key: its slot is locked.
    again = bytearray(64)
    assert provision(se, again) is False and again == public
    with pytest.raises(SecureElementFault) as fault:
        setup.genkey(se, 0, bytearray(64))
    assert fault.value.status == 0x0F and "execution error" in str(fault.value)
    # The private key cannot be read, nor the configuration rewritten.
    with pytest.raises(SecureElementFault):
        setup.read(se, 2, 0, bytearray(32), 32)
    with pytest.raises(SecureElementFault):
        setup.write(se, 0, 5, b"\x00\x00\x00\x00")
    serial = bytearray(9)
    setup.serial(se, serial)
    assert serial == chip.serial and serial[:2] == b"\x01\x23" and serial[8] == 0xEE
    # The chip's state file (its EEPROM) keeps the counter and the key, 0600.
    assert stat.S_IMODE(os.stat(tmp_path / "chip.json").st_mode) == 0o600
    reborn = _driver(Chip(str(tmp_path / "chip.json"), timing=0.05))
    assert reborn.counter(0, False) == first + 1
    reborn.sign(0, digest, signature)
    _check(public, digest, signature)


def test_the_link_key_is_an_ecdh_with_a_key_that_never_leaves_the_chip(tmp_path):
    """Slot 2's key pair is made inside the chip; the firmware's link_key
    (ECDH in the chip, then SHA-256) equals what the technician's side
    computes with `cryptography` from its own half; the slot can neither
    be read nor sign, and a point off the curve is refused."""
    from cryptography.hazmat.primitives.asymmetric import ec as _ec
    from firmware.drivers.atecc608 import LINK_LABEL, LINK_SLOT
    from firmware.drivers.atecc608_link import link_key
    chip = Chip(str(tmp_path / "chip.json"), timing=0.05)
    se = _driver(chip)
    public, link = bytearray(64), bytearray(64)
    assert provision(se, public, link) is True and public != link
    host = _ec.generate_private_key(_ec.SECP256R1())
    n = host.public_key().public_numbers()
    peer = n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")
    chip_pub = _ec.EllipticCurvePublicNumbers(int.from_bytes(link[:32], "big"), int.from_bytes(link[32:], "big"),
                                              _ec.SECP256R1()).public_key()
    expected = _digest(LINK_LABEL + host.exchange(_ec.ECDH(), chip_pub))
    assert link_key(se, peer) == expected
    with pytest.raises(SecureElementFault):
        setup.read(se, 2, LINK_SLOT << 3, bytearray(32), 32)
    with pytest.raises(SecureElementFault):
        se.sign(LINK_SLOT, expected, bytearray(64))      # ECDH only: it may not sign
    with pytest.raises(SecureElementFault) as fault:
        se.ecdh(LINK_SLOT, bytes(63) + b"\x01", bytearray(32))
    assert fault.value.status == 0x05
    with pytest.raises(SecureElementFault):
        se.ecdh(0, peer, bytearray(32))                   # the signing key may not do ECDH
    # Provisioning again keeps both keys.
    again = bytearray(64)
    assert provision(se, bytearray(64), again) is False and again == link


def test_counter_stops_at_its_maximum():
    chip = Chip(timing=0.05)
    se = _driver(chip)
    provision(se, bytearray(64))
    chip.counters[1] = COUNTER_MAX - 1
    assert se.counter(1, True) == COUNTER_MAX == 2097151
    with pytest.raises(SecureElementFault) as fault:
        se.counter(1, True)
    assert fault.value.status == 0x0F
    assert se.counter(1, False) == COUNTER_MAX


def test_sign_needs_the_digest_in_tempkey_and_a_locked_chip():
    chip = Chip(timing=0.05)
    se = _driver(chip)
    with pytest.raises(SecureElementFault) as fault:
        se.sign(0, bytes(32), bytearray(64))
    assert fault.value.status == 0x0F      # nothing locked, no key
    provision(se, bytearray(64))
    se.wake()
    se._execute(0x16, 0x03, 0, bytes(32), "Nonce")   # the digest into TempKey
    se.idle()
    se.wake()                                          # idle keeps TempKey
    se._execute(0x41, 0x80, 0, None, "Sign")
    se._execute(0x16, 0x03, 0, bytes(32), "Nonce")
    se.sleep()                                         # sleep clears it
    se.wake()
    with pytest.raises(SecureElementFault) as fault:
        se._execute(0x41, 0x80, 0, None, "Sign")
    assert fault.value.status == 0x0F
    se.idle()


def test_wire_crc_wake_idle_sleep_and_watchdog():
    now = [100.0]
    chip = Chip(timing=1.0, clock=lambda: now[0])
    bus = Bus({ADDRESS: chip})
    assert bus.write(ADDRESS, b"\x03") == 1           # asleep: no acknowledge
    assert bus.write(0x00, b"\x00") == 1              # the wake pulse (NAKed by nobody)
    assert bus.read(ADDRESS, 4) == b"\x04\x11\x33\x43" == group(b"\x11")
    packet = bytearray([0x07, 0x30, 0x00, 0x00, 0x00])
    crc = crc16(packet)
    bad = bytes(packet) + bytes([crc & 0xFF ^ 1, crc >> 8])
    assert bus.write(ADDRESS, b"\x03" + bad) == 0
    assert bus.read(ADDRESS, 4) == group(b"\xff")     # CRC error
    good = bytes(packet) + bytes([crc & 0xFF, crc >> 8])
    assert bus.write(ADDRESS, b"\x03" + good) == 0
    assert bus.read(ADDRESS, 7) is None               # busy executing Info (5 ms)
    now[0] += 0.006
    assert bus.read(ADDRESS, 7) == group(b"\x00\x00\x60\x03")
    assert bus.write(ADDRESS, b"\x02") == 0           # idle
    assert bus.read(ADDRESS, 1) is None
    bus.write(0x00, b"\x00")
    now[0] += 1.31                                    # tWATCHDOG 1.3 s after the wake
    assert bus.read(ADDRESS, 4) is None
    bus.write(0x00, b"\x00")
    assert bus.write(ADDRESS, b"\x01") == 0           # sleep
    assert bus.write(ADDRESS, b"\x03" + good) == 1


def test_sign_takes_the_datasheet_time():
    chip = Chip(timing=1.0)
    se = _driver(chip)
    provision(se, bytearray(64))
    se.sign(0, bytes(32), bytearray(64))
    assert (OP_SIGN, EXEC_MS[OP_SIGN] / 1000) in chip.executions
    assert EXEC_MS[OP_SIGN] <= se.last_exec_ms <= EXEC_MS[OP_SIGN] + 50


class _StalledHost(DirectI2C):
    """A bus whose host is descheduled ``stall_s`` between a command's
    write and the first look for its answer, as a loaded machine did to an
    emulated device's VM and the thread serving its chip: the chip's clock
    jumps by the stall."""

    def __init__(self, bus, clock, stall_s):
        super().__init__(bus)
        self.clock, self.stall_s, self.wrote = clock, stall_s, False

    def writeto(self, addr, buf, stop=True):
        self.wrote = len(buf) > 1   # a command (a wake or idle word is one byte)
        return super().writeto(addr, buf, stop)

    def readfrom_into(self, addr, buf, stop=True):
        if self.wrote:
            self.wrote = False
            self.clock.offset += self.stall_s
        return super().readfrom_into(addr, buf, stop)


class _Clock:
    def __init__(self):
        import time
        self.offset, self._now = 0.0, time.monotonic

    def __call__(self):
        return self._now() + self.offset


def test_a_chip_served_to_an_emulated_device_outlasts_a_stalled_host(tmp_path):
    """A host stalled 2 s between a command and its answer: the datasheet's
    chip has slept by its watchdog (tWATCHDOG 1.3 s) and the driver reads a
    faulty part; the chip an emulated device carries (sim/chipwait.py
    EMULATED_WATCHDOG_S) still answers."""
    from host_tools.sim.chipwait import emulated_chip
    clock = _Clock()
    datasheet = Chip(str(tmp_path / "a.json"), timing=0.05, clock=clock)
    with pytest.raises(SecureElementFault, match="did not acknowledge a read"):
        ATECC608(_StalledHost(Bus({ADDRESS: datasheet}), clock, 2.0), margin_ms=100).random(bytearray(32))
    clock = _Clock()
    emulated = emulated_chip(str(tmp_path / "b.json"), clock=clock)
    out = bytearray(32)
    ATECC608(_StalledHost(Bus({ADDRESS: emulated}), clock, 2.0), margin_ms=100).random(out)
    assert bytes(out) == b"\xff\xff\x00\x00" * 8   # an unlocked chip's test pattern, read whole
