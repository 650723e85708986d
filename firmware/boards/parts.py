"""The parts a board is built from, and what the loss of each at boot means.

A board builds every part its configuration names through ``Parts.build``:
a part that is absent or faulty (its bus NAKs the address, a reader does not
answer its first command, a pin cannot be claimed) becomes None and its fault
is kept as one line naming the part and the bus's own error. Nothing a part
does at boot may raise out of the board's constructor: main.py builds the
board after arming the watchdog, so an exception there rebooted a real shoe
in a loop with its REPL on the pit's line.

Dealing is refused (the shoe halts: its hellos name the fault, nothing else
is sent, STOP lit, gate closed) only where the loss makes dealing unsafe:

- reader: a card drawn would not be seen, so the record would miss it;
- secure element: it holds the link key (when provisioned with it) and
  signs the checkpoints; a record without its signatures fails the
  auditor's rule (docs/security.md);
- buttons: without "no more bets" no round can start, and a button stuck
  pressed at power-on would act on its own.

The others only degrade, and dealing goes on: the hello's ``parts`` names the
fault and an `error` event records it.

The shuffler's emulated board builds its reader, back sensor and secure
element the same way (emulator/shuffler_board.py) and keeps only the texts, its
halt saying "shuffling refused": without the intake reader or the chip it
refuses to shuffle (a deck it cannot read cannot be checked, and the chip holds its
keys and signs); without the back sensor it goes on, the card set's batch
of each tag standing in for the back colour.

- back sensor: face-up news comes from the dealer's "exposed card" button,
  as when the sensor fails mid-shoe (reading.py);
- gate: optional (docs/design.md); a card drawn when none is due is handled
  by Chapter 13 as in a shoe without one.

A halt is not written to the journal: the fault is physical, so every boot
checks again and halts again until the part is fixed; the journal is
replayed untouched once it is.
"""

READER = "reader"
SENSOR = "back sensor"
SECURE = "secure element"
BUTTONS = "buttons"
GATE = "gate"
UNSAFE = (READER, SECURE, BUTTONS)
HALT = "part missing or faulty, dealing refused: "


class Parts:
    def __init__(self, absent=()):
        self.absent = absent   # the emulator's `--without` names (boards.toml part names)
        self.faults = []       # "part: the bus's error", in the order built
        self.halt = None       # the first unsafe fault, as the hello's tilt says it

    def build(self, name, make, *args):
        """``make(*args)``, or None with the fault kept when it raises."""
        try:
            return make(*args)
        except Exception as e:  # every driver's and bus's error: OSError, ReaderFault, ...
            self.fault(name, e)
            return None

    def fault(self, name, e):
        text = "%s: %s" % (name, e)
        self.faults.append(text)
        if self.halt is None and name in UNSAFE:
            self.halt = HALT + text

    def degraded(self):
        """The faults of parts dealing goes on without, one line (or "")."""
        out = ""
        for text in self.faults:
            name = text[:text.find(":")]
            if name not in UNSAFE:
                out = text if not out else out + "; " + text
        return out


# -- the shoe's board helpers (boards/machine_board.py, emulator/shoe_board.py) --

def inputs(board, config, Pin, names, new_shoe):
    """The buttons and the empty switch on ``board``. A button other than
    NEW SHOE read pressed at power-on is stuck or shorted: it would act on
    its own, so it is a fault (NEW SHOE held selects service mode)."""
    pins = []
    for name in names:
        pins.append(Pin(config.BUTTONS[name], Pin.IN, Pin.PULL_UP))
    pins.append(Pin(config.EMPTY["pin"], Pin.IN, Pin.PULL_UP))
    n = len(pins)
    board._inputs = pins
    board._raw = bytearray(n)       # last sampled level, 1 = active
    board._state = bytearray(n)     # debounced level
    board._since = [0] * n          # ticks of the last raw change
    # Service mode: NEW SHOE held at power-on. The watchdog stays off and
    # Ctrl-C keeps working, so `shoe deploy` (mpremote) can take over the
    # USB REPL; in play neither is possible without opening the shoe.
    board.service = pins[new_shoe].value() == 0
    for i in range(new_shoe):
        if pins[i].value() == 0:
            raise ValueError("%s reads pressed at power-on (stuck or shorted)" % names[i])


def output(Pin, pin):
    return Pin(pin, Pin.OUT, value=0)


# A PN532 can miss a frame in its first moments after power-on (its HSU
# wake-up, a bus still settling), and a reader halts the shoe at boot, so
# its first configuration is tried this many times before the reader is
# called faulty: at most 3 x the driver's ACK wait (30 ms on a board), well
# inside the watchdog. In play a failed poll configures it again anyway
# (drivers/pn532.py).
BEGIN_TRIES = 3


def begun(reader):
    """``reader.begin()``, tried again after a fault; the last fault raised."""
    tries = BEGIN_TRIES
    while True:
        try:
            return reader.begin()
        except Exception:  # the driver's ReaderFault, or the bus's OSError
            tries -= 1
            if tries == 0:
                raise


def started(make, cfg):
    """A reader made, then woken and configured when its driver can be (a PN532)."""
    reader = make(cfg)
    if hasattr(reader, "begin"):
        begun(reader)
    return reader


def woken(make, cfg):
    """The secure element made and woken once: a chip that does not
    acknowledge its address is found with the bus's answer."""
    se = make(cfg)
    se.wake()
    se.idle()
    return se
