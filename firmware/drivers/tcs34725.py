"""TCS34725 colour sensor used as the shoe's back sensor.

It looks at each card as it leaves the shoe and tells a face (a disclosed
card) from the two back colours of an automatic-shuffler table (Ch 3B). The
decision uses colour shares (each channel's part of R+G+B) rather than raw
counts, so it holds when the LED dims or the card passes a little further
from the window; the three reference colours are calibrated per card stock
and come from the board configuration.

Register map and bit meanings: ams TCS3472 datasheet (DS000390), "Register
Set" and "Command Register".
"""

from drivers import ReaderFault

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from clock import sleep_ms

ADDRESS = const(0x29)

# Command register: bit 7 CMD must be set; bits 6:5 TYPE, 01 = auto-increment
# (so one transaction reads C, R, G, B low/high bytes with the high bytes
# latched together with their low bytes); bits 4:0 the register address.
_CMD = const(0x80)
_AUTO_INC = const(0x20)

_ENABLE = const(0x00)   # bit 0 PON (oscillator), bit 1 AEN (RGBC ADC)
_ATIME = const(0x01)    # integration = 2.4 ms x (256 - ATIME)
_CONTROL = const(0x0F)  # bits 1:0 AGAIN: 0 = 1x, 1 = 4x, 2 = 16x, 3 = 60x
_ID = const(0x12)       # 0x44 TCS34721/TCS34725, 0x4D TCS34723/TCS34727
_STATUS = const(0x13)   # bit 0 AVALID: an integration cycle has completed
_CDATAL = const(0x14)   # CDATAL..BDATAH: 0x14..0x1B, little endian

_PON = const(0x01)
_AEN = const(0x02)
_AVALID = const(0x01)

FACE = const(0)
BACK_A = const(1)
BACK_B = const(2)

# Defaults for a white LED behind the window, to be replaced by calibrated
# figures for the card stock in use (board configuration "calibration",
# same key names in lower case). Shares are per mille of R+G+B.
_DEF_ATIME = const(0xF6)         # 10 cycles = 24 ms: short enough for a card in motion
_DEF_GAIN = const(1)             # 4x
_DEF_MIN_CLEAR = const(200)      # darker than this: no card in front of the window
_DEF_MAX_DISTANCE = const(150)   # farther than this from every reference: no decision
REFERENCES = (
    ("face", (340, 340, 320)),
    ("back_a", (560, 240, 200)),  # e.g. red backs
    ("back_b", (200, 320, 480)),  # e.g. blue backs
)

_NAMES = ("face", "back A", "back B")


class TCS34725:
    def __init__(self, i2c, config=None, address=ADDRESS):
        self._i2c = i2c
        self._addr = address
        self._one = bytearray(1)
        self._raw = bytearray(8)
        cfg = config or {}
        atime = int(cfg.get("atime", _DEF_ATIME))
        gain = int(cfg.get("gain", _DEF_GAIN))
        if not 0 <= atime <= 255 or gain not in (0, 1, 2, 3):
            raise ValueError("tcs34725: atime 0..255 and gain 0..3")
        # Datasheet: maximum count is 1024 per cycle, capped at 65535.
        self.full_scale = min(65535, 1024 * (256 - atime))
        self._min_clear = int(cfg.get("min_clear", _DEF_MIN_CLEAR))
        self._max_distance = int(cfg.get("max_distance", _DEF_MAX_DISTANCE))
        # Reference shares packed as 3 x 3 little-endian 16-bit values, read
        # back by index in classify() so the per-card path allocates nothing.
        ref = bytearray(0)
        for key, default in REFERENCES:
            for share in cfg.get(key, default):
                ref.extend(int(share).to_bytes(2, "little"))
        self._ref = ref
        self.clear = self.red = self.green = self.blue = 0
        ident = self._read(_ID)
        if ident not in (0x44, 0x4D):
            raise ReaderFault("tcs34725: ID register reads 0x%02x at 0x%02x, expected 0x44 or 0x4d"
                              % (ident, address))
        self._write(_ATIME, atime)
        self._write(_CONTROL, gain)
        self._write(_ENABLE, _PON)
        sleep_ms(3)  # datasheet: 2.4 ms oscillator warm-up before AEN
        self._write(_ENABLE, _PON | _AEN)

    def _read(self, reg):
        try:
            self._i2c.readfrom_mem_into(self._addr, _CMD | reg, self._one)
        except OSError as exc:
            raise ReaderFault("tcs34725: no reply at 0x%02x (%s)" % (self._addr, exc))
        return self._one[0]

    def _write(self, reg, value):
        self._one[0] = value
        try:
            self._i2c.writeto_mem(self._addr, _CMD | reg, self._one)
        except OSError as exc:
            raise ReaderFault("tcs34725: no reply at 0x%02x (%s)" % (self._addr, exc))

    def read(self):
        """Latch the last complete integration into clear/red/green/blue."""
        if not self._read(_STATUS) & _AVALID:
            raise ReaderFault("tcs34725: no complete integration yet (AVALID clear)")
        raw = self._raw
        try:
            self._i2c.readfrom_mem_into(self._addr, _CMD | _AUTO_INC | _CDATAL, raw)
        except OSError as exc:
            raise ReaderFault("tcs34725: no reply at 0x%02x (%s)" % (self._addr, exc))
        self.clear = raw[0] | (raw[1] << 8)
        self.red = raw[2] | (raw[3] << 8)
        self.green = raw[4] | (raw[5] << 8)
        self.blue = raw[6] | (raw[7] << 8)

    def classify(self):
        """FACE, BACK_A or BACK_B for the card in front of the window now."""
        self.read()
        total = self.red + self.green + self.blue
        if self.clear < self._min_clear or not total:
            raise ReaderFault("tcs34725: too dark (clear %d < %d): no card at the window"
                              % (self.clear, self._min_clear))
        if self.clear >= self.full_scale:
            raise ReaderFault("tcs34725: saturated (clear %d): lower gain or ATIME" % self.clear)
        r = self.red * 1000 // total
        g = self.green * 1000 // total
        b = self.blue * 1000 // total
        best = -1
        best_d = 0
        ref = self._ref
        for k in range(3):
            at = 6 * k
            d = (abs(r - (ref[at] | ref[at + 1] << 8)) + abs(g - (ref[at + 2] | ref[at + 3] << 8))
                 + abs(b - (ref[at + 4] | ref[at + 5] << 8)))
            if best < 0 or d < best_d:
                best = k
                best_d = d
        if best_d > self._max_distance:
            raise ReaderFault("tcs34725: colour %d/%d/%d per mille is %d from %s, more than %d"
                              % (r, g, b, best_d, _NAMES[best], self._max_distance))
        return best
