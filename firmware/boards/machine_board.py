"""The board contract (docs/design.md) on a real MCU, through ``machine`` only.

Everything here is the same on the RP2040 and the ESP32-S3; the port modules
subclass it for what differs (the RP2040's watchdog limit). Pins and buses
come from ``board_config``, which is generated from boards.toml, so this file
holds no pin numbers.

Unlike the rest of firmware/, this module and the port modules cannot run
under CPython, and in the unix VM only against a fake ``machine``
(tests/e2e/test_boards_bringup.py); they are also type-checked against the
published stubs of each port (tests/e2e/test_typecheck.py).

Hot-path rules apply: ``buttons()``, ``empty()``, ``lights()``, ``link_read``
and ``link_write`` run every loop and allocate nothing.
"""

import sys

import micropython
import select
from machine import I2C, SPI, UART, WDT, Pin
from micropython import const
from time import ticks_diff, ticks_ms

TYPE_CHECKING = False
if TYPE_CHECKING:  # seen by mypy only: MicroPython has no typing module
    from typing import Any

KEY_FILE = "shoe_key.bin"
KEY_BYTES = const(32)
JOURNAL_FILE = "journal.bin"
CARDSET_FILE = "cardset.bin"  # written by `shoe deploy --cardset` (docs/cardset.md)
# A microswitch bounces for a few ms; a dealer's press lasts over 50 ms.
_DEBOUNCE_MS = const(20)
# UART receive buffer: several whole link frames from the pit PC, or many
# reader replies, so nothing is lost between two passes of the main loop.
_UART_RXBUF = const(1024)

# Debounced inputs, in the bit order of buttons(); the empty switch is last.
_INPUTS = ("no_more_bets", "exposed", "new_shoe")
_EMPTY = const(3)
_LEDS = ("player", "banker", "stop")
# The new-shoe button's bit: held at power-on it selects service mode.
_NEW_SHOE = const(2)


class ConfigError(Exception):
    """board_config asks for something this board cannot build."""


class MachineBoard:
    def __init__(self, config):
        # The shoe's parts, each built through boards/parts.py: an absent or
        # faulty one is None and named in parts.faults, never an exception
        # out of here (parts.py says which ones stop the dealing). Imported
        # here, not at the top: the shuffler's board shares this module's
        # buses but not the shoe's parts, and pays no heap for them.
        from boards import parts as _parts
        self.journal_path = JOURNAL_FILE
        self.cardset_path = CARDSET_FILE
        self.ticks_ms = ticks_ms
        self.ticks_diff = ticks_diff
        self.parts = _parts.Parts()
        self._inputs = []
        self._raw = bytearray(0)
        self._state = bytearray(0)
        self._since = []  # type: list
        self._pressed = 0
        self.service = False
        self.parts.build(_parts.BUTTONS, _parts.inputs, self, config, Pin, _INPUTS, _NEW_SHOE)
        self._leds = []
        for name in _LEDS:
            self._leds.append(Pin(config.LEDS[name], Pin.OUT, value=0))
        self._gate = None
        if config.GATE:
            # Energised = plunger across the card path. Off at boot, so a shoe
            # whose controller is dead or in reset never traps the cards.
            self._gate = self.parts.build(_parts.GATE, _parts.output, Pin, config.GATE["pin"])
        self._wdt = None
        self.wdt_ms = config.WDT_MS
        if not self.service:
            self._wdt = WDT(timeout=self.watchdog_ms(config.WDT_MS))
        self._key = b""
        self._one = bytearray(1)
        self._make_link(config.LINK)
        # The reader and the chip answer once at boot (a PN532's begin, the
        # chip's wake): one that does not is found here, not at the first card.
        self.reader = self.parts.build(_parts.READER, _parts.started, self._make_reader, config.READER)
        self.feed()
        self.back_sensor = None
        if config.SENSOR:
            self.back_sensor = self.parts.build(_parts.SENSOR, self._make_sensor, config.SENSOR)
        self.secure_element = None
        secure = getattr(config, "SECURE_ELEMENT", None)
        if secure:
            self.secure_element = self.parts.build(_parts.SECURE, _parts.woken, self._make_secure, secure)
        self.feed()

    def watchdog_ms(self, ms):
        return ms

    # -- buses -------------------------------------------------------------

    def _uart(self, cfg):
        # timeout=0: reads return what has arrived; drivers bound their own waits.
        return UART(cfg["id"], cfg["baud"], tx=Pin(cfg["tx"]), rx=Pin(cfg["rx"]),
                    timeout=0, rxbuf=_UART_RXBUF)

    def _i2c(self, cfg):
        """The one I2C object of bus ``cfg["id"]``, made the first time a
        part asks for it and shared by every part on it: on the rp2 port
        ``I2C(0, ...)`` re-clocks the one peripheral, so a second
        construction would silently change the first part's frequency.
        boards.toml gives every part on a bus the same pins and frequency
        (host_tools/boards validates it); a part asking otherwise is a
        configuration error, not a quiet re-clock."""
        buses = getattr(self, "_i2c_buses", None)  # type: Any
        if buses is None:
            buses = self._i2c_buses = {}
        want = (cfg["scl"], cfg["sda"], cfg.get("freq", 100000))
        held = buses.get(cfg["id"])
        if held is not None:
            if held[0] != want:
                raise ConfigError("I2C%d is already scl=%d sda=%d at %d Hz; a part asks for scl=%d sda=%d at %d Hz"
                                  % ((cfg["id"],) + held[0] + want))
            return held[1]
        bus = I2C(cfg["id"], scl=Pin(want[0]), sda=Pin(want[1]), freq=want[2])
        buses[cfg["id"]] = (want, bus)
        return bus

    def _spi(self, cfg):
        # The PN532 shifts LSB first (its SPI mode 0).
        return SPI(cfg["id"], cfg["baud"], polarity=0, phase=0, firstbit=SPI.LSB,
                   sck=Pin(cfg["sck"]), mosi=Pin(cfg["mosi"]), miso=Pin(cfg["miso"]))

    def _make_reader(self, cfg):
        kind, bus = cfg["kind"], cfg["bus"]
        if kind == "gm65":
            from drivers.gm65 import GM65
            return GM65(self._uart(cfg))
        if kind == "pn532" and bus == "uart":
            from drivers.pn532_uart import PN532_UART
            return PN532_UART(self._uart(cfg))
        if kind == "pn532" and bus == "i2c":
            from drivers.pn532_i2c import PN532_I2C
            return PN532_I2C(self._i2c(cfg))
        if kind == "pn532" and bus == "spi":
            from drivers.pn532_spi import PN532_SPI
            return PN532_SPI(self._spi(cfg), Pin(cfg["cs"], Pin.OUT, value=1))
        raise ConfigError("no driver for a %s reader on %s" % (kind, bus))

    def _make_sensor(self, cfg):
        if cfg["kind"] != "tcs34725" or cfg["bus"] != "i2c":
            raise ConfigError("no driver for a %s back sensor on %s" % (cfg["kind"], cfg["bus"]))
        from drivers.tcs34725 import TCS34725
        # Calibrated reference colours for the card stock, when boards.toml has them.
        return TCS34725(self._i2c(cfg), cfg.get("calibration"))

    def _make_secure(self, cfg):
        if cfg["kind"] not in ("atecc608b", "atecc608") or cfg["bus"] != "i2c":
            raise ConfigError("no driver for a %s secure element on %s" % (cfg["kind"], cfg["bus"]))
        from drivers.atecc608 import ATECC608
        # On the bus as boards.toml configures it: at most 100 kHz there, so
        # the address byte 0x00 holds SDA low past tWLO (60 us) and wakes the
        # chip (the validator refuses a faster bus for it).
        return ATECC608(self._i2c(cfg), cfg.get("address", 0x60))

    # -- host link ---------------------------------------------------------

    def _make_link(self, cfg):
        kind = cfg["kind"]
        if kind == "uart":
            uart = self._uart(cfg)
            self._link_in = uart
            self._link_out = uart
            self._poll = None
        elif kind == "usb_cdc":
            self._link_in = sys.stdin.buffer
            self._link_out = sys.stdout.buffer
            self._poll = select.poll()
            self._poll.register(sys.stdin, select.POLLIN)
            if not self.service:
                # The USB REPL would turn a 0x03 byte from the pit PC into
                # KeyboardInterrupt and stop the shoe.
                micropython.kbd_intr(-1)
        else:
            raise ConfigError("link kind %r is not available on a real board" % kind)
        # MicroPython streams take write(buf, n): writes buf[:n] without a slice.
        self._write = self._link_out.write  # type: Any
        self._readinto = self._link_in.readinto  # type: Any

    def link_read(self, buf):
        """Bytes that have already arrived, up to len(buf); never waits."""
        if self._poll is None:
            return self._readinto(buf) or 0
        n = 0
        size = len(buf)
        while n < size:
            ready = False
            for _ in self._poll.ipoll(0):
                ready = True
            if not ready:
                break
            # The USB CDC stream only promises one byte per readiness.
            if not self._readinto(self._one, 1):
                break
            buf[n] = self._one[0]
            n += 1
        return n

    def link_write(self, buf, n):
        self._write(buf, n)

    # -- dealer I/O ----------------------------------------------------------

    def _sample(self):
        now = ticks_ms()
        for i in range(len(self._inputs)):
            level = 1 if self._inputs[i].value() == 0 else 0
            if level != self._raw[i]:
                self._raw[i] = level
                self._since[i] = now
            elif level != self._state[i] and ticks_diff(now, self._since[i]) >= _DEBOUNCE_MS:
                self._state[i] = level
                if level and i != _EMPTY:
                    self._pressed |= 1 << i

    def buttons(self):
        """Buttons pressed since the last call (bit 0 no more bets, 1 exposed, 2 new shoe)."""
        self._sample()
        mask = self._pressed
        self._pressed = 0
        return mask

    def empty(self):
        self._sample()
        return len(self._state) > _EMPTY and self._state[_EMPTY] == 1

    def lights(self, mask):
        for i in range(len(self._leds)):
            self._leds[i].value((mask >> i) & 1)

    def gate(self, open):
        if self._gate is not None:
            self._gate.value(0 if open else 1)

    def leave_service(self):
        """Service mode refused (link/core.py: a shoe is in play): the
        watchdog starts and Ctrl-C on the USB link stops working, as in a
        power-on without NEW SHOE held."""
        if not self.service:
            return
        self.service = False
        self._wdt = WDT(timeout=self.watchdog_ms(self.wdt_ms))
        if self._poll is not None:
            micropython.kbd_intr(-1)

    def feed(self):
        if self._wdt is not None:
            self._wdt.feed()

    def pairing(self):
        """(the paired device's id, the pairing secret) or None: ECDH of
        the chip's slot-3 key with the peer's pairing key on the flash,
        once (link/order.py board_pairing)."""
        from link import order
        return order.board_pairing(self, "")

    def key(self):
        """The per-shoe link key: derived by the secure element when the
        flash holds its peer's public key (link_peer.bin; docs/security.md,
        "The key at rest"), else the one `shoe deploy` wrote to shoe_key.bin."""
        if not self._key and getattr(self, "secure_element", None) is not None:
            from drivers.atecc608 import PEER_FILE
            from drivers import atecc608_link
            self._key = atecc608_link.link_key_from(self.secure_element, PEER_FILE) or b""
            from lazy import unload
            unload("drivers.atecc608_link")   # boot-only: the key is derived once
        if not self._key:
            try:
                with open(KEY_FILE, "rb") as f:
                    key = f.read()
            except OSError:
                raise ConfigError("%s is missing: provision the shoe with `shoe deploy`" % KEY_FILE)
            if len(key) != KEY_BYTES:
                raise ConfigError("%s holds %d bytes, not %d" % (KEY_FILE, len(key), KEY_BYTES))
            self._key = key
        return self._key
