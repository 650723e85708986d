"""The emulator board: the board contract (docs/design.md) in the unix VM.

The host link is a pty (``emulator.ptyuart``), so the bridge talks to it with
pyserial exactly as to a shoe on USB. The shoe's "flash" is the directory
holding ``board_config.py``: the journal and ``shoe_key.bin`` live there, so
killing and restarting the VM is a power cut.

GPIO is the one part that cannot exist here, so the dealer's buttons and
the empty sensor are stood in for by a *dealer channel*: a second pty
carrying dealing-script lines in the ``shoe replay`` vocabulary (``bets``,
``exposed``, ``empty``, ``shoe ...``). Those lines become what the GPIO would
report (``buttons()``, ``empty()``), so main.py's own handling of them runs
here too. The channel is read by ``step()``, the pass of its own that
main.py's loop runs for a board that has one, where a board reads its
buttons: no shoe's board has it. The watchdog is a counter that reports on
stderr when the loop starved it (``emulator.Watchdog``).

Cards arrive one of two ways, by ``READER["kind"]``:

- no ``READER["device"]``: card and cover lines on the dealer channel are
  handed to main.py as script lines: the whole shoe without any reader.
- ``READER["kind"]`` ``"pn532"`` or ``"gm65"`` with ``READER["device"]``:
  the real driver on a pty to the wire-level simulator, and the card-set
  file ``cardset.bin`` in the emulator's directory, exactly as on a board.

``SENSOR["kind"] == "tcs34725"`` adds the back sensor, simulated at register
level; the dealer channel's ``sensor face|back_a|back_b`` lines say what it
sees next, and ``sensor stuck`` breaks it: it keeps seeing what it sees now.
``new_shoe`` is the NEW SHOE button (``bets`` and ``exposed`` the others).

The dealer's lights and the gate keep the state main.py last drove; a
``gpio`` line on the dealer channel is answered (after its ACK) with
``gpio LIGHTS GATE``: the light mask and 1 for an open gate, what a
technician looking at the shoe would see (`shoe acceptance`'s tests).

``SECURE_ELEMENT["device"]`` puts the secure element on the board's I2C bus: an
ATECC608B simulated in the host process (it signs with a library no VM
has), the bus's transactions carried over that pty (``emulator.ptyi2c``), and
the firmware's own driver on top, as on a board. ``secure_element`` is the
driver, or None without one.
"""

import select
import time

from boards import parts as _parts
from emulator import Watchdog, on_flash
from emulator.ptyuart import PtyUART

NOR = ".nor"  # beside the journal's path: the NOR flash its ring lives on

LINE_MAX = 128
# idle()'s longest wait, in ms: after a pass that read or wrote nothing.
# The loop's timers are hundreds of ms (link/proto.py), and anything that
# arrives on the link or the dealer channel ends the wait at once.
QUIET_MS = 20
BUTTON_BETS = 1     # bits of buttons() (docs/design.md)
BUTTON_EXPOSED = 2
BUTTON_NEW_SHOE = 4


def _is(line, n, word):
    """``line[:n]`` is exactly ``word``, trailing blanks aside, without a slice."""
    while n and line[n - 1] in (0x20, 0x09):
        n -= 1
    if n != len(word):
        return False
    for i in range(n):
        c = line[i]
        if 0x41 <= c <= 0x5A:
            c |= 0x20   # letters in either case; "_" and digits as they are
        if c != word[i]:
            return False
    return True


def _reader(cfg):
    if "device" not in cfg:
        return None  # no simulator attached: cards come on the dealer channel
    kind = cfg.get("kind")
    if kind == "pn532":
        from drivers.pn532_uart import PN532_UART
        if "ack_ms" in cfg:   # the simulator's latency, not a chip's (host_tools/sim/emulate.py)
            reader = PN532_UART(PtyUART(cfg["device"], 115200), cfg["ack_ms"])
        else:
            reader = PN532_UART(PtyUART(cfg["device"], 115200))
        _parts.begun(reader)   # as a board does at boot: a reader that does not answer is a fault now
        return reader
    if kind == "gm65":
        from drivers.gm65 import GM65
        return GM65(PtyUART(cfg["device"], 9600))
    return None


def _secure(cfg):
    """The chip's driver on the pty bus, woken once at boot as a board does."""
    from emulator.ptyi2c import PtyI2C
    from drivers.atecc608 import ATECC608
    # margin_ms: the simulated chip answers from a thread of the host
    # process across a pty, later than a chip on a bus when the host is loaded.
    se = ATECC608(PtyI2C(cfg["device"]), cfg.get("address", 0x60), cfg.get("margin_ms", 50))
    se.wake()
    se.idle()
    return se


class Board:
    def journal_store(self, sectors):
        """The journal's ring (link/ring.py) on a NOR flash in a file beside
        the journal (emulator/norflash.py), as on the boards; with
        `shoe emulate --journal-ring 0` main.py keeps the journal in a file."""
        from emulator.norflash import NorFlash
        from link.ring import Ring
        self._nor = NorFlash(self.journal_path + NOR, sectors)
        return Ring(self._nor)

    def __init__(self, config):
        on_flash(self, config)
        self.ticks_ms = time.ticks_ms
        self.ticks_diff = time.ticks_diff
        self._link = PtyUART(config.LINK["device"], config.LINK.get("baud", 115200))
        self._delay = getattr(config, "ANSWER_DELAY_MS", 0)
        self._held = []   # (due ticks, frame): hellos a slow shoe has not sent yet
        dealer = config.READER.get("script")
        self._dealer = PtyUART(dealer) if dealer else None
        if dealer:
            # The lines the channel hands on (cards, ``shoe ...``) are
            # dealing-script lines; imported while the heap is whole.
            from baccarat import script
            self._script = script
            self._out = bytearray(LINE_MAX)
        self._one = bytearray(1)
        # idle() waits on the link and the dealer channel, not a fixed sleep.
        waker = select.poll()
        for uart in (self._link, self._dealer):
            if uart is not None:
                waker.register(uart._f, select.POLLIN)
        self._wake = getattr(waker, "ipoll", waker.poll)
        self._moved = True   # this pass read or wrote the link or the dealer channel
        self._pressed = 0
        self._empty = False
        self._lights = 0
        self._gate = 0
        self._line = bytearray(LINE_MAX)
        self._n = 0
        self._nor = None   # the journal ring's flash, once main.py asks for it
        # Parts as a board builds them (boards/parts.py); ABSENT names the
        # ones `shoe emulate --without` takes away, each failing the way a
        # board sees it at boot (docs/design.md, "Missing parts").
        absent = getattr(config, "ABSENT", ())
        self.parts = _parts.Parts(absent)
        if "buttons" in absent:
            self.parts.fault(_parts.BUTTONS, "no_more_bets reads pressed at power-on (stuck or shorted)")
        if "gate" in absent:
            self.parts.fault(_parts.GATE, "its driver pin could not be claimed (ValueError: invalid pin)")
        self.reader = self.parts.build(_parts.READER, _reader, config.READER)
        self._sensor_sim = None
        self.back_sensor = None
        if config.SENSOR and config.SENSOR.get("kind") == "tcs34725":
            from emulator.sim_tcs34725 import SimTCS34725
            from drivers.tcs34725 import TCS34725
            self._sensor_sim = SimTCS34725()
            self._sensor_sim.show("back_a")
            self._sensor_sim.fail = "sensor" in absent   # nothing answers at 0x29
            self.back_sensor = self.parts.build(_parts.SENSOR, TCS34725, self._sensor_sim,
                                                config.SENSOR.get("calibration"))
        # NEW SHOE held at power-on (service mode): the emulator has no
        # button, so board_config says whether it was held.
        self.service = bool(getattr(config, "HELD_AT_POWER_ON", False))
        self.secure_element = None
        secure = getattr(config, "SECURE_ELEMENT", None)
        if secure and secure.get("device"):
            self.secure_element = self.parts.build(_parts.SECURE, _secure, secure)
        self._pairing = None
        self._watchdog = Watchdog(config.WDT_MS)

    # -- host link ----------------------------------------------------------

    def link_read(self, buf):
        if self._held:
            self._release()
        n = self._link.readinto(buf) or 0
        if n:
            self._moved = True
        return n

    def link_write(self, buf, n):
        if self._delay and n > 1 and buf[1] == 0x48:
            # A slow shoe (`shoe emulate --answer-delay-ms`): its hello leaves
            # this much later, as the answer of a slower MCU would.
            self._held.append((time.ticks_add(time.ticks_ms(), self._delay), bytes(buf[:n])))
            return
        # A full pty (nobody reading) drops the frame like an unplugged cable;
        # the session retransmits whatever was not acked.
        self._moved = True
        self._link.write(memoryview(buf)[:n])

    def _release(self):
        now = time.ticks_ms()
        while self._held and time.ticks_diff(now, self._held[0][0]) >= 0:
            self._link.write(self._held.pop(0)[1])

    # -- dealer channel: stands for the reader, back sensor and buttons -----

    def dealer_line(self, out):
        """Take the next complete dealing-script line. A button or sensor line
        is latched for ``buttons()``/``empty()`` and 0 returned, so it is seen
        in this pass of the loop, in order with the cards; any other line is
        copied into ``out`` and its length returned. 0 too when no whole line
        has arrived. Over-long lines are cut."""
        if self._dealer is None:
            return 0
        while self._dealer.readinto(self._one, 1):
            b = self._one[0]
            if b == 0x0A:
                self._moved = True
                n = self._n
                self._n = 0
                line = self._line
                # Tell the simulated dealer the line is taken: main.py acts on
                # it in this same pass, before the reader is polled again, so
                # a dealer that waits for this keeps buttons and cards in order.
                self._dealer.write(b"\x06")
                if _is(line, n, b"bets"):
                    self._pressed |= BUTTON_BETS
                    return 0
                if _is(line, n, b"exposed"):
                    self._pressed |= BUTTON_EXPOSED
                    return 0
                if _is(line, n, b"new_shoe"):
                    self._pressed |= BUTTON_NEW_SHOE
                    return 0
                if _is(line, n, b"empty"):
                    self._empty = True
                    return 0
                if self._nor is not None and _is(line, n, b"flash fail"):
                    self._nor.failing = True   # the journal's next write fails (emulator/norflash.py)
                    return 0
                if _is(line, n, b"gpio"):
                    self._dealer.write(b"gpio %d %d\n" % (self._lights, self._gate))
                    return 0
                if n > 7 and self._sensor_sim is not None and line[6] == 0x20 and _is(line, 6, b"sensor"):
                    self._sensor_sim.show(bytes(line[7:n]).decode().strip())
                    return 0
                if n >= 4 and _is(line, 4, b"shoe"):
                    self._empty = False  # a new card set is loaded
                for i in range(n):
                    out[i] = line[i]
                return n
            if b != 0x0D and self._n < LINE_MAX:
                self._line[self._n] = b
                self._n += 1
        return 0

    def step(self, session, reading):
        """One pass of the dealer channel, from main.py's loop: a latched
        button or sensor line waits for ``buttons()``/``empty()``, any other
        line goes to the session as a dealing-script line. A halted shoe
        deals nothing; with a reader only ``shoe`` lines are taken, since
        every card must pass the card-set checks."""
        if self._dealer is None:
            return
        n = self.dealer_line(self._out)
        if not n or session.halt is not None:
            return
        text = bytes(self._out[:n]).decode()
        if reading is not None and not text.startswith("shoe"):
            message = "dealer channel: %r ignored, this shoe takes its cards from the reader" % text
        else:
            message = self._script.feed_line(session, text)
        if message is not None:
            session.error(message)

    def buttons(self):
        mask = self._pressed
        self._pressed = 0
        return mask

    def empty(self):
        return self._empty

    def lights(self, mask):
        self._lights = mask  # no LEDs on a PC: the state, for the `gpio` line

    def gate(self, open):
        self._gate = 1 if open else 0  # no solenoid either

    def idle(self):
        """Wait for the pit PC or the dealer: at most 1 ms after a pass
        that moved bytes (its sends may go on in the next pass: a few
        frames a pass, link/core.py), while a reader is polled or a held
        hello is due, and QUIET_MS after a pass that moved nothing. Not at
        all while a line already read from the tty waits in a UART's buffer
        (a poll cannot see it). A board's loop never sleeps; the emulator
        must not spin a core: waking every 1 ms, an idle shoe took 5 % of
        one, and 16 of them most of a 2-core pit PC (`shoe bench link`)."""
        if (self._dealer is not None and self._dealer.buffered()) or self._link.buffered():
            return
        busy = self._moved or self._held or self.reader is not None
        self._moved = False
        self._wake(1 if busy else QUIET_MS)

    def leave_service(self):
        """Service mode refused (link/core.py): play mode after all."""
        self.service = False

    def feed(self):
        self._watchdog.feed()

    def pairing(self):
        """(the paired device's id, the pairing secret) or None: ECDH of
        the chip's slot-3 key with the peer's pairing key on the flash,
        once (link/order.py board_pairing)."""
        from link import order
        return order.board_pairing(self, self._here + "/")

    def key(self):
        """The link key: derived by the secure element when the flash holds
        its peer's public key (docs/security.md, "The key at rest"), else
        read from shoe_key.bin."""
        if not self._key:
            if self.secure_element is not None:
                from drivers.atecc608 import PEER_FILE
                from drivers import atecc608_link
                self._key = atecc608_link.link_key_from(self.secure_element, self._here + "/" + PEER_FILE) or b""
                from lazy import unload
                unload("drivers.atecc608_link")   # boot-only: the key is derived once
                if self._key:
                    return self._key
            with open(self._key_path, "rb") as f:
                self._key = f.read()
        return self._key
