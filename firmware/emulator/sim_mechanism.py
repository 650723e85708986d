"""The emulator's physical model of the random-gap elevator shuffler: what
the firmware's pins drive and what its sensors see.

Not firmware: it stands in for the machine, in the emulator board only
(firmware/emulator/shuffler_board.py), and runs in the MicroPython VM beside the
firmware so a whole batch takes seconds, not minutes. The firmware reaches
it only through pin objects (``Out``/``In``: ``value()``), a clock
(``delay_us``) and the intake reader and back sensor; it never reads the
model's state, so everything it knows it has measured, as on a board.

Physics (units and numbers in geometry.py, shared with the firmware's
calibration):

* Steppers: a rising edge on STEP with ENABLE low (active low, as on
  A4988/TMC2209 drivers) moves the axis one step in the DIR direction. The
  elevator platform stops at its end stops (steps lost, as a stalled motor).
* The intake tray holds cards top first; ``present`` is 1 while it holds
  any. A feed step with no card in the path picks the tray's top card (a
  slipping pick roller first turns ``slip`` steps without moving it; a double
  feed drags the next card along, DOUBLE_OFFSET behind). Every feed step
  moves every moving card in the path one step.
* ``throat`` is 1 while a card's body covers the throat sensor; the intake
  reader sees the front card's tag then, and the back sensor its surface.
* A card whose front reaches the gripper mouth is pushed into the gap facing
  the slot; if no gap faces it, it crashes and jams there.
* ``gap`` is 1 when the platform puts a gap of the stack within GAP_TOL of
  the slot, ``home`` when the platform is at its bottom, ``door`` 1 while
  the door is shut. The lock is an output; forcing the door opens it anyway
  (the fault the custody machine exists for).
* Faults: ``double()``, ``slip(n)``, ``jam(at)`` arm the next pick;
  ``open_door()``; ``stall()`` kills the elevator's motor; the power cut is
  the VM being killed. ``hold(n)`` stops the machine once ``n`` more cards
  have gone onto the stack (a batch's check pass stacks every card once,
  its shuffle again): that card's insertion calls ``on_hold`` (the
  board's, which waits in real time inside the firmware's motor step), so
  a power cut can land at a known card, not at whatever point the host's
  speed has reached.

Time is the model's clock (``now_us``), advanced by the firmware's delays:
its total over a batch is the modelled mechanical time.
"""

from array import array

from shuffler import geometry as G

_NEVER = 1 << 30
_MOUTH = G.THROAT + G.CARD_LEN + G.TO_GRIPPER   # a card's front there meets the gripper
_THROAT = G.THROAT
_THROAT_END = G.THROAT + G.CARD_LEN


class Out:
    """An output pin the firmware drives. The model acts on rising edges
    only (a step, a push), so only those call it: half the calls of a
    million-step batch."""

    def __init__(self, on_rise=None, value=0):
        self._v = value
        self._on = on_rise

    def value(self, v=None):
        if v is None:
            return self._v
        if v:
            if not self._v:
                self._v = 1
                if self._on is not None:
                    self._on()
        else:
            self._v = 0
        return None

    __call__ = value


class In:
    """An input pin the firmware reads: the model computes its level."""

    def __init__(self, read):
        self._read = read

    def value(self, v=None):
        return self._read()

    __call__ = value


# A card in the feed path: [card number, front, moving, read], in one of
# three preallocated slots. Cards are numbers into the model's tables (tags
# and surfaces); the tray is a ring and the stack an array of them. So a
# batch of 416 costs the VM's heap a few kilobytes, and a card fed
# allocates nothing in the model either: the per-card path of firmware and
# model together can run with the heap locked (tests/e2e/test_shuffler_mechanism_vm.py).
CARD = 0
FRONT = 1
MOVING = 2
READ = 3
MAX_UID = 10
SURFACES = ("back_a", "back_b", "face")


class Mechanism:
    def __init__(self, on_surface=None, max_cards=900):
        self.uids = bytearray(max_cards * MAX_UID)
        self.ulen = bytearray(max_cards)
        self.surface = bytearray(max_cards)
        self.count = 0
        self.free = []          # numbers of cards that left the machine
        self.tray = array("H", bytes(2 * max_cards))   # a ring: cards waiting at the intake, top first
        self.tray_head = 0
        self.tray_n = 0
        self.path = [[0, 0, False, False], [0, 0, False, False], [0, 0, False, False]]
        self.path_n = 0         # cards between the pick roller and the gripper: path[0:path_n], front first
        self.stack = array("H", bytes(2 * max_cards))  # cards on the elevator, top first
        self.stack_n = 0
        self.output = []        # stacks pushed out of the machine (to the shoe), oldest first
        self.platform = G.SLOT  # elevator height in steps
        self.door_shut = True
        self.now_us = 0
        self.steps = [0, 0]     # elevator, feed steps taken (for the benchmark)
        self.crashed = 0
        self._double = False
        self._slip = 0
        self._jam_at = None
        self._stalled = False
        self._hold_at = None
        self.on_hold = None     # called with the stack's count when a hold is reached
        self._surface = on_surface
        self._shown = None
        self.cover = None       # the path card covering the throat: set where the path changes
        # The pins, as the board module hands them to the firmware.
        self.elevator_step = Out(self._elevator_edge)
        self.elevator_dir = Out()       # 1 = up
        self.elevator_enable = Out(value=1)
        self.feed_step = Out(self._feed_edge)
        self.feed_dir = Out()           # 1 = forward (towards the gripper)
        self.feed_enable = Out(value=1)
        self.eject = Out(self._eject_edge)
        self.route = Out()              # 0: push the stack back into the tray; 1: out to the shoe
        self.lock = Out()               # 1 = locked
        self.present = In(self._present)
        self.throat = In(self._throat)
        self.gap = In(self._gap)
        self.home = In(self._home)
        self.door = In(self._door)

    # -- the world, as the host or an operator changes it --------------------

    def put(self, uid, colour):
        """A card put at the bottom of the intake tray."""
        n = len(uid)
        if self.free:
            k = self.free.pop()
        else:
            k = self.count
            if n > MAX_UID or k >= len(self.ulen):
                raise ValueError("the model holds %d cards of tags up to %d bytes" % (len(self.ulen), MAX_UID))
            self.count = k + 1
        at = k * MAX_UID
        for j in range(n):
            self.uids[at + j] = uid[j]
        self.ulen[k] = n
        self.surface[k] = SURFACES.index(colour)
        self._tray_push(k)

    def _tray_push(self, k):
        size = len(self.tray)
        if self.tray_n >= size:
            raise ValueError("the intake tray holds %d cards" % size)
        self.tray[(self.tray_head + self.tray_n) % size] = k
        self.tray_n += 1

    def _tray_pop(self):
        k = self.tray[self.tray_head]
        self.tray_head = (self.tray_head + 1) % len(self.tray)
        self.tray_n -= 1
        return k

    def tray_cards(self):
        return [self.tray[(self.tray_head + i) % len(self.tray)] for i in range(self.tray_n)]

    def stack_cards(self):
        return list(self.stack[:self.stack_n])

    def path_cards(self):
        return [self.path[i][CARD] for i in range(self.path_n)]

    def uid(self, k):
        return bytes(self.uids[k * MAX_UID:k * MAX_UID + self.ulen[k]])

    def colour(self, k):
        return SURFACES[self.surface[k]]

    def _cards(self, ks):
        """Cards leaving the machine: their numbers are free again."""
        out = [(self.uid(k), self.colour(k)) for k in ks]
        self.free.extend(ks)
        return out

    def take_output(self):
        """The operator takes the oldest stack out of the output: [(uid, colour)]."""
        if not self.output:
            return []
        return self._cards(self.output.pop(0))

    def take_all(self):
        """An operator empties the machine (after a fault): every card, in
        tray, path and elevator, as [(uid, colour)]."""
        ks = self.stack_cards() + self.path_cards() + self.tray_cards()
        self.stack_n = self.path_n = self.tray_n = 0
        self.tray_head = 0
        self.cover = None
        self._show(None)
        return self._cards(ks)

    def double(self):
        self._double = True

    def slip(self, steps):
        self._slip = steps

    def jam(self, at=400):
        self._jam_at = at

    def hold(self, more):
        self._hold_at = more

    def stall(self):
        """The elevator's motor or driver is dead (unplugged, no VM, EN
        stuck high): its steps move nothing from now on."""
        self._stalled = True

    def open_door(self):
        self.door_shut = False

    def close_door(self):
        self.door_shut = True

    def delay_us(self, us):
        self.now_us += us

    # -- steppers ------------------------------------------------------------

    def _elevator_edge(self):
        if self.elevator_enable._v or self._stalled:
            return
        self.steps[0] += 1
        p = self.platform + (1 if self.elevator_dir._v else -1)
        if 0 <= p <= G.TRAVEL:
            self.platform = p

    def _feed_edge(self):
        if self.feed_enable._v or not self.feed_dir._v:
            return
        self.steps[1] += 1
        path = self.path
        if not self.path_n:
            if not self.tray_n:
                return
            if self._slip > 0:
                self._slip -= 1
                return
            self._pick(0)
            if self._double and self.tray_n:
                self._pick(-G.DOUBLE_OFFSET)
            self._double = False
        jam = self._jam_at
        for i in range(self.path_n):
            c = path[i]
            if not c[MOVING]:
                continue
            if c[FRONT] == jam:
                c[MOVING] = False
                self._jam_at = jam = None
                continue
            c[FRONT] += 1
        while self.path_n and path[0][FRONT] >= _MOUTH and path[0][MOVING]:
            self._insert(path[0])
        c = self._covering()
        if c is not self.cover:
            self.cover = c
            self._show(c)

    def _pick(self, front):
        c = self.path[self.path_n]
        c[CARD] = self._tray_pop()
        c[FRONT] = front
        c[MOVING] = True
        c[READ] = False
        self.path_n += 1

    def _insert(self, c):
        i = self.stack_n
        g = self._facing(i)
        if g < 0:
            c[MOVING] = False       # crashed into the stack's side: it stays in the mouth
            c[FRONT] = _MOUTH - 1
            self.crashed += 1
            return
        st = self.stack
        j = i
        while j > g:
            st[j] = st[j - 1]
            j -= 1
        st[g] = c[CARD]
        self.stack_n = i + 1
        if self._hold_at is not None:
            self._hold_at -= 1
            if self._hold_at <= 0:
                self._hold_at = None
                if self.on_hold is not None:
                    self.on_hold(self.stack_n)
        # The path's slots move up one; the inserted card's slot goes last.
        p = self.path
        p[0], p[1], p[2] = p[1], p[2], p[0]
        self.path_n -= 1

    def _eject_edge(self):
        if not self.stack_n:
            return
        cards = self.stack_cards()
        self.stack_n = 0
        if self.route._v:
            self.output.append(cards)
        else:
            # Back on top of whatever is still in the tray, in the stack's order.
            rest = self.tray_cards()
            self.tray_head = self.tray_n = 0
            for k in cards + rest:
                self._tray_push(k)

    # -- sensors -------------------------------------------------------------

    def _present(self):
        return 1 if self.tray_n else 0

    def _covering(self):
        path = self.path
        for i in range(self.path_n):
            c = path[i]
            if _THROAT <= c[FRONT] < _THROAT_END:
                return c
        return None

    def _throat(self):
        return 0 if self.cover is None else 1

    def _facing(self, i):
        d = G.SLOT - self.platform        # = (i - g) * PITCH when gap g faces the slot
        k = (d + G.GAP_TOL) // G.PITCH    # the nearest gap from the bottom
        if k < 0 or k > i or abs(d - k * G.PITCH) > G.GAP_TOL:
            return -1
        return i - k

    def _gap(self):
        return 1 if self._facing(self.stack_n) >= 0 else 0

    def _home(self):
        return 1 if self.platform == 0 else 0

    def _door(self):
        return 1 if self.door_shut else 0

    def _show(self, card):
        if self._surface is None:
            return
        name = SURFACES[self.surface[card[CARD]]] if card is not None else "none"
        if name != self._shown:
            self._shown = name
            self._surface(name)

    # -- the intake reader's antenna ------------------------------------------

    def tag_in_field(self, buf):
        """The tag of the card covering the throat (the reader's antenna is
        there), once per card, as a tag entering the field; its length, or 0."""
        c = self.cover
        if c is None or c[READ]:
            return 0
        c[READ] = True
        k = c[CARD]
        n = self.ulen[k]
        at = k * MAX_UID
        for j in range(n):
            buf[j] = self.uids[at + j]
        return n
