"""What a technician's acceptance (`shoe acceptance --device shuffler`) asks
a shuffler on the bench, answered as signed link events, as the shoe's
firmware/probes.py answers the shoe's:

- ``sensor``: the card-present, throat, gap and home sensors and the door
  switch, as they read now (an ``inputs`` event);
- ``cycle``: one card from the intake tray through the mechanism and back,
  with each sensor's levels on the way (the machine's own elevator and feed
  code, so a sensor that does not change state shows here as it would in a
  batch);
- ``secure`` and ``sign``: the secure element and a report digest signed by
  it, by the shoe's own code (firmware/probes.py), so one signer and one
  check serve both devices.

Not resident: shuffler/link.py loads this module for one question and lets
it go after (lazy.unload), and only while the machine is idle and holds no
batch, so a shuffler in play never pays its heap (docs/shuffler.md,
"Footprint"). The levels are text, one digit per reading ("010": clear,
covered, clear), allocated here: the questions are rare and human-paced.

The cycle, in order: the throat must be clear with nothing fed; the
elevator homes (no gap faces the gripper slot there), brings gap 0 of the
empty stack to the slot (the gap sensor must see it), the feed takes the
tray's top card past the throat sensor (covered, then clear), the reader
and the back sensor, into the gap; the stack is pushed back into the tray
and the elevator homes again. The door must be shut: nothing moves with it
open. Any fault stops the cycle where it happened and is named in
``message``; what was seen up to then is still reported.
"""

import binascii

import probes as _probes
from link import reports
from shuffler import elevator


def _level(pin):
    return "1" if pin.value() else "0"


def inputs(s, args):
    """The `sensor` command's event, `inputs`."""
    hw = s.device.mech.hw
    o = reports.begin(s, b"inputs")
    for key, pin in ((b',"present":', hw.present), (b',"throat":', hw.throat), (b',"gap":', hw.gap),
                     (b',"home":', hw.home)):
        o.raw(key)
        o.bool(pin.value() == 1)
    o.raw(b',"door":')
    o.bool(s.device.door.shut())
    s.link_send()


def _run(s, seen, tag):
    """The cycle's moves; returns (tag length, why it stopped or None)."""
    d = s.device
    mech = d.mech
    hw = mech.hw
    feed = s.board.feed
    if not d.door.shut():
        return 0, "the door is open: close it, nothing moves with it open"
    seen[0] += _level(hw.present)
    seen[1] += _level(hw.throat)
    if hw.throat.value():
        return 0, "the throat sensor reads covered with nothing fed"
    mech.home()
    feed()
    seen[2] += _level(hw.gap)
    try:
        mech.to_gap(0, 0)
    finally:
        seen[2] += _level(hw.gap)
    feed()
    n = 0
    try:
        n = mech.feed_one(tag)
    finally:
        if mech.covered:
            seen[1] += "1"
        seen[1] += _level(hw.throat)
        seen[0] += _level(hw.present)
    feed()
    mech.eject(False)   # the card goes back into the tray
    seen[0] += _level(hw.present)
    mech.home()
    feed()
    return n, None


def cycle(s, args):
    """The `cycle` command's event."""
    seen = ["", "", ""]   # present, throat, gap
    tag = bytearray(16)
    n = 0
    mech = s.device.mech
    mech.colour = -1
    mech.covered = 0
    try:
        n, why = _run(s, seen, tag)
    except elevator.MechFault as e:
        why = e.reason
    o = reports.begin(s, b"cycle")
    for key, text in ((b',"present":', seen[0]), (b',"throat":', seen[1]), (b',"gap":', seen[2])):
        o.raw(key)
        o.text(text)
    o.raw(b',"tag":')
    o.text(binascii.hexlify(tag[:n]).decode())
    o.raw(b',"colour":')
    o.text(_probes.SEEN[mech.colour] if 0 <= mech.colour < 3 else "none")
    if why:
        o.raw(b',"message":')
        o.text(why)
    s.link_send()


def secure(s, args):
    _probes.secure(s, args)


def sign(s, args):
    _probes.sign(s, args)


ACTIONS = {"sensor": inputs, "cycle": cycle, "secure": secure, "sign": sign}


def run(s, args):
    """The probe just accepted (its name is the first word of the
    command dispatch took: link/dispatch.py), refused while the machine is
    busy or holds a batch: a cycle would move cards in custody."""
    from shuffler.custody import INSIDE
    name = bytes(s.last_command).split(b" ", 1)[0].decode()
    d = s.device
    m = d.machine if d is not None else None
    if d is None or d.phase or m is None or m.state[1] in INSIDE or m.state[2] in INSIDE:
        s._error("wrong_state", "%s: a bench question, taken only while the shuffler is idle and holds no "
                 "batch" % name, name)
        return
    try:
        ACTIONS[name](s, args)
    finally:
        from lazy import unload
        unload("probes")   # the shoe's, for the chip: let go with this module (read again at the next question)
