"""The shuffler's emulator board: the firmware's parts backed by the physical
model (sim_mechanism.py) in the unix VM, the host link on a pty.

Everything the firmware drives or reads is a pin of the model, the intake
reader sees the tag of the card the model has at the throat, and the back
sensor is the TCS34725 driver on the register-level simulator the shoe's
emulator uses, shown the surface of that card. ``delay_us`` advances the
model's clock instead of sleeping, so a batch takes the VM's time, not the
machine's; the model's clock is the machine's time.

The *operator channel* (a second pty) carries the world and the buttons,
one line each, answered by one line ``ok ...`` or ``err ...``:

    card UIDHEX back_a|back_b|face   a card at the bottom of the intake tray
    load A|B, release, clear         the operator's buttons (main.py acts on them)
    door open|close                  the door (forced open: the lock does not stop it)
    double, slip N, jam [AT]         arm a fault for the next pick
    hold N                           once N more cards went onto the stack the machine stops for
                                     HOLD_MS (the line ``held S`` says so, S the cards on the stack):
                                     a power cut at a known card
    stick present|throat|gap|home L  that sensor reads L (0 or 1) whatever the machine does: a broken one
    entropy stuck|good               the entropy source sticks (health tests must catch it)
    take                             the oldest stack at the output: ``out UIDHEX COLOUR`` lines, then ok
    takeall                          everything inside (after a fault): ``out`` lines, then ok
    state                            ``ok clock_us=... tray=... stack=... output=...`` (the model, for tests)

The flash is the directory holding board_config.py: the journal, the
custody state file, the key and the card set live there, so killing the VM
is a power cut (the model, being the machine, is rebuilt empty: an operator
takes the cards out after a power cut anyway). The secure element is the
simulated ATECC608B beyond a pty I2C bus; the entropy stays the seeded
source here (reproducible shuffles for the tests), while a real board mixes
the chip's random source with the MCU's (board_machine.py).
"""

import binascii
import gc
import time

from emulator import Watchdog, on_flash
from emulator.ptyuart import PtyUART
from emulator.sim_tcs34725 import SimTCS34725
from drivers.tcs34725 import TCS34725
from shuffler import door as _door
from shuffler import entropy
from shuffler import geometry as G
from emulator import sim_mechanism
from shuffler import stepper

LINE_MAX = 128
HOLD_MS = 60000   # bounded: a hold no test cuts short ends, and the firmware carries on


class Reader:
    """The intake reader's driver interface (``poll(buf)`` -> tag length)."""

    def __init__(self, model):
        self.model = model

    def poll(self, buf):
        return self.model.tag_in_field(buf)


class Entropy:
    """The seeded emulation source, which the operator channel can make stick."""

    def __init__(self, seed):
        self.good = entropy.SeededSource(seed)
        self.stuck = False

    def read(self, buf):
        if self.stuck:
            for i in range(len(buf)):
                buf[i] = 0x55
            return buf
        return self.good.read(buf)


class Hw:
    pass


def parts(m, sim):
    """(model, hw, door): the firmware's parts on the model's pins."""
    hw = Hw()
    hw.delay_us = m.delay_us
    hw.elevator = stepper.Stepper(m.elevator_step, m.elevator_dir, m.elevator_enable,
                                  m.delay_us, G.ELEVATOR_US)
    hw.feed = stepper.Stepper(m.feed_step, m.feed_dir, m.feed_enable, m.delay_us, G.FEED_US)
    hw.present = m.present
    hw.throat = m.throat
    hw.gap = m.gap
    hw.home = m.home
    hw.eject = m.eject
    hw.route = m.route
    hw.reader = Reader(m)
    hw.sensor = TCS34725(sim) if sim is not None else None
    return m, hw, _door.Door(m.door, m.lock)


class ModelBoard:
    """What the device (shuffler/device.py) needs of a board, on the model
    alone: no link, no pins, the seeded entropy. The benches, the heap
    probe and the channel study run whole batches on it."""

    def __init__(self, seed, state_path):
        sim = SimTCS34725()
        self.model, self.hw, self.door = parts(sim_mechanism.Mechanism(sim.show), sim)
        self.state_path = state_path
        self._seed = seed

    def entropy(self):
        return Entropy(self._seed)

    def delivered(self):
        pass


class Board:
    def __init__(self, config):
        on_flash(self, config)
        self.state_path = self._here + "/custody.json"
        # Its parts as a board builds them (boards/parts.py); ABSENT names
        # the ones `shoe shuffler emulate --without` takes away.
        from boards import parts as _parts
        absent = getattr(config, "ABSENT", ())
        p = _parts.Parts(absent)
        if "reader" in absent:
            p.fault(_parts.READER, "no answer from the intake reader")
        # The secure element on the board's I2C bus, as boards.toml renders
        # it for every board (SECURE_ELEMENT): here a pty to the simulated
        # ATECC608B in the emulator's process (emulator/ptyi2c.py), under the
        # firmware's own driver, waiting margin_ms as a simulator needs
        # (host_tools/sim/chipwait.py). It derives the link key, signs checkpoints.
        self.secure_element = None
        secure = getattr(config, "SECURE_ELEMENT", None)
        if secure and secure.get("device"):
            from emulator.ptyi2c import PtyI2C
            from drivers.atecc608 import ATECC608
            self.secure_element = p.build(_parts.SECURE, _parts.woken, lambda c: ATECC608(PtyI2C(c["device"]),
                                                                                           c.get("address", 0x60),
                                                                                           c.get("margin_ms", 50)),
                                          secure)
        self._sealing = None   # the vault's key: derived by the chip (key())
        self.ticks_ms = time.ticks_ms
        self.ticks_diff = time.ticks_diff
        self._link = PtyUART(config.LINK["device"], config.LINK.get("baud", 115200))
        self._op = PtyUART(config.OPERATOR["device"])
        self._one = bytearray(1)
        self._line = bytearray(LINE_MAX)
        self._n = 0
        self._sim = SimTCS34725()
        self._sim.fail = "sensor" in absent   # nothing answers at 0x29
        sensor = p.build(_parts.SENSOR, TCS34725, self._sim)
        self.model, self.hw, self.door = parts(sim_mechanism.Mechanism(self._sim.show), None)
        self.model.on_hold = self._held
        self.hw.sensor = sensor
        if "reader" in absent:
            self.hw.reader = None
        # Kept as two lines of text; the halt refuses shuffling, not dealing
        # (cut from parts.HALT, "... dealing refused: ").
        self.halt, self.degraded = p.halt, p.degraded()
        if p.halt is not None:
            self.halt = p.halt[:24] + "shuffling" + p.halt[31:]
        from lazy import unload
        unload("boards.parts")
        if getattr(config, "STALL", False):
            # Tests: the elevator's motor is dead from power-on, so homing
            # at boot must fail (`shoe acceptance`'s broken stepper).
            self.model.stall()
        self._entropy = Entropy(getattr(config, "SEED", 0))
        self.leds = (False, False, False)
        self._pairing = None
        self._watchdog = Watchdog(config.WDT_MS)
        # HEAP_PROBE (tests, `shoe shuffler emulate --heap-probe`): collect at
        # every pass of the main loop and keep the largest live heap seen,
        # which `state` reports (tests/e2e/test_shuffler_heap.py).
        self._probe = getattr(config, "HEAP_PROBE", False)
        self.heap_peak = 0

    # -- the host link --------------------------------------------------------

    def link_read(self, buf):
        return self._link.readinto(buf) or 0

    def link_write(self, buf, n):
        self._link.write(memoryview(buf)[:n])

    def key(self):
        """The link key: derived by the secure element from the peer on the
        flash (docs/security.md, "The key at rest"), else shoe_key.bin; and
        first, while the boot-only derivation module is loaded, the vault's
        key (sealing_key), as board_machine.py does."""
        if not self._key and self.secure_element is not None:
            from drivers.atecc608 import PEER_FILE
            from drivers import atecc608_link
            here = self._here + "/"
            self._sealing = atecc608_link.derive_from(self.secure_element, here + atecc608_link.VAULT_PEER_FILE,
                                                      atecc608_link.VAULT_LABEL)
            self._key = atecc608_link.link_key_from(self.secure_element, here + PEER_FILE) or b""
            from lazy import unload
            unload("drivers.atecc608_link")   # boot-only: the keys are derived once
        if not self._key:
            with open(self._key_path, "rb") as f:
                self._key = f.read()
        return self._key

    def entropy(self):
        return self._entropy

    def pairing(self):
        """(the paired device's id, the pairing secret) or None: ECDH of
        the chip's slot-3 key with the peer's pairing key on the flash,
        once (link/order.py board_pairing)."""
        from link import order
        return order.board_pairing(self, self._here + "/")

    def sealing_key(self):
        """The vault's key, derived by the chip at boot (key()); None
        without a chip: a released order then lives in RAM only."""
        return self._sealing

    # -- the operator channel -------------------------------------------------

    def _reply(self, text):
        self._op.write(text.encode() + b"\n")

    def operator_line(self):
        """A button line for main.py (str), after handling any world lines;
        None when no whole button line has arrived."""
        while self._op.readinto(self._one, 1):
            b = self._one[0]
            if b == 0x0A:
                text = bytes(self._line[:self._n]).decode().strip()
                self._n = 0
                button = self._world(text)
                if button is not None:
                    return button
            elif b != 0x0D and self._n < LINE_MAX:
                self._line[self._n] = b
                self._n += 1
        return None

    def _world(self, text):
        words = text.split()
        m = self.model
        if not words:
            return None
        w = words[0]
        try:
            if w == "card" and len(words) == 3:
                m.put(binascii.unhexlify(words[1]), words[2])
            elif w == "door" and len(words) == 2:
                m.open_door() if words[1] == "open" else m.close_door()
            elif w == "double":
                m.double()
            elif w == "slip":
                m.slip(int(words[1]))
            elif w == "jam":
                m.jam(int(words[1]) if len(words) > 1 else 400)
            elif w == "hold" and len(words) == 2:
                m.hold(int(words[1]))
            elif w == "stick" and len(words) == 3 and words[1] in ("present", "throat", "gap", "home"):
                level = int(words[2]) & 1
                getattr(m, words[1])._read = lambda: level
            elif w == "entropy":
                self._entropy.stuck = words[1] == "stuck"
            elif w == "take" or w == "takeall":
                for uid, colour in (m.take_output() if w == "take" else m.take_all()):
                    self._reply("out %s %s" % (binascii.hexlify(uid).decode(), colour))
            elif w == "state":
                self._reply("ok clock_us=%d tray=%d stack=%d output=%d path=%d elevator_steps=%d "
                            "feed_steps=%d platform=%d crashed=%d led_ready=%d led_sealed=%d led_fault=%d "
                            "heap_peak=%d heap_total=%d"
                            % ((m.now_us, m.tray_n, m.stack_n, len(m.output), m.path_n,
                                m.steps[0], m.steps[1], m.platform, m.crashed) + tuple(int(x) for x in self.leds)
                               + (self.heap_peak, gc.mem_alloc() + gc.mem_free())))
                return None
            elif w in ("load", "release", "clear"):
                self._reply("ok " + text)
                return text
            else:
                self._reply("err unknown line %r" % text)
                return None
        except (ValueError, IndexError) as e:
            self._reply("err %r: %s" % (text, e))
            return None
        self._reply("ok " + text)
        return None

    def _held(self, stacked):
        """The model reached a hold: say so, then stand still (the firmware
        is inside a motor step, as if the motors had stopped)."""
        self._reply("held %d" % stacked)
        time.sleep_ms(HOLD_MS)

    def delivered(self):
        """A stack went out of the output (to the shoe or to the operator)."""
        self._reply("delivered %d" % len(self.model.output))

    # -- watchdog and idle ------------------------------------------------------

    def feed(self):
        if self._probe:
            gc.collect()
            a = gc.mem_alloc()
            if a > self.heap_peak:
                self.heap_peak = a
        self._watchdog.feed()

    def idle(self):
        time.sleep_ms(1)

    def lights(self, ready, sealed, fault):
        self.leds = (ready, sealed, fault)  # no LEDs on a PC: the pit page shows the same from the events
