"""GM65-class serial barcode engine: one printed card code per line.

The engine sends each decoded code as printable ASCII followed by CR LF at
9600 8N1 and nothing else, so anything else on the line (a control byte, a
line that never ends, a line longer than any printed code) means the read
cannot be trusted: the whole line is dropped and ``ReaderFault`` says why,
and the next line is read normally. Noise has no line end, so after a bad
byte the driver drops everything up to the next CR LF or until the line has
been quiet for ``line_timeout_ms``: a fragment after a glitch is never
passed on as a code of its own. ``poll`` never waits: it takes what the
UART already holds (at most one small chunk per call) and returns a code
only when its CR LF has arrived.
"""

from drivers import ReaderFault

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from clock import ticks_diff, ticks_ms

BAUD = const(9600)
MAX_CODE = const(32)
# A 32-character line takes 37 ms at 9600 baud; an engine that stops for
# longer than this in mid-line has glitched or been unplugged.
LINE_TIMEOUT_MS = const(200)

_CR = const(13)
_LF = const(10)
_CHUNK = const(32)


class GM65:
    def __init__(self, uart, max_code=MAX_CODE, line_timeout_ms=LINE_TIMEOUT_MS):
        self._uart = uart
        self._max = max_code
        self._timeout = line_timeout_ms
        self._line = bytearray(max_code)
        self._n = 0            # bytes of the current line so far
        self._cr = False       # the current line's CR has arrived
        self._skip = False     # dropping the rest of a line already reported
        self._rx = bytearray(_CHUNK)
        self._rpos = 0
        self._rlen = 0
        self._last = ticks_ms()

    def poll(self, buf):
        """Copy the next complete code into ``buf`` and return its length, or
        0 when none is complete yet; raise ReaderFault for a bad line."""
        if self._rpos >= self._rlen:
            waiting = self._uart.any()
            if not waiting:
                self._check_idle()
                return 0
            got = self._uart.readinto(self._rx, min(waiting, _CHUNK))
            if not got:
                return 0
            self._rpos = 0
            self._rlen = got
            self._last = ticks_ms()
        while self._rpos < self._rlen:
            b = self._rx[self._rpos]
            self._rpos += 1
            n = self._byte(b)
            if n:
                for k in range(n):
                    buf[k] = self._line[k]
                self._n = 0
                return n
        return 0

    def _byte(self, b):
        """Feed one byte; return the code length when a line completes."""
        if b == _LF:
            cr, n, skip = self._cr, self._n, self._skip
            self._cr = self._skip = False
            self._n = 0
            if skip:
                return 0
            if not cr:
                raise ReaderFault("gm65: line ended with LF but no CR after %d bytes" % n)
            if not n:
                raise ReaderFault("gm65: empty line (CR LF with no code)")
            self._n = n  # poll copies it out, then clears it
            return n
        if self._skip:
            return 0
        if self._cr:
            self._drop()
            raise ReaderFault("gm65: CR followed by 0x%02x instead of LF" % b)
        if b == _CR:
            self._cr = True
            return 0
        if b < 0x20 or b > 0x7E:
            col = self._n
            self._drop()
            raise ReaderFault("gm65: non-printable byte 0x%02x at column %d" % (b, col + 1))
        if self._n >= self._max:
            self._drop()
            raise ReaderFault("gm65: line longer than %d characters" % self._max)
        self._line[self._n] = b
        self._n += 1
        return 0

    def _drop(self):
        self._n = 0
        self._cr = False
        self._skip = True

    def _check_idle(self):
        if not (self._n or self._cr or self._skip):
            return
        if ticks_diff(ticks_ms(), self._last) < self._timeout:
            return
        n, reported = self._n, self._skip
        self._n = 0
        self._cr = self._skip = False
        if not reported:
            raise ReaderFault("gm65: partial line of %d bytes dropped, no CR LF within %d ms"
                              % (n, self._timeout))
