"""The shoe's card path: reader -> back sensor -> card-set checks -> session.

Kept out of main.py (which the board compiles from source at every boot)
so that a shoe pays the heap for it only when it has a reader.
"""

from cardset import intake, registry
from drivers import ReaderFault

# How a reader fault and its recovery read in the record (`reader_fault`
# irregularities); the technician's acceptance (host_tools/acceptance.py)
# tells a missed poll from a reader that stays down by them.
FAULT = "reader: "
RECOVERED = "reader recovered after: "


class Reading:
    """The card reader and back sensor feeding the card-set checks.

    A reader fault must never stop the shoe, but a reader that keeps failing
    would otherwise write a fault event (a flash write each) on every pass.
    So a fault is reported when it first happens, again only when its text
    changes or FAULT_REPEAT_MS have passed, and the recovery is reported too.
    """

    FAULT_REPEAT_MS = 5000

    def __init__(self, board, session, feed):
        self.board = board
        self.session = session
        self.intake = feed
        self.reader = board.reader
        self.sensor = board.back_sensor
        self.id = bytearray(32)
        self.fault = None
        self.fault_at = 0

    def _report(self, message):
        now = self.board.ticks_ms()
        if message != self.fault or self.board.ticks_diff(now, self.fault_at) >= self.FAULT_REPEAT_MS:
            self.session.alert("reader_fault", -1, message)
            self.fault_at = now
        self.fault = message

    def step(self):
        try:
            n = self.reader.poll(self.id)
        except ReaderFault as e:
            self._report(FAULT + str(e))
            return
        if self.fault is not None:
            self.session.alert("reader_fault", -1, RECOVERED + self.fault)
            self.fault = None
        if not n:
            return
        colour = intake.NO_SENSOR
        if self.sensor is not None:
            try:
                colour = self.sensor.classify()
            except ReaderFault as e:
                # The card is still dealt: face-up news can come from the
                # dealer's "exposed card" button instead.
                self.session.alert("reader_fault", -1, "back sensor: %s" % e)
        self.intake.take(self.id, n, colour)


def load(board):
    """Load the enrolled card set: (registry, None) or (None, problem text).
    Called first thing at boot: the set is one large block of heap, best
    taken before the firmware's imports scatter small objects over it."""
    path = board.cardset_path
    try:
        return registry.load(path), None
    except (OSError, ValueError) as e:
        return None, "card set %s not loaded (%s): no card is dealt until one is deployed" % (path, e)


def start(board, session, reg):
    """Attach the card set's checks to the session before the journal is
    replayed (the replay marks the cards already dealt)."""
    feed = intake.Intake(reg, session)
    session.intake = feed
    # The real-time check's buffer, made now with the card path: the order
    # arrives mid-session, when no block of its size may be left.
    from cardset import ordercheck
    feed.check = ordercheck.OrderCheck()
    return Reading(board, session, feed)
