"""NXP PN532 NFC controller: the frame protocol shared by its three buses.

The chip speaks the same frames on HSU (UART), I2C and SPI; only how bytes
get on and off the wire differs, so the bus subclasses (pn532_uart, pn532_i2c,
pn532_spi) supply four small methods and everything that decides whether a
reply can be trusted lives here, once:

    frame   00 00 FF LEN LCS TFI DATA... DCS 00    LEN+LCS = 0, TFI+DATA+DCS = 0 (mod 256)
    ACK     00 00 FF 00 FF 00                      command accepted, reply follows
    NACK    00 00 FF FF 00 00                      "send that again"
    error   00 00 FF 01 FF 7F 81 00                the chip refused the command

The shoe only needs a card's UID, so the driver uses four commands, all built
once at construction: SAMConfiguration (leave the power-on low-battery mode),
RFConfiguration MaxRetries (so InListPassiveTarget answers "no target" in a
few milliseconds instead of waiting for a card forever), GetFirmwareVersion
(is this really a PN532?) and InListPassiveTarget at 106 kbps type A.

Two targets are asked for, not one: two cards at the antenna together means
two cards left the shoe at once, which the dealer must hear about, and the
chip only reports that when it may return both. That case raises
ReaderFault naming both UIDs, so nothing read is lost.

``poll`` runs once per main-loop pass. It allocates nothing (the frames and
buffers are made here, the waits are bounded in ticks) unless it raises.
After a timeout the next ``poll`` wakes and configures the chip again, since
a chip that went silent may have been reset or browned out.
"""

from drivers import ReaderFault

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from clock import ticks_add, ticks_ms

# An ACK leaves the chip within about a millisecond of the command frame.
ACK_TIMEOUT_MS = const(30)
# InListPassiveTarget with one retry and no card answers in ~10 ms; a reply
# later than this is a fault, not a slow card.
REPLY_TIMEOUT_MS = const(100)
_PN532_IC = const(0x32)

_HOST_TFI = const(0xD4)
_CHIP_TFI = const(0xD5)
_ERROR_TFI = const(0x7F)
_CMD_LIST = const(0x4A)
_DATA_MAX = const(64)      # longest reply accepted: two targets with ATS fit
_RX_MAX = const(72)        # one bus read: a whole reply frame plus I2C status
_NOISE_MAX = const(96)     # bytes skipped looking for a frame start before giving up

# _read_frame results other than a data frame's length (which is >= 1).
_TIMEOUT = const(-1)
_ACK = const(-2)
_NACK = const(-3)

ACK_FRAME = b"\x00\x00\xff\x00\xff\x00"


def frame(command, params=b""):
    """The host-to-chip frame for ``command`` with ``params`` (made once, not per poll)."""
    n = 2 + len(params)
    out = bytearray(n + 7)
    out[2] = 0xFF
    out[3] = n
    out[4] = (256 - n) & 0xFF
    out[5] = _HOST_TFI
    out[6] = command
    total = _HOST_TFI + command
    for i in range(len(params)):
        out[7 + i] = params[i]
        total += params[i]
    out[n + 5] = (256 - total) & 0xFF
    return out


class PN532:
    def __init__(self, ack_ms=ACK_TIMEOUT_MS, reply_ms=REPLY_TIMEOUT_MS):
        self._ack_ms = ack_ms
        self._reply_ms = reply_ms
        self._rx = bytearray(_RX_MAX)
        self._rpos = 0
        self._rlen = 0
        self._data = bytearray(_DATA_MAX)
        self._ready = False
        self.firmware = None
        # SAM normal mode, 1 s virtual-card timeout, IRQ pin driven.
        self._f_sam = frame(0x14, b"\x01\x14\x01")
        # MaxRetries: ATR 0xFF, PSL 1, passive activation 1 (two tries, then answer).
        self._f_retries = frame(0x32, b"\x05\xff\x01\x01")
        self._f_version = frame(0x02)
        # At most two targets, 106 kbps type A.
        self._f_list = frame(_CMD_LIST, b"\x02\x00")

    # -- what a bus subclass provides ----------------------------------------

    def _wake(self):
        """Bring the chip out of power-down (each bus has its own wake-up)."""
        raise NotImplementedError

    def _send(self, buf):
        """Put the whole frame ``buf`` on the bus, in bounded time."""
        raise NotImplementedError

    def _drain(self):
        """Throw away anything the chip sent that nobody asked for."""
        raise NotImplementedError

    def _fill(self, want, deadline):
        """Load ``self._rx[_rpos:_rlen]`` with the chip's next bytes (``want`` is
        the most the next frame needs); return how many, 0 at the deadline."""
        raise NotImplementedError

    # -- commands --------------------------------------------------------------

    def begin(self):
        """Wake and configure the chip; return its firmware version tuple."""
        self._ready = False
        self._wake()
        self._command(self._f_sam, "SAMConfiguration")
        self._command(self._f_retries, "RFConfiguration")
        self.firmware_version()
        self._ready = True
        return self.firmware

    def firmware_version(self):
        """(IC, Ver, Rev, Support) from GetFirmwareVersion; IC must be 0x32."""
        n = self._command(self._f_version, "GetFirmwareVersion")
        d = self._data
        if n != 6:
            raise ReaderFault("GetFirmwareVersion reply has %d data bytes, not 4" % (n - 2))
        if d[2] != _PN532_IC:
            raise ReaderFault("not a PN532: GetFirmwareVersion says IC 0x%02x" % d[2])
        self.firmware = (d[2], d[3], d[4], d[5])
        return self.firmware

    def poll(self, buf):
        """Put the UID of the card at the antenna into ``buf``; return its length,
        or 0 when there is none. Raises ReaderFault for anything untrustworthy."""
        if not self._ready:
            self.begin()
        n = self._command(self._f_list, "InListPassiveTarget")
        d = self._data
        if n < 3:
            raise ReaderFault("InListPassiveTarget reply has no target count")
        count = d[2]
        if count == 0:
            return 0
        end = self._target_end(3, n)
        if count == 1:
            if end != n:
                raise ReaderFault("InListPassiveTarget reply has %d bytes after its one target" % (n - end))
            size = d[7]
            for i in range(size):
                buf[i] = d[8 + i]
            return size
        if count == 2:
            second = self._target_end(end, n)
            if second != n:
                raise ReaderFault("InListPassiveTarget reply has %d bytes after its two targets" % (n - second))
            raise ReaderFault("two cards at the antenna at once: UID %s and UID %s"
                              % (self._hex(8, d[7]), self._hex(end + 5, d[end + 4])))
        raise ReaderFault("InListPassiveTarget reports %d targets; at most 2 were asked for" % count)

    # -- frames ----------------------------------------------------------------

    def _command(self, cmd_frame, name):
        """Send one command, take its ACK and its reply; return the reply's
        length in ``self._data`` (TFI first), checked to answer this command."""
        self._rpos = 0
        self._rlen = 0
        self._drain()
        self._send(cmd_frame)
        got = self._read_frame(6, ticks_add(ticks_ms(), self._ack_ms), name)
        if got == _TIMEOUT:
            self._ready = False
            raise ReaderFault("no ACK from the PN532 to %s within %d ms" % (name, self._ack_ms))
        if got == _NACK:
            raise ReaderFault("PN532 answered %s with NACK instead of ACK" % name)
        if got != _ACK:
            raise ReaderFault("PN532 sent a %d-byte frame where the ACK to %s was due" % (got, name))
        got = self._read_frame(_RX_MAX, ticks_add(ticks_ms(), self._reply_ms), name)
        if got == _TIMEOUT:
            # An ACK from the host aborts the command, so a late reply cannot
            # turn up in the middle of the next one.
            self._send(ACK_FRAME)
            self._ready = False
            raise ReaderFault("no reply from the PN532 to %s within %d ms (command aborted)"
                              % (name, self._reply_ms))
        if got < 0:
            raise ReaderFault("PN532 sent %s where the reply to %s was due"
                              % ("an ACK" if got == _ACK else "a NACK", name))
        d = self._data
        if got == 1 and d[0] == _ERROR_TFI:
            raise ReaderFault("PN532 answered %s with an error frame (syntax error)" % name)
        if got < 2 or d[0] != _CHIP_TFI or d[1] != cmd_frame[6] + 1:
            raise ReaderFault("reply to %s is not its answer: TFI 0x%02x code 0x%02x"
                              % (name, d[0], d[1] if got > 1 else 0))
        return got

    def _byte(self, want, deadline):
        if self._rpos >= self._rlen and not self._fill(want, deadline):
            return -1
        b = self._rx[self._rpos]
        self._rpos += 1
        return b

    def _read_frame(self, want, deadline, name):
        """Find and check the next frame. Bytes before its start code are line
        noise and are skipped (up to _NOISE_MAX); a bad checksum or a frame cut
        short raises. Returns the data length, _ACK, _NACK or _TIMEOUT."""
        prev = -1
        skipped = 0
        while True:
            b = self._byte(want, deadline)
            if b < 0:
                return _TIMEOUT
            if prev == 0 and b == 0xFF:
                break
            prev = b
            skipped += 1
            if skipped > _NOISE_MAX:
                raise ReaderFault("%d bytes of noise from the PN532 without a frame start (%s)"
                                  % (skipped, name))
        size = self._byte(want, deadline)
        lcs = self._byte(want, deadline)
        if lcs < 0:
            raise ReaderFault("frame from the PN532 cut short before its length (%s)" % name)
        if size == 0 and lcs == 0xFF:
            return _ACK
        if size == 0xFF and lcs == 0:
            return _NACK
        if (size + lcs) & 0xFF:
            raise ReaderFault("length checksum (LCS) wrong in the PN532's frame for %s: "
                              "LEN 0x%02x LCS 0x%02x" % (name, size, lcs))
        if size > _DATA_MAX:
            raise ReaderFault("PN532 frame for %s holds %d bytes, more than %d"
                              % (name, size, _DATA_MAX))
        d = self._data
        total = 0
        for i in range(size + 1):
            b = self._byte(want, deadline)
            if b < 0:
                raise ReaderFault("PN532 frame for %s cut short after %d of %d bytes"
                                  % (name, i, size + 1))
            if i < size:
                d[i] = b
            total += b
        if total & 0xFF:
            raise ReaderFault("data checksum (DCS) wrong in the PN532's frame for %s" % name)
        return size

    def _target_end(self, i, n):
        """Check the target record at ``self._data[i]`` (Tg, SENS_RES, SEL_RES,
        UID length, UID, ATS when SEL_RES says ISO 14443-4); return where it ends."""
        d = self._data
        if i + 5 > n:
            raise ReaderFault("InListPassiveTarget reply cut short in a target record")
        size = d[i + 4]
        if size != 4 and size != 7:
            raise ReaderFault("card UID of %d bytes; only 4- and 7-byte UIDs are read" % size)
        end = i + 5 + size
        if end <= n and d[i + 3] & 0x20:
            if end == n:
                raise ReaderFault("InListPassiveTarget reply lacks the ATS its SEL_RES announces")
            end += d[end]
        if end > n:
            raise ReaderFault("InListPassiveTarget reply cut short in a target record")
        return end

    def _hex(self, start, size):
        digits = "0123456789ABCDEF"
        out = ""
        for i in range(start, start + size):
            b = self._data[i]
            out += digits[b >> 4] + digits[b & 15]
        return out
