"""PN532 on HSU (its UART, 115200 8N1).

The bus object is anything with machine.UART's ``write``, ``any`` and
``readinto(buf, nbytes)``: the board's UART, configured with ``timeout=0``
so reads never wait, or ``emulator.ptyuart.PtyUART`` in the emulator.
"""

from drivers import ReaderFault
from clock import sleep_ms, ticks_diff, ticks_ms
from drivers.pn532 import PN532, ACK_TIMEOUT_MS, REPLY_TIMEOUT_MS

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

BAUD = const(115200)
# HSU wake-up: 0x55 wakes the chip from power-down; the zeros that follow
# (1.2 ms at 115200) give its oscillator time to start before the first frame.
_WAKE = b"\x55\x55\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
_DRAIN_CHUNKS = const(8)   # at most this many buffers of stale input per command


class PN532_UART(PN532):
    def __init__(self, uart, ack_ms=ACK_TIMEOUT_MS, reply_ms=REPLY_TIMEOUT_MS):
        PN532.__init__(self, ack_ms, reply_ms)
        self._uart = uart

    def _wake(self):
        self._send(_WAKE)

    def _send(self, buf):
        if self._uart.write(buf) != len(buf):
            raise ReaderFault("UART write to the PN532 did not complete")

    def _drain(self):
        for _ in range(_DRAIN_CHUNKS):
            if not self._uart.any():
                return
            self._uart.readinto(self._rx)

    def _fill(self, want, deadline):
        # Read what has arrived (never more than asked, so a reply that
        # follows this frame stays queued in the UART for the next read).
        # The clock is read before the UART is looked at: a timeout means a
        # look made at or after the deadline found nothing, never that this
        # code was kept from running past it between a look and the check.
        rx = self._rx
        while True:
            late = ticks_diff(deadline, ticks_ms()) <= 0
            waiting = self._uart.any()
            if waiting:
                got = self._uart.readinto(rx, waiting if waiting < len(rx) else len(rx))
                if got:
                    self._rpos = 0
                    self._rlen = got
                    return got
            if late:
                return 0
            sleep_ms(1)
