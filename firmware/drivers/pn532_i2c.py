"""PN532 on I2C at address 0x24.

Every read transaction from the chip starts with its status byte (bit 0 set
= a frame is ready) and, when ready, goes on with the whole frame, so the
driver polls one byte until ready and then reads the frame in one
transaction: the 6-byte ACK exactly, a reply as the longest frame it takes
(the chip pads the rest). The chip may NAK its address while it wakes from
power-down; that counts as "not ready", within the same bounded wait.

The bus object is anything with machine.I2C's ``writeto`` and
``readfrom_into``.
"""

from drivers import ReaderFault
from clock import sleep_ms, ticks_add, ticks_diff, ticks_ms
from drivers.pn532 import PN532, ACK_TIMEOUT_MS, REPLY_TIMEOUT_MS

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

ADDRESS = const(0x24)
_READY = const(0x01)


class PN532_I2C(PN532):
    def __init__(self, i2c, address=ADDRESS, ack_ms=ACK_TIMEOUT_MS, reply_ms=REPLY_TIMEOUT_MS):
        PN532.__init__(self, ack_ms, reply_ms)
        self._i2c = i2c
        self._addr = address
        self._status = bytearray(1)
        self._ack_view = memoryview(self._rx)[:7]   # status + ACK

    def _wake(self):
        # The address match itself wakes the chip; the first write retries
        # until it is awake (see _send).
        pass

    def _send(self, buf):
        deadline = ticks_add(ticks_ms(), self._ack_ms)
        while True:
            late = ticks_diff(deadline, ticks_ms()) <= 0   # before the try (drivers/pn532_uart.py _fill)
            try:
                self._i2c.writeto(self._addr, buf)
                return
            except OSError:
                if late:
                    raise ReaderFault("PN532 does not answer at I2C address 0x%02x" % self._addr)
                sleep_ms(1)

    def _drain(self):
        # Nothing queues up on I2C: the chip holds one frame until it is read.
        pass

    def _fill(self, want, deadline):
        status = self._status
        while True:
            late = ticks_diff(deadline, ticks_ms()) <= 0   # before the look (drivers/pn532_uart.py _fill)
            try:
                self._i2c.readfrom_into(self._addr, status)
            except OSError:
                status[0] = 0
            if status[0] & _READY:
                break
            if late:
                return 0
            sleep_ms(1)
        view = self._ack_view if want <= 6 else self._rx
        try:
            self._i2c.readfrom_into(self._addr, view)
        except OSError:
            raise ReaderFault("I2C read of a PN532 frame failed (NAK)")
        self._rpos = 1
        self._rlen = len(view)
        return self._rlen - 1
