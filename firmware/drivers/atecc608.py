"""Microchip ATECC608B secure element on I2C: the device key pair, ECDSA
P-256 signatures, the monotonic counters and the random-number source.

The chip sleeps until it is woken (SDA held low for tWLO >= 60 us: the
address byte 0x00 at 100 kHz does it), answers nothing while it executes
a command, and falls asleep by itself tWATCHDOG (0.7-1.7 s) after the wake,
so every operation here is one short visit: wake, one or two commands, idle
(idle keeps TempKey, sleep clears it). A command is one write of

    0x03 count opcode param1 param2(LE) data... crc16(LE)

and its answer a group "count data... crc16" read back once the chip
acknowledges again: the count byte first, then the rest, as cryptoauthlib
reads it. A 4-byte group carries a status code; anything else is the result.

Every wait is bounded (the command's maximum execution time at clock divider
0, plus a margin); every buffer is made here; a wrong count or CRC, a status
code, or silence raises SecureElementFault saying which. The opcodes, status
codes, times and the CRC are defined here once; the host's simulator
(host_tools/sim/atecc608.py) imports them.

This module is what stays resident in play (Random, Nonce, Sign, Counter,
and ECDH: the link key at boot, the pairing secret with the other device);
making the key pair, reading and locking the zones are provisioning, in
drivers/atecc608_setup.py, loaded only for that.
"""

from clock import sleep_ms, ticks_add, ticks_diff, ticks_ms

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x


class SecureElementFault(Exception):
    """The secure element did not answer, answered garbled, or refused.

    ``status`` is the chip's status code when it refused a command (0x0F
    execution error, 0x03 parse error, ...), or -1 when the fault was on the
    bus (no answer, CRC wrong), so a caller can tell a refusal from a wire.
    """

    def __init__(self, message, status=-1):
        super().__init__(message)   # MicroPython has no Exception.__init__
        self.status = status


ADDRESS = const(0x60)

OP_COUNTER = const(0x24)
OP_ECDH = const(0x43)
OP_GENKEY = const(0x40)
OP_INFO = const(0x30)
OP_LOCK = const(0x17)
OP_NONCE = const(0x16)
OP_RANDOM = const(0x1B)
OP_READ = const(0x02)
OP_SIGN = const(0x41)
OP_WRITE = const(0x12)

# Status codes of a 4-byte answer group.
SUCCESS = const(0x00)
MISCOMPARE = const(0x01)
PARSE_ERROR = const(0x03)
ECC_FAULT = const(0x05)
EXECUTION_ERROR = const(0x0F)
AFTER_WAKE = const(0x11)
CRC_ERROR = const(0xFF)
# Their names, for a fault's message: one string, not a dict (the driver is
# resident on every board, and its heap is counted).
_STATUS_NAMES = (";01 miscompare;03 parse error;05 ECC fault;0f execution error;11 just woken"
                 ";ee watchdog about to expire;ff CRC or bus error;")



# Maximum execution time of each command, ms, at ChipMode clock divider 0.
EXEC_MS = {OP_COUNTER: 25, OP_ECDH: 58, OP_GENKEY: 115, OP_INFO: 5, OP_LOCK: 35, OP_NONCE: 20,
           OP_RANDOM: 23, OP_READ: 5, OP_SIGN: 115, OP_WRITE: 45}

_T_WHI_MS = const(2)         # tWHI 1.5 ms: wake to first transaction
COUNTER_MAX = 2097151        # the counters stop here
KEY_SLOT = const(0)          # the device key pair's slot (signs checkpoints)
LINK_SLOT = const(2)         # the link key's ECDH key pair (docs/security.md, "The key at rest")
LINK_LABEL = b"shoe-link-key/1"
PAIR_SLOT = const(3)         # the pairing key's ECDH key pair: shoe and shuffler agree a secret (ID.pair.pub)
PEER_FILE = "link_peer.bin"  # on the flash: the public half `shoe deploy` kept the link key with
_MARGIN_MS = const(50)       # bus and host time on top of the chip's own (only a silent chip waits it out)
_CMD_MAX = const(8 + 64)     # the longest command sent: ECDH with a 64-byte public key
_RSP_MAX = const(3 + 64)     # the longest answer: a public key or a signature


def crc16(buf, start, end):
    """The chip's CRC-16: polynomial 0x8005, bits LSB first, initial value 0."""
    crc = 0
    for i in range(start, end):
        byte = buf[i]
        for bit in range(8):
            if ((byte >> bit) & 1) != (crc >> 15):
                crc = ((crc << 1) & 0xFFFF) ^ 0x8005
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


class ATECC608:
    def __init__(self, i2c, address=ADDRESS, margin_ms=_MARGIN_MS):
        self._i2c = i2c
        self._addr = address
        self._margin = margin_ms
        self._cmd = bytearray(_CMD_MAX)
        self._rsp = bytearray(_RSP_MAX)
        self._one = bytearray(1)
        # One view per answer length the commands here expect (count byte excluded).
        self._views = {}
        for n in (3, 6, 34, 66):
            self._views[n] = memoryview(self._rsp)[1:1 + n]
        self._cmd_views = {}
        for n in (0, 4, 32, 64):
            self._cmd_views[n] = memoryview(self._cmd)[:8 + n]
        self.last_exec_ms = 0
        self._data_len = 0

    # -- power states ---------------------------------------------------------

    def wake(self):
        """Wake the chip and check its wake group (04 11 33 43). A chip still
        awake (a visit cut short) ignores a wake, so it is sent to idle first."""
        try:
            self._i2c.writeto(self._addr, b"\x02")   # idle: NAKed unless it was awake
        except OSError:
            pass
        try:
            self._i2c.writeto(0x00, b"\x00")   # NAKed: only the low SDA matters
        except OSError:
            pass
        sleep_ms(_T_WHI_MS)
        got = self._read_group(ticks_add(ticks_ms(), 5 + self._margin), "wake")
        if got != 1 or self._rsp[1] != AFTER_WAKE:
            raise SecureElementFault("ATECC608 answered the wake with 0x%02x, not 0x11" % self._rsp[1])

    def idle(self):
        self._word(b"\x02", "idle")

    def sleep(self):
        self._word(b"\x01", "sleep")

    def _word(self, word, name):
        try:
            self._i2c.writeto(self._addr, word)
        except OSError:
            raise SecureElementFault("ATECC608 did not acknowledge %s at 0x%02x" % (name, self._addr))

    # -- one command ------------------------------------------------------------

    def _execute(self, opcode, p1, p2, data, name):
        """Send one command and read its answer group into self._rsp; return
        the number of data bytes (count - 3). A status other than success
        raises with its name."""
        n = len(data) if data else 0
        cmd = self._cmd
        cmd[0] = 0x03
        cmd[1] = 7 + n
        cmd[2] = opcode
        cmd[3] = p1
        cmd[4] = p2 & 0xFF
        cmd[5] = p2 >> 8
        for i in range(n):
            cmd[6 + i] = data[i]
        crc = crc16(cmd, 1, 6 + n)
        cmd[6 + n] = crc & 0xFF
        cmd[7 + n] = crc >> 8
        view = self._cmd_views.get(n)
        if view is None:
            raise ValueError("command data is 0, 4, 32 or 64 bytes")
        start = ticks_ms()
        deadline = ticks_add(start, 5 + self._margin)
        while True:
            late = ticks_diff(deadline, ticks_ms()) <= 0   # before the try: see _read_group
            try:
                self._i2c.writeto(self._addr, view)
                break
            except OSError:
                if late:
                    raise SecureElementFault("ATECC608 did not acknowledge the %s command (asleep?)" % name)
                sleep_ms(1)
        got = self._read_group(ticks_add(ticks_ms(), EXEC_MS[opcode] + self._margin), name)
        self.last_exec_ms = ticks_diff(ticks_ms(), start)
        if got == 1 and self._rsp[1] != SUCCESS:
            status = self._rsp[1]
            at = _STATUS_NAMES.find(";%02x " % status)
            raise SecureElementFault("ATECC608 refused %s: %s (0x%02x)"
                                     % (name, _STATUS_NAMES[at + 4:_STATUS_NAMES.find(";", at + 1)]
                                        if at >= 0 else "unknown status", status), status)
        return got

    def _read_group(self, deadline, name):
        """Poll until the chip acknowledges, read the count byte, then the rest;
        check the CRC. Returns the data length."""
        one = self._one
        # The clock is read before each try: a fault means a try made at or
        # after the deadline was NAKed, never that this code was kept from
        # running past the deadline between a NAK and the check.
        while True:
            late = ticks_diff(deadline, ticks_ms()) <= 0
            try:
                self._i2c.readfrom_into(self._addr, one)
                break
            except OSError:
                if late:
                    raise SecureElementFault("ATECC608 did not acknowledge a read (%s) at 0x%02x in time"
                                             % (name, self._addr))
                sleep_ms(1)
        count = one[0]
        view = self._views.get(count - 1)
        if view is None:
            raise SecureElementFault("ATECC608 answer to %s has count %d, not a known length" % (name, count))
        r = self._rsp
        r[0] = count
        try:
            self._i2c.readfrom_into(self._addr, view)
        except OSError:
            raise SecureElementFault("ATECC608 stopped answering in the middle of %s" % name)
        crc = crc16(r, 0, count - 2)
        if r[count - 2] != crc & 0xFF or r[count - 1] != crc >> 8:
            raise SecureElementFault("ATECC608 answer to %s has a wrong CRC" % name)
        return count - 3

    def _copy(self, out, n, name):
        got = self._data_len
        if got != n:
            raise SecureElementFault("ATECC608 answered %s with %d bytes, not %d" % (name, got, n))
        r = self._rsp
        for i in range(n):
            out[i] = r[1 + i]

    def _run(self, opcode, p1, p2, data, name, out, n):
        """Wake, execute, copy ``n`` answer bytes into ``out``, idle."""
        self.wake()
        try:
            self._data_len = self._execute(opcode, p1, p2, data, name)
            if out is not None:
                self._copy(out, n, name)
        finally:
            try:
                self.idle()
            except SecureElementFault:
                pass   # it sleeps by itself within tWATCHDOG
        return self._data_len

    # -- commands a shoe uses in play ------------------------------------------

    def random(self, out):
        """32 random bytes into ``out`` (the fixed test pattern until the configuration is locked)."""
        self._run(OP_RANDOM, 0x00, 0, None, "Random", out, 32)

    def nonce(self, num_in, out):
        """Nonce in random mode: ``out`` gets RandOut; TempKey holds SHA-256(RandOut, num_in, ...)."""
        self._run(OP_NONCE, 0x00, 0, num_in, "Nonce", out, 32)

    def sign(self, slot, digest, out):
        """ECDSA P-256 over the 32-byte ``digest`` with the key in ``slot``:
        R||S into ``out``. Nonce (pass-through) puts the digest in TempKey,
        Sign uses it, within one wake."""
        self.wake()
        try:
            self._execute(OP_NONCE, 0x03, 0, digest, "Nonce(pass-through)")
            self._data_len = self._execute(OP_SIGN, 0x80, slot, None, "Sign")
            self._copy(out, 64, "Sign")
        finally:
            try:
                self.idle()
            except SecureElementFault:
                pass

    def ecdh(self, slot, public, out):
        """ECDH of the private key in ``slot`` with ``public`` (X||Y, 64
        bytes): the shared secret's X into ``out`` (32 bytes), in clear, as
        the slot's configuration allows (mode 0x0C: key from the slot,
        result to the output buffer)."""
        self._run(OP_ECDH, 0x0C, slot, public, "ECDH", out, 32)

    def counter(self, which, increment):
        """Counter[which] (0 or 1), incremented first when ``increment``."""
        self._run(OP_COUNTER, 0x01 if increment else 0x00, which, None, "Counter", None, 0)
        r = self._rsp
        if self._data_len != 4:
            raise SecureElementFault("Counter answer has %d bytes, not 4" % self._data_len)
        return r[1] | (r[2] << 8) | (r[3] << 16) | (r[4] << 24)



def pair_secret(se, peer, out):
    """ECDH of this chip's pairing key (PAIR_SLOT) with the other device's
    pairing public key ``peer`` (X||Y, 64 bytes, from its ``ID.pair.pub``):
    the 32-byte shared secret into ``out``. The shoe's chip and the
    shuffler's reach the same secret, which no pit PC can compute (it holds
    only the public halves); a caller hashes it with its own label before
    using it as a key."""
    se.ecdh(PAIR_SLOT, peer, out)
    return out
