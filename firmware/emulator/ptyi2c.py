"""A fake machine.I2C whose transactions cross a pty to the host.

The emulator's secure element is simulated in the host process (it signs
with the `cryptography` library, which no MicroPython VM has), so the VM's
board needs an I2C bus whose far end is on the host. Each transaction is one
short message on a pty, and the host's bus (host_tools/sim/i2cbus.py)
answers it as the addressed device would:

    write   'W' addr n data[n]     ->  status                (0 ACK, 1 address NAK, 2 data NAK)
    read    'R' addr n             ->  status [data[n] if status is 0]

A transaction to address 0x00 is how a driver holds SDA low to wake an
ATECC608 (the address byte 0x00 at 100 kHz keeps SDA low for 80 us, more
than its 60 us tWLO); it is carried like any other and NAKed, as on a board.

``writeto`` and ``readfrom_into`` behave as machine.I2C's: OSError(ENODEV)
when the address is not acknowledged, and they allocate nothing. Each waits
for the host's answer, bounded by the pty's timeout (``_REPLY_MS``). Runs
under MicroPython's unix port and CPython (the host side of the tests uses
it too).
"""

from emulator.ptyuart import PtyUART

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

OP_WRITE = const(0x57)
OP_READ = const(0x52)
ACK = const(0)
NAK_ADDRESS = const(1)
NAK_DATA = const(2)
MAX_BYTES = const(255)
_ENODEV = const(19)
_EIO = const(5)
# The host's bus answers each transaction as soon as its thread runs, so this
# bounds only a dead host. On a loaded machine that thread can go unscheduled
# for hundreds of milliseconds, and a transaction given up on leaves its late
# answer in the pty to be read as the next one's: the chip then seems to stop
# answering mid-command. A host that is there answers well within this.
_REPLY_MS = const(10000)


class PtyI2C:
    def __init__(self, path, reply_ms=_REPLY_MS):
        self._port = PtyUART(path, 115200, timeout=reply_ms)
        self._head = bytearray(3)
        self._status = bytearray(1)

    def _header(self, op, addr, n):
        if n > MAX_BYTES:
            raise ValueError("an I2C transaction here carries at most 255 bytes")
        head = self._head
        head[0] = op
        head[1] = addr
        head[2] = n
        if self._port.write(head) is None:
            raise OSError(_EIO)

    def _answer(self):
        if not self._port.readinto(self._status, 1):
            raise OSError(_EIO)   # the host bus did not answer: a dead bus
        return self._status[0]

    def writeto(self, addr, buf, stop=True):
        n = len(buf)
        self._header(OP_WRITE, addr, n)
        if n and self._port.write(buf) is None:
            raise OSError(_EIO)
        status = self._answer()
        if status == NAK_ADDRESS:
            raise OSError(_ENODEV)
        if status == NAK_DATA:
            return 0
        return n

    def readfrom_into(self, addr, buf, stop=True):
        n = len(buf)
        self._header(OP_READ, addr, n)
        status = self._answer()
        if status != ACK:
            raise OSError(_ENODEV)
        if n and (self._port.readinto(buf, n) or 0) != n:
            raise OSError(_EIO)

    def deinit(self):
        self._port.deinit()
