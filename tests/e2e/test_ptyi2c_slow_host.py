"""The emulated boards' I2C bus over a pty (firmware/emulator/ptyi2c.py) waits
for the host's answer to each transaction, however late a loaded machine
makes it, and reads every answer as its own transaction's; only a host that
never answers is a dead bus (OSError), at its bound."""

import errno
import threading
import time

import pytest

from firmware.emulator.ptyi2c import PtyI2C
from host_tools.sim import i2cbus, ptys

LATE_S = 0.4   # a bus thread left unscheduled this long on a loaded 2-core machine
ADDR = 0x60


class Register:
    """A device that answers each read with the bytes last written to it."""

    def __init__(self):
        self.value = b""

    def wake_pulse(self):
        pass

    def i2c_write(self, data):
        self.value = data
        return True

    def i2c_read(self, n):
        return self.value[:n].ljust(n, b"\0")


class LateBus(i2cbus.Bus):
    def write(self, addr, data):
        time.sleep(LATE_S)
        return super().write(addr, data)

    def read(self, addr, n):
        time.sleep(LATE_S)
        return super().read(addr, n)


def test_a_late_host_answers_each_transaction_in_step():
    stop = threading.Event()
    master, slave, path = ptys.open_raw()
    server = threading.Thread(target=i2cbus.serve, args=(LateBus({ADDR: Register()}), master, stop.is_set),
                              daemon=True)
    server.start()
    bus = PtyI2C(path)
    try:
        for k in range(2):
            word = bytes([k, 0xA5, k ^ 0xFF])
            assert bus.writeto(ADDR, word) == len(word)
            got = bytearray(3)
            bus.readfrom_into(ADDR, got)
            assert bytes(got) == word, k
        with pytest.raises(OSError) as e:   # an address nobody holds: NAKed, late, in step
            bus.readfrom_into(0x11, bytearray(1))
        assert e.value.args[0] == errno.ENODEV
    finally:
        stop.set()
        server.join(5)
        bus.deinit()
        ptys.close(master, slave)


def test_a_host_that_never_answers_is_a_dead_bus_at_the_bound():
    master, slave, path = ptys.open_raw()
    bus = PtyI2C(path, reply_ms=300)
    try:
        started = time.monotonic()
        with pytest.raises(OSError) as e:
            bus.writeto(ADDR, b"\x01")
        assert e.value.args[0] == errno.EIO and time.monotonic() - started >= 0.3
    finally:
        bus.deinit()
        ptys.close(master, slave)
