"""PN532 on SPI (mode 0, LSB first).

The board configures the SPI peripheral to shift LSB first (the ESP32-S3 does
it in hardware; boards.toml keeps the PN532 off buses that cannot), so bytes
here are the protocol's own values. Every transaction, framed by chip
select, starts with one prefix byte: 0x01 data write (a frame follows),
0x02 status read (bit 0 of the next byte = a frame is ready), 0x03 data read
(the chip's frame follows). Pulling chip select low also wakes the chip.

The bus object is anything with machine.SPI's ``write`` and ``readinto``;
``cs`` is a machine.Pin-like output (``value(v)``).
"""

from clock import sleep_ms, ticks_diff, ticks_ms
from drivers.pn532 import PN532, ACK_TIMEOUT_MS, REPLY_TIMEOUT_MS

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_DATA_WRITE = const(0x01)
_STATUS_READ = const(0x02)
_DATA_READ = const(0x03)
_READY = const(0x01)
_WAKE_MS = const(2)   # the chip's wake-up time after chip select falls


class PN532_SPI(PN532):
    def __init__(self, spi, cs, ack_ms=ACK_TIMEOUT_MS, reply_ms=REPLY_TIMEOUT_MS):
        PN532.__init__(self, ack_ms, reply_ms)
        self._spi = spi
        self._cs = cs
        self._op = bytearray(1)
        self._status = bytearray(1)
        self._ack_view = memoryview(self._rx)[:6]

    def _wake(self):
        self._cs.value(0)
        sleep_ms(_WAKE_MS)
        self._cs.value(1)

    def _begin(self, op):
        self._op[0] = op
        self._cs.value(0)
        self._spi.write(self._op)

    def _send(self, buf):
        self._begin(_DATA_WRITE)
        self._spi.write(buf)
        self._cs.value(1)

    def _drain(self):
        # Nothing queues up on SPI: the chip holds one frame until it is read.
        pass

    def _fill(self, want, deadline):
        while True:
            late = ticks_diff(deadline, ticks_ms()) <= 0   # before the look (drivers/pn532_uart.py _fill)
            self._begin(_STATUS_READ)
            self._spi.readinto(self._status)
            self._cs.value(1)
            if self._status[0] & _READY:
                break
            if late:
                return 0
            sleep_ms(1)
        view = self._ack_view if want <= 6 else self._rx
        self._begin(_DATA_READ)
        self._spi.readinto(view)
        self._cs.value(1)
        self._rpos = 0
        self._rlen = len(view)
        return self._rlen
