"""`shoe sim pn532`: a PN532 NFC controller, at the level of its frames.

``Chip`` is the part that does not care about the bus: frames from the host
go in, ACKs and replies come out as whole frames, each due at a time. Three
bus fronts share it, so the HSU pty server and the I2C and SPI fakes answer
with the very same bytes:

- ``serve_hsu`` puts it on a pty (HSU, 115200 8N1), with the HSU wake-up:
  until a 0x55 arrives the chip is asleep and ignores the line;
- ``FakeI2C`` is a machine.I2C-shaped bus with the chip at 0x24 (each read
  is the status byte, then the frame when one is ready);
- ``FakeSPI`` is an LSB-first machine.SPI-shaped bus plus its chip-select
  pin (prefix 0x01 write, 0x02 status, 0x03 read; chip select wakes it).

The cards "at the antenna" are a queue of UIDs: each InListPassiveTarget
takes the next one, then finds no target. A card leaves the queue only when
the reply naming it has actually been delivered; a reply that was garbled,
refused or aborted leaves the card at the antenna, as a real card would
still be in the field for the next poll.

Faults hit the Nth InListPassiveTarget (counting from 1), ``N:kind``:

  notarget  no card found this time (the card stays for the next poll)
  lcs       reply with a wrong length checksum
  dcs       reply with a wrong data checksum
  nack      NACK instead of ACK, and no reply
  error     the chip's error frame instead of the reply
  garbage   line noise before the ACK and before the reply (reply is good);
            a fault of the HSU line, not of the I2C/SPI fakes
  slow      reply sent ``slow`` seconds late (after the driver's timeout)
  stall     ACK and reply both ``slow`` seconds late, and no host frame read
            until they are out: what a stalled line or a loaded machine does
            (the chip answers the poll it read before the host's repeats)
  two       the next two cards answer together (two targets, when the
            host asked for two; otherwise only the first answers)

"No target" is answered as the chip does: with 0 targets once the host has
limited the passive-activation retries (RFConfiguration item 5), and with
silence while they are left at the power-on 0xFF ("retry for ever").
"""

import collections
import os
import select
import sys
import time

from host_tools import argtypes
from host_tools.sim import ptys
from host_tools.sim import Stop, stop_on_sigterm

IC, VER, REV, SUPPORT = 0x32, 0x01, 0x06, 0x07   # a PN532 v1.6, as shipped
I2C_ADDRESS = 0x24
ACK = b"\x00\x00\xff\x00\xff\x00"
NACK = b"\x00\x00\xff\xff\x00\x00"
ERROR = b"\x00\x00\xff\x01\xff\x7f\x81\x00"
WAKE = 0x55
# Noise with no 00 FF in it, so it can only be skipped, never taken for a frame.
GARBAGE = b"\x55\xaa\x13\x00\x37\xfe\x00\x00\x42"
FAULTS = ("notarget", "lcs", "dcs", "nack", "error", "garbage", "slow", "stall", "two")


def reply_frame(command, data=b""):
    """The chip-to-host frame answering ``command`` (D5, command + 1, data)."""
    body = bytes([0xD5, command + 1]) + bytes(data)
    n = len(body)
    return bytes([0, 0, 0xFF, n, (-n) & 0xFF]) + body + bytes([(-sum(body)) & 0xFF, 0])


def read_uids(path):
    """UIDs from a file: hex, one per line (spaces and colons allowed); blank
    lines and ``#`` comments are skipped. Each must be 4 or 7 bytes."""
    uids = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip().replace(":", "").replace(" ", "")
            if not text:
                continue
            try:
                uid = bytes.fromhex(text)
            except ValueError:
                raise ValueError("%s line %d: %r is not hex" % (path, number, line.strip())) from None
            if len(uid) not in (4, 7):
                raise ValueError("%s line %d: UID of %d bytes (4 or 7 expected)"
                                 % (path, number, len(uid)))
            uids.append(uid)
    return uids


def parse_faults(spec):
    """``"3:dcs,7:slow"`` -> {3: "dcs", 7: "slow"}."""
    faults = {}
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        index, sep, kind = item.partition(":")
        if not sep or not index.strip().isdigit() or int(index) < 1:
            raise ValueError("fault %r: expected N:kind with N >= 1 (the Nth poll)" % item)
        kind = kind.strip()
        if kind not in FAULTS:
            raise ValueError("fault %r: unknown kind %r (one of %s)" % (item, kind, ", ".join(FAULTS)))
        faults[int(index)] = kind
    return faults


def _target(tg, uid):
    """One target record: Tg, SENS_RES, SEL_RES, UID length, UID. 7-byte UIDs
    answer as NTAG21x (ATQA 00 44, SAK 00), 4-byte as MIFARE Classic 1K."""
    sens, sel = (b"\x00\x44", 0x00) if len(uid) == 7 else (b"\x00\x04", 0x08)
    return bytes([tg]) + sens + bytes([sel, len(uid)]) + uid


def _ntag_pages(uid, page):
    """16 bytes from ``page`` of an NTAG21x whose first pages hold its UID."""
    memory = bytearray(16 * 4)
    if len(uid) == 7:
        memory[0:4] = bytes([uid[0], uid[1], uid[2], 0x88 ^ uid[0] ^ uid[1] ^ uid[2]])
        memory[4:8] = uid[3:7]
        memory[8] = uid[3] ^ uid[4] ^ uid[5] ^ uid[6]
    start = (page * 4) % len(memory)
    return bytes((memory + memory)[start:start + 16])


class Chip:
    def __init__(self, uids, faults=None, slow=0.5, clock=time.monotonic, log=None):
        self.field = collections.deque(uids)
        self.faults = dict(faults or {})
        self.slow = slow
        self.clock = clock
        self.log = log or (lambda text: None)
        self.asleep = True
        self.polls = 0
        self.retries = 0xFF            # MxRtyPassiveActivation at power-on
        self.selected = None
        self.out = collections.deque()  # [due, bytes, on_delivered]
        self._last = None
        self._in = b""
        self._held = False             # a stall: host frames wait until its answers are out

    # -- host to chip --------------------------------------------------------

    def wake(self):
        if self.asleep:
            self.log("wake-up")
        self.asleep = False

    def receive(self, data):
        """Bytes from the host. Frames with a bad LCS or DCS, or not for the
        chip (TFI other than D4), are ignored, as the chip ignores them."""
        buf = self._in + bytes(data)
        while not self._held:
            i = buf.find(b"\x00\xff")
            if i < 0:
                buf = buf[-1:] if buf.endswith(b"\x00") else b""
                break
            if len(buf) < i + 4:
                buf = buf[i:]
                break
            size, lcs = buf[i + 2], buf[i + 3]
            if size == 0 and lcs == 0xFF:
                buf = buf[i + 4:]
                if self.out:
                    self.log("ACK from host: command aborted")
                self.out.clear()
                continue
            if size == 0xFF and lcs == 0:
                buf = buf[i + 4:]
                if self._last is not None:
                    self.log("NACK from host: reply sent again")
                    self.out.append([self.clock(), self._last, None])
                continue
            if (size + lcs) & 0xFF:
                self.log("host frame with a bad LCS ignored")
                buf = buf[i + 2:]
                continue
            if len(buf) < i + 5 + size:
                buf = buf[i:]
                break
            body = buf[i + 4:i + 4 + size]
            dcs = buf[i + 4 + size]
            buf = buf[i + 5 + size:]
            if (sum(body) + dcs) & 0xFF or size < 2 or body[0] != 0xD4:
                self.log("host frame with a bad DCS or TFI ignored")
                continue
            self._command(body[1], body[2:])
        self._in = buf

    # -- chip to host --------------------------------------------------------

    def next_due(self):
        """Seconds until the next frame is due, or None when nothing is queued."""
        if not self.out:
            return None
        return max(0.0, self.out[0][0] - self.clock())

    def ready(self):
        return bool(self.out) and self.out[0][0] <= self.clock()

    def take(self):
        """The next due frame (bytes), marked delivered; b"" when none is due."""
        if not self.ready():
            return b""
        _due, data, delivered = self.out.popleft()
        if delivered:
            delivered()
        if self._held and not self.out:
            self._held = False
            self.receive(b"")   # the host frames that came in during the stall
        return data

    # -- commands ------------------------------------------------------------

    def _send(self, data, delay=0.0, delivered=None):
        self.out.append([self.clock() + delay, data, delivered])

    def _reply(self, data, delay=0.0, delivered=None):
        self._last = data
        self._send(data, delay, delivered)

    def _command(self, command, params):
        self.out.clear()   # a new command supersedes one still being answered
        fault = None
        if command == 0x4A:
            self.polls += 1
            fault = self.faults.get(self.polls)
            if fault:
                self.log("poll %d: fault %s" % (self.polls, fault))
        if fault == "nack":
            self._send(NACK)
            return
        self._send(GARBAGE + ACK if fault == "garbage" else ACK, self.slow if fault == "stall" else 0.0)
        self._held = fault == "stall"
        if command == 0x02:
            self._reply(reply_frame(command, bytes([IC, VER, REV, SUPPORT])))
        elif command == 0x14:
            if len(params) < 1 or not 1 <= params[0] <= 4:
                self._reply(ERROR)
            else:
                self._reply(reply_frame(command))
        elif command == 0x32:
            if len(params) >= 4 and params[0] == 0x05:
                self.retries = params[3]
            self._reply(reply_frame(command))
        elif command == 0x4A:
            self._list(params, fault)
        elif command == 0x40:
            self._exchange(params)
        else:
            self.log("command 0x%02x not supported: error frame" % command)
            self._reply(ERROR)

    def _list(self, params, fault):
        if len(params) < 2 or params[0] not in (1, 2) or params[1] != 0x00:
            self.log("InListPassiveTarget %s: only 1-2 targets at 106 kbps type A" % params.hex())
            self._reply(ERROR)
            return
        if fault == "error":
            self._reply(ERROR)
            return
        cards = 0 if fault == "notarget" else 1
        if fault == "two" and params[0] == 2:
            cards = 2
        cards = min(cards, len(self.field))
        if cards == 0:
            self.selected = None
            if self.retries != 0xFF:
                self._reply(reply_frame(0x4A, b"\x00"))
            return
        found = [self.field[k] for k in range(cards)]
        data = bytes([cards]) + b"".join(_target(k + 1, uid) for k, uid in enumerate(found))
        frame = bytearray(reply_frame(0x4A, data))
        delivered = lambda: self._delivered(found)   # noqa: E731
        if fault == "lcs":
            frame[4] ^= 0x01
            delivered = None
        elif fault == "dcs":
            frame[-2] ^= 0x01
            delivered = None
        self._reply((GARBAGE if fault == "garbage" else b"") + bytes(frame),
                    self.slow if fault in ("slow", "stall") else 0.0, delivered)

    def _delivered(self, found):
        for _ in found:
            self.field.popleft()
        self.selected = found[0]
        self.log("card %s read" % " + ".join(uid.hex().upper() for uid in found))

    def _exchange(self, params):
        # Enough InDataExchange for an NTAG READ: status 0 and four pages, or
        # status 0x01 (the target did not answer) when no card is selected.
        if self.selected is None or len(params) < 2 or params[0] != 1:
            self._reply(reply_frame(0x40, b"\x01"))
        elif params[1] == 0x30 and len(params) >= 3:
            self._reply(reply_frame(0x40, b"\x00" + _ntag_pages(self.selected, params[2])))
        else:
            self._reply(reply_frame(0x40, b"\x00"))


# -- HSU on a pty --------------------------------------------------------------

def serve_hsu(chip, master, stop=None):
    """Answer on the pty's master side until ``stop()`` is true (forever when
    None). Bytes that arrive while the chip sleeps are dropped up to and
    including the 0x55 that wakes it."""
    while stop is None or not stop():
        data = b""
        while chip.ready():
            data += chip.take()
        if data:
            os.write(master, data)
        due = chip.next_due()
        timeout = 0.05 if due is None else min(due, 0.05)
        readable, _, _ = select.select([master], [], [], timeout)
        if not readable:
            continue
        data = os.read(master, 4096)
        if chip.asleep:
            at = data.find(bytes([WAKE]))
            if at < 0:
                continue
            chip.wake()
            data = data[at + 1:]
        chip.receive(data)


# -- I2C and SPI fakes ----------------------------------------------------------

class FakeI2C:
    """machine.I2C's ``writeto``/``readfrom_into`` with the chip at 0x24."""

    def __init__(self, chip, address=I2C_ADDRESS):
        self.chip = chip
        self.address = address

    def _check(self, addr):
        if addr != self.address:
            raise OSError(19, "no device at I2C address 0x%02x" % addr)   # ENODEV, as machine.I2C
        self.chip.wake()   # the address match wakes the chip

    def writeto(self, addr, buf, stop=True):
        self._check(addr)
        self.chip.receive(bytes(buf))
        return len(buf)

    def readfrom_into(self, addr, buf, stop=True):
        self._check(addr)
        if len(buf) == 1 or not self.chip.ready():
            buf[0] = 0x01 if self.chip.ready() else 0x00
            for i in range(1, len(buf)):
                buf[i] = 0
            return
        data = b"\x01" + self.chip.take()
        _fill(buf, data)


class FakeSPI:
    """An LSB-first machine.SPI (``write``, ``readinto``) wired to the chip,
    and ``cs``, its chip-select pin (``value(v)``)."""

    def __init__(self, chip):
        self.chip = chip
        self.cs = _Pin(self._select)
        self._op = None
        self._written = b""

    def _select(self, low):
        if low:
            self.chip.wake()   # chip select falling wakes the chip
            self._op = None
            self._written = b""
        elif self._op == 0x01:
            self.chip.receive(self._written)

    def write(self, buf):
        if self.cs.level:
            return   # not selected: the chip ignores the clock
        data = bytes(buf)
        if self._op is None:
            self._op, data = data[0], data[1:]
        if self._op == 0x01:
            self._written += data

    def readinto(self, buf, write=0x00):
        if self.cs.level or self._op is None:
            _fill(buf, b"")
        elif self._op == 0x02:
            _fill(buf, b"\x01" if self.chip.ready() else b"\x00")
        elif self._op == 0x03:
            _fill(buf, self.chip.take())
            self._op = 0   # one frame per data read
        else:
            _fill(buf, b"")


class _Pin:
    def __init__(self, changed):
        self.level = 1
        self._changed = changed

    def value(self, v=None):
        if v is None:
            return self.level
        v = 1 if v else 0
        if v != self.level:
            self.level = v
            self._changed(v == 0)


def _fill(buf, data):
    for i in range(len(buf)):
        buf[i] = data[i] if i < len(data) else 0


# -- `shoe sim pn532` ------------------------------------------------------------

def add_arguments(parser):
    parser.add_argument("--uids", required=True,
                        help="file of card UIDs, hex, one per line, in the order they pass the antenna")
    parser.add_argument("--faults", default="",
                        help="N:kind,... fault on the Nth InListPassiveTarget; kinds: " + ", ".join(FAULTS))
    parser.add_argument("--slow", type=argtypes.seconds(), default=0.5,
                        help="seconds a 'slow' reply is late (default 0.5, past the driver's 0.1 s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each event on stderr")


def run(args):
    try:
        uids = read_uids(args.uids)
        faults = parse_faults(args.faults)
    except (OSError, ValueError) as exc:
        print("shoe sim pn532: %s" % exc, file=sys.stderr)
        return 2
    log = None
    if args.verbose:
        def log(text):
            print("pn532: " + text, file=sys.stderr, flush=True)
    chip = Chip(uids, faults, slow=args.slow, log=log)
    master, slave, path = ptys.open_raw()
    stop_on_sigterm()
    print(path, flush=True)
    try:
        serve_hsu(chip, master)
    except (Stop, KeyboardInterrupt):
        return 0
    finally:
        os.close(master)
        os.close(slave)
    return 0
