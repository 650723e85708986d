"""The shuffler's mechanical constants, once, for the firmware's drivers and
the emulator's physical model (sim_mechanism.py): the firmware is
calibrated to the machine it drives, so both read the same numbers.

Units are motor steps (microsteps). Why these values (docs/shuffler.md,
"The mechanism model"):

* Elevator: an 8 mm lead screw, 200 full steps per turn at 1/4
  microstepping, so 0.01 mm per step; a plastic card is 0.30 mm thick, so
  one gap of the stack is 30 steps. The gripper's slot is at a fixed height;
  the elevator platform moves so that the wanted gap faces it.
* Feed: rollers of 0.1 mm per step. A poker-size card is 88.9 mm long (889
  steps). The throat sensor sits 15 mm after the pick roller; the gripper
  mouth is 20 mm after the card's tail leaves the throat sensor.
* Speeds: the feed at 1 m/s (100 us a step), the elevator at 80 mm/s (125 us
  a step) with a 20 ms settle after each move before the gap is checked.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# Elevator (steps of 0.01 mm).
PITCH = const(30)            # one card's thickness: the distance between two gaps
SLOT = const(12600)          # platform height that puts gap 0 of an empty stack at the slot (416 * 30 + 120)
TRAVEL = const(13000)        # top end stop of the platform
GAP_TOL = const(3)           # the gap sensor sees a gap within +-3 steps of it
ELEVATOR_US = const(125)     # per step
SETTLE_US = const(20000)     # after a move, before the gap sensor is read

# Feed path (steps of 0.1 mm).
THROAT = const(150)          # the card's front reaches the throat sensor
CARD_LEN = const(889)        # the throat sensor is covered this long by one card
TO_GRIPPER = const(200)      # from the tail leaving the throat sensor to the gripper mouth
FEED_US = const(100)         # per step
DOUBLE_OFFSET = const(330)   # a second card dragged along trails the first by this much

# What the firmware tolerates before calling a fault.
PICK_LIMIT = const(250)      # steps without a card at the throat: a missed pick
PICK_TRIES = const(2)        # one retry, then the fault
DOUBLE_LIMIT = const(1067)   # covered longer than 1.2 cards: two cards came together
JAM_LIMIT = const(1778)      # covered longer than 2 cards: the card is not moving
READ_AT = const(444)         # read the tag and the back colour at the card's middle
HOME_LIMIT = const(13200)    # steps down without the home switch: the elevator is stuck
EJECT_US = const(400000)     # the push-off moves a whole stack out (0.4 s)


def gap_height(i, g):
    """Platform height at which gap g (0 = above the top card) of an i-card
    stack faces the gripper slot."""
    return SLOT - (i - g) * PITCH
