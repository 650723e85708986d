"""Bring-up of a real shuffler controller (RP2040 or ESP32-S3, boards.toml
``[shuffler.*]``) on MicroPython's machine module.

The link, the intake reader, the back sensor, the watchdog and the key are
the shoe's (boards.machine_board.MachineBoard's helpers, reused as they
are); what is the shuffler's own is built here from board_config: the two
steppers (step/dir/enable), the five inputs, the three outputs and the
status LEDs. Inputs are wired to GND with the internal pull-ups, so the pins
read 0 when active; ``Active`` turns that into the 1 = active the drivers
expect (the door switch is normally closed, so "active" is "shut"). The
entropy source is the port's ``os.urandom`` (entropy.BoardSource); on the
ESP32-S3 it is a true RNG only while the RF subsystem or the bootloader's
SAR ADC source is on, so the bring-up turns the radio on (WLAN active, not
connected) before the Decider is made.
"""

import time

from machine import WDT, Pin

from boards import machine_board as _mb
from shuffler import door as _door
from shuffler import entropy, stepper
from shuffler import geometry as G

STATE_FILE = "custody.json"


class Active:
    """An input wired to GND with a pull-up: value() is 1 when active."""

    def __init__(self, pin):
        self.pin = Pin(pin, Pin.IN, Pin.PULL_UP)

    def value(self, v=None):
        return 0 if self.pin.value() else 1


class Hw:
    pass


class Board(_mb.MachineBoard):
    _sealing = None   # the vault's key, once key() derived it

    def sealing_key(self):
        """The vault's key (shuffler/vault.py), derived by the secure
        element at boot (key()); None on a board without the chip or its
        vault peer: a released order is then kept in RAM only and a power
        cut while it is in the shoe loses its reveal (custody.lost)."""
        return self._sealing

    def key(self):
        """The link key (MachineBoard.key: derived by the chip), and first,
        while the boot-only derivation module is loaded, the vault's key."""
        if not self._key and self.secure_element is not None:
            from drivers import atecc608_link
            self._sealing = atecc608_link.derive_from(self.secure_element, atecc608_link.VAULT_PEER_FILE,
                                                      atecc608_link.VAULT_LABEL)
        return _mb.MachineBoard.key(self)

    def __init__(self, config):
        self.journal_path = _mb.JOURNAL_FILE
        self.cardset_path = _mb.CARDSET_FILE
        self.state_path = STATE_FILE
        self.ticks_ms = time.ticks_ms
        self.ticks_diff = time.ticks_diff
        self.service = False
        self._wdt = WDT(timeout=self.watchdog_ms(config.WDT_MS))
        self._key = b""
        self._one = bytearray(1)
        self._make_link(config.LINK)
        hw = Hw()
        hw.delay_us = time.sleep_us
        e, f = config.ELEVATOR, config.FEED
        hw.elevator = stepper.Stepper(Pin(e["step"], Pin.OUT, value=0), Pin(e["dir"], Pin.OUT, value=0),
                                      Pin(e["enable"], Pin.OUT, value=1), time.sleep_us, G.ELEVATOR_US)
        hw.feed = stepper.Stepper(Pin(f["step"], Pin.OUT, value=0), Pin(f["dir"], Pin.OUT, value=0),
                                  Pin(f["enable"], Pin.OUT, value=1), time.sleep_us, G.FEED_US)
        i, o = config.INPUTS, config.OUTPUTS
        hw.present = Active(i["card_present"])
        hw.throat = Active(i["throat"])
        hw.gap = Active(i["gap"])
        hw.home = Active(i["home"])
        hw.eject = Pin(o["eject"], Pin.OUT, value=0)
        hw.route = Pin(o["route"], Pin.OUT, value=0)
        hw.reader = self._make_reader(config.READER)
        hw.sensor = self._make_sensor(config.SENSOR) if config.SENSOR else None
        self.hw = hw
        # The secure element, under the name boards.toml renders and
        # machine_board.MachineBoard reads (SECURE_ELEMENT): it derives the
        # link key (MachineBoard.key), signs checkpoints, and its random
        # source is mixed with the MCU's (entropy()).
        secure = getattr(config, "SECURE_ELEMENT", None)
        self.secure_element = self._make_secure(secure) if secure else None
        self.door = _door.Door(Active(i["door"]), Pin(o["lock"], Pin.OUT, value=0))
        self._leds = [Pin(config.SHUFFLER_LEDS[k], Pin.OUT, value=0) for k in ("ready", "sealed", "fault")]
        self._port = config.PORT

    def entropy(self):
        if self._port == "esp32":
            try:
                import network
                network.WLAN(network.STA_IF).active(True)  # esp_random() is a TRNG only with RF on
            except Exception:
                pass
        se = getattr(self, "secure_element", None)
        if se is None:
            return entropy.BoardSource()
        # Both sources, each health-tested on its own, conditioned together.
        from shuffler import mix
        return mix.Mixed(entropy.BoardSource(), mix.ChipSource(se))

    def operator_line(self):
        return None  # the operator panel's buttons: wired on a later board revision

    def delivered(self):
        pass

    def idle(self):
        time.sleep_ms(1)

    def lights(self, ready, sealed, fault):
        for pin, on in zip(self._leds, (ready, sealed, fault)):
            pin.value(1 if on else 0)
