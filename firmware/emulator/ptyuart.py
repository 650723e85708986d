"""A fake machine.UART over a pseudo-terminal, for the emulator board.

MicroPython's unix port has no machine.UART, and the emulator's peers (the
PN532 and barcode simulators, the pit PC's bridge) are on ptys. This class
gives drivers the same four calls a board UART does, with the same
semantics, so the driver code that runs here is the code that ships:

- ``any()`` the bytes ready to read, ``readinto(buf[, nbytes])`` and
  ``read([nbytes])`` take what has arrived and wait at most ``timeout`` ms
  for the rest (None when nothing came, as machine.UART), ``write(buf)``
  waits at most ``write_timeout`` ms for room and returns None if there was
  none, so nothing here can block without bound.
- The tty is put in raw mode with VMIN = VTIME = 0, so a read(2) on it
  returns at once with what is there: no call ever sleeps in the kernel
  except in ``poll`` with a timeout.
- Reads go through one preallocated buffer and ``poll.ipoll``, so
  ``any``/``readinto``/``write`` allocate nothing (``read`` returns a new
  bytes object, as machine.UART's does).

Runs under MicroPython's unix port and CPython (Linux tty layout).
"""

import select
import termios

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from clock import ticks_add, ticks_diff, ticks_ms

try:
    _setraw = termios.setraw
except AttributeError:  # CPython keeps setraw in tty
    from tty import setraw as _setraw

_VTIME = const(5)   # Linux c_cc indices
_VMIN = const(6)
_RXBUF = const(256)
_WRITE_TIMEOUT_MS = const(100)


class PtyUART:
    def __init__(self, path, baudrate=115200, timeout=0, write_timeout=_WRITE_TIMEOUT_MS,
                 rxbuf=_RXBUF):
        self.path = path
        self.baudrate = baudrate
        self._timeout = timeout
        self._write_timeout = write_timeout
        self._f = open(path, "r+b", buffering=0)
        fd = self._f.fileno()
        _setraw(fd)
        attr = termios.tcgetattr(fd)
        speed = getattr(termios, "B%d" % baudrate, None)
        if speed is None:
            raise ValueError("baud rate %d not supported by termios" % baudrate)
        attr[4] = speed
        attr[5] = speed
        attr[6][_VMIN] = 0
        attr[6][_VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, attr)
        self._buf = bytearray(rxbuf)
        self._head = 0
        self._tail = 0
        pin = select.poll()
        pin.register(self._f, select.POLLIN)
        pout = select.poll()
        pout.register(self._f, select.POLLOUT)
        # ipoll is MicroPython's allocation-free poll; CPython has only poll.
        self._wait_in = getattr(pin, "ipoll", pin.poll)
        self._wait_out = getattr(pout, "ipoll", pout.poll)

    def _pump(self):
        """Refill the receive buffer from the tty, only once it is empty, so
        the buffer never needs compacting or a slice."""
        if self._head == self._tail:
            self._head = 0
            self._tail = self._f.readinto(self._buf) or 0
        return self._tail - self._head

    def any(self):
        return self._pump()

    def buffered(self):
        """Bytes already taken from the tty and not yet read: a poll on
        the tty does not see them."""
        return self._tail - self._head

    def readinto(self, buf, nbytes=-1):
        if nbytes < 0 or nbytes > len(buf):
            nbytes = len(buf)
        got = 0
        deadline = ticks_add(ticks_ms(), self._timeout)
        while True:
            src = self._buf
            head = self._head
            tail = self._tail
            while got < nbytes and head < tail:
                buf[got] = src[head]
                got += 1
                head += 1
            self._head = head
            if got >= nbytes:
                return got
            if self._pump():
                continue
            wait = ticks_diff(deadline, ticks_ms())
            if wait <= 0:
                return got or None
            self._wait_in(wait)
            self._pump()

    def read(self, nbytes=-1):
        if nbytes < 0:
            nbytes = self.any()
            if not nbytes and self._timeout > 0:
                self._wait_in(self._timeout)
                nbytes = self.any()
            if not nbytes:
                return None
        buf = bytearray(nbytes)
        got = self.readinto(buf)
        if not got:
            return None
        return bytes(buf) if got == nbytes else bytes(buf[:got])

    def write(self, buf):
        for _ in self._wait_out(self._write_timeout):
            return self._f.write(buf)
        return None

    def deinit(self):
        self._f.close()
