"""The firmware's control of the random-gap elevator: home it, bring a gap
to the gripper slot, feed one card past the reader into it, push a stack
out. Every fault the sensors can show becomes ``MechFault(reason)``:

``missed_pick``  no card reached the throat sensor in PICK_LIMIT steps, twice
``double_feed``  the throat stayed covered longer than 1.2 cards and cleared:
                 two cards came together
``jam``          the throat stayed covered longer than 2 cards: it is stuck
``gap_lost``     after a move the gap sensor sees no gap: steps were lost
``home``         the home switch never closed
``no_tag``       a card passed without the reader seeing a tag

The decisions (which gap) come from the pure core (shuffle.py); this module
only executes them and measures. The distances are geometry.py's, the same
numbers the emulator's model is built from. The per-card path allocates
nothing (the tag goes into the caller's buffer).
"""

from shuffler import geometry as G

MISSED_PICK = "missed_pick"
DOUBLE_FEED = "double_feed"
JAM = "jam"
GAP_LOST = "gap_lost"
HOME = "home"
NO_TAG = "no_tag"
DOOR = "door"


class MechFault(Exception):
    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class Elevator:
    """``hw`` holds the parts: elevator and feed Steppers, the ``present``,
    ``throat``, ``gap`` and ``home`` inputs, the ``eject`` and ``route``
    outputs, the intake ``reader`` (``poll(buf)``) and the back ``sensor``
    (``classify()``, or None); ``delay_us`` waits."""

    def __init__(self, hw):
        self.hw = hw
        self.lift = hw.elevator
        self.feed = hw.feed
        self.colour = -1   # the back colour of the last card fed (tcs34725 codes), -1 unknown
        self.covered = 0   # how long the throat was covered by the last feed, in steps
        self.sensor_error = None

    def home(self):
        """Lower the platform to the home switch; position 0 there."""
        hw = self.hw
        lift = self.lift
        lift.direction(False)
        lift.on()
        n = 0
        while not hw.home.value():
            if n >= G.HOME_LIMIT:
                lift.off()
                raise MechFault(HOME)
            lift.pulse()
            n += 1
        lift.position = 0
        hw.delay_us(G.SETTLE_US)

    def to_gap(self, i, g):
        """Bring gap g of the i-card stack to the slot and check it is there,
        in a time that depends on i only (docs/shuffler.md, "Motion and
        timing that carry no order").

        The move from the last card's gap to this one is at most i gaps
        (|g_i - g_(i-1) - 1| <= i), so the elevator always waits out a slot
        of i gaps of travel plus the settle: a short move idles the rest.
        Without that the cycle time of card i spells the length of its move
        and, with the public feed order, its gap."""
        hw = self.hw
        d = G.gap_height(i, g) - self.lift.position
        if d:
            self.lift.move(d)
        idle = i * G.PITCH - (d if d >= 0 else -d)
        if idle > 0:
            # In pieces of at most 100 ms so that no single wait is long.
            idle_us = idle * G.ELEVATOR_US
            while idle_us > 100000:
                hw.delay_us(100000)
                idle_us -= 100000
            hw.delay_us(idle_us)
        hw.delay_us(G.SETTLE_US)
        if not hw.gap.value():
            raise MechFault(GAP_LOST)
        return True

    def cards_waiting(self):
        return self.hw.present.value() == 1

    def feed_one(self, tag):
        """Feed the tray's top card past the reader into the gap at the slot.
        Returns the tag's length in ``tag`` (0: no tag seen); the back colour
        is left in ``self.colour``. Raises MechFault."""
        hw = self.hw
        f = self.feed
        throat = hw.throat
        f.direction(True)
        f.on()
        tries = 0
        n = 0
        while not throat.value():
            if n >= G.PICK_LIMIT:
                tries += 1
                if tries >= G.PICK_TRIES:
                    f.off()
                    raise MechFault(MISSED_PICK)
                n = 0
            f.pulse()
            n += 1
        covered = 0
        got = 0
        self.colour = -1
        while throat.value():
            f.pulse()
            covered += 1
            if covered == G.READ_AT:
                got = hw.reader.poll(tag)
                self._read_colour()
            if covered > G.JAM_LIMIT:
                f.off()
                self.covered = covered
                raise MechFault(JAM)
        self.covered = covered
        if covered > G.DOUBLE_LIMIT:
            f.off()
            raise MechFault(DOUBLE_FEED)
        for _ in range(G.TO_GRIPPER):
            f.pulse()
        f.off()
        if not got:
            raise MechFault(NO_TAG)
        return got

    def _read_colour(self):
        s = self.hw.sensor
        if s is None:
            return
        try:
            self.colour = s.classify()
        except Exception as e:  # a sensor fault is reported, the card still judged by its tag
            self.colour = -1
            self.sensor_error = e

    def eject(self, out):
        """Push the stack off the platform: ``out`` True through the output
        to the shoe, False back into the intake tray (for the second pass)."""
        hw = self.hw
        hw.route.value(1 if out else 0)
        hw.eject.value(1)
        hw.delay_us(G.EJECT_US)
        hw.eject.value(0)
