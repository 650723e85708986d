"""The I2C and SPI subclasses against byte-level fakes of the chip's I2C and
SPI framing. The fakes sit on the same simulator core (frames, cards,
faults) as the HSU pty server; only the bus front differs. There is no I2C
or SPI hardware here, so this is the one place a fake bus stands in."""


import pytest

from firmware.drivers import ReaderFault
from firmware.drivers.pn532_i2c import PN532_I2C
from firmware.drivers.pn532_spi import PN532_SPI
from host_tools.sim.pn532 import ACK, Chip, FakeI2C, FakeSPI

A, B, C = bytes.fromhex("04A1B2C3D4E5F6"), bytes.fromhex("8A7B6C5D"), bytes.fromhex("04FF00FF00FF00")


class Wire:
    """Records every call on a fake bus, (method, bytes), to check the framing itself."""

    def __init__(self, bus):
        self.bus = bus
        self.log = []

    def __getattr__(self, name):
        method = getattr(self.bus, name)

        def call(*args, **kw):
            result = method(*args, **kw)
            self.log.append((name, args, bytes(args[-1])))
            return result
        return call


def i2c_reader(chip):
    return PN532_I2C(FakeI2C(chip), ack_ms=30, reply_ms=100)


def spi_reader(chip):
    spi = FakeSPI(chip)
    return PN532_SPI(spi, spi.cs, ack_ms=30, reply_ms=100)


MAKERS = {"i2c": i2c_reader, "spi": spi_reader}


def _poll(reader):
    buf = bytearray(16)
    n = reader.poll(buf)
    return bytes(buf[:n])


@pytest.mark.parametrize("bus", sorted(MAKERS))
def test_reads_version_and_uids_then_no_card(bus):
    chip = Chip([A, B, C])
    reader = MAKERS[bus](chip)
    assert reader.begin() == (0x32, 0x01, 0x06, 0x07)
    assert [_poll(reader) for _ in range(4)] == [A, B, C, b""]
    assert chip.retries == 0x01   # the driver limited the retries, so "no card" is answered


@pytest.mark.parametrize("bus", sorted(MAKERS))
@pytest.mark.parametrize("kind,message", [
    ("lcs", "length checksum (LCS) wrong"),
    ("dcs", "data checksum (DCS) wrong"),
    ("nack", "NACK instead of ACK"),
    ("error", "error frame (syntax error)"),
    ("slow", "no reply from the PN532 to InListPassiveTarget within 100 ms (command aborted)"),
])
def test_each_fault_is_precise_and_the_card_is_read_next(bus, kind, message):
    chip = Chip([A, B], {1: kind}, slow=0.3)
    reader = MAKERS[bus](chip)
    with pytest.raises(ReaderFault) as fault:
        _poll(reader)
    assert message in str(fault.value)
    assert [_poll(reader), _poll(reader), _poll(reader)] == [A, B, b""]


@pytest.mark.parametrize("bus", sorted(MAKERS))
def test_two_cards_at_once_name_both(bus):
    chip = Chip([A, B, C], {2: "two", 3: "notarget"})
    reader = MAKERS[bus](chip)
    assert _poll(reader) == A
    with pytest.raises(ReaderFault, match="two cards at the antenna at once: UID %s and UID %s"
                       % (B.hex().upper(), C.hex().upper())):
        _poll(reader)
    assert _poll(reader) == b""


def test_i2c_transfers_are_the_chips_framing():
    chip = Chip([A])
    wire = Wire(FakeI2C(chip))
    reader = PN532_I2C(wire)
    reader.begin()
    wire.log.clear()
    assert _poll(reader) == A
    assert all(args[0] == 0x24 for _name, args, _data in wire.log)
    writes = [data for name, _args, data in wire.log if name == "writeto"]
    reads = [data for name, _args, data in wire.log if name == "readfrom_into" and len(data) > 1]
    # One command frame out; the ACK read as status 01 + the 6 ACK bytes;
    # the reply read as status 01 + the whole frame, in one transaction.
    assert writes == [bytes.fromhex("0000ff04fcd44a0200e000")]
    assert reads[0] == b"\x01" + ACK
    assert reads[1][:8] == bytes.fromhex("010000ff0ff1d54b")


def test_spi_transactions_carry_the_prefixes_and_cs_wakes_the_chip():
    chip = Chip([A])
    spi = FakeSPI(chip)
    wire = Wire(spi)
    reader = PN532_SPI(wire, spi.cs)
    assert chip.asleep
    reader.begin()
    assert not chip.asleep
    wire.log.clear()
    assert _poll(reader) == A
    calls = [(name, data) for name, _args, data in wire.log]
    # Data write: prefix 01 then the frame.
    assert calls[:2] == [("write", b"\x01"), ("write", bytes.fromhex("0000ff04fcd44a0200e000"))]
    # Status read(s): prefix 02, one byte back, until bit 0 says ready;
    # then data read: prefix 03 and the ACK; again for the reply.
    rest = calls[2:]
    reads = [rest[i + 1][1] for i in range(len(rest) - 1) if rest[i] == ("write", b"\x03")]
    assert reads[0] == ACK and reads[1][:7] == bytes.fromhex("0000ff0ff1d54b")
    statuses = [rest[i + 1][1] for i in range(len(rest) - 1) if rest[i] == ("write", b"\x02")]
    assert statuses and statuses[-1] == b"\x01"


def test_i2c_wrong_address_is_a_clear_fault():
    reader = PN532_I2C(FakeI2C(Chip([A])), address=0x25, ack_ms=20)
    with pytest.raises(ReaderFault, match="does not answer at I2C address 0x25"):
        reader.begin()


def test_i2c_poll_waits_no_longer_than_its_timeout():
    # A chip that never answers: each wait is bounded by the driver's own ticks.
    chip = Chip([A], {1: "slow"}, slow=10)
    reader = i2c_reader(chip)
    reader.begin()
    from host_tools.qa.soak.fuzz import InputClock
    clock = InputClock()   # time this thread had, not what other programs took
    clock.start()
    with pytest.raises(ReaderFault, match="no reply"):
        _poll(reader)
    assert clock.had() < 0.5
    assert not chip.out   # the driver's ACK aborted the late reply
