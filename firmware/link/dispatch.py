"""Host commands on a device: authenticate, spend the counter, parse, act.

The checks run in a fixed order — MAC (under this connection's nonce), then
the counter, then the name and arguments (the device's command table,
``s.COMMANDS``: link/schema.py on the shoe, link/commands.py's link
commands on the shuffler) — so a forged frame is reported as forged without
its contents ever being interpreted, and an authentic command is never
accepted twice: its counter is made durable before it acts, in the journal
or, while tilted, in the journal's marker. Each command's action is one
entry of the device's ``s.ACTIONS``; the link's own are ``LINK_ACTIONS``.
The parser and the link's command table are link/commands.py.
"""

from link import auth, proto
from link import journal as _journal
from link import reports
from link.commands import parse


# Commands a tilted device still takes: they inspect or repair, never play.
TILT_COMMANDS = ("status", "time", "clear_tilt")


def _status(s, args):
    s.status()


def _time(s, args):
    s.time_t = args["t"]
    s.time_ticks = s.board.ticks_ms()
    reports.time(s, args["t"])


def _clear_tilt(s, args):
    s.clear_tilt(args["seq"])


LINK_ACTIONS = {
    "status": _status,
    "time": _time,
    "clear_tilt": _clear_tilt,
}


def command(s, counter, payload):
    """One ``C`` frame; raises proto.Rejected for anything refused."""
    signed = auth.verify_host(s.key, s.shoe_id, s.nonce, proto.COMMAND, counter, payload)
    body = _within_deadline(s, signed)
    if counter <= s.counter:
        if counter == s.counter and payload == s.last_command:
            return  # a resend of the last command: its outcome is already queued
        raise proto.Rejected("replayed", "counter %d is not above the last accepted counter %d"
                             % (counter, s.counter), _name(body))
    # Spent before anything else: even a power cut right after this cannot
    # let the same command act twice.
    s.counter = counter
    s.last_command = payload
    if s.tilt is None and s.halt is None:
        s.journal.number(_journal.COUNTER, counter)
    else:
        s.journal.spend_counter(counter)
    name, args = parse(body, s.COMMANDS)
    if (s.tilt is not None or s.halt is not None) and name not in TILT_COMMANDS:
        raise proto.Rejected("wrong_state", "%s: the %s is tilted (%s); it takes only %s"
                             % (name, s.DEVICE, s.tilt or s.halt, ", ".join(TILT_COMMANDS)), name)
    if name == "clear_tilt":
        if s.tilt is None:
            raise proto.Rejected("wrong_state", "clear_tilt: the %s is not tilted" % s.DEVICE, name)
        if s.halt is not None:
            raise proto.Rejected("wrong_state", "clear_tilt: the boot self-test failed (%s); "
                                 "a technician must reflash the firmware" % s.halt, name)
        if s.journal.broken is not None:
            # The flash failed since power-on: a fresh journal would fail too.
            raise proto.Rejected("wrong_state", "clear_tilt: %s; power-cycle first" % s.journal.broken, name)
    why = s.refusal(name, args)
    if why is not None:
        raise proto.Rejected("wrong_state", why, name)
    reports.accepted(s, name, counter)
    s.ACTIONS[name](s, args)


def _within_deadline(s, signed):
    """The command text of ``BODY @DEADLINE``, if the deadline (the device's
    30-bit millisecond clock) has not passed; else Rejected("expired")."""
    at = signed.rfind(b" @")
    deadline = -1
    if at > 0:
        try:
            deadline = int(signed[at + 2:])
        except ValueError:
            deadline = -1
    body = signed[:at] if at > 0 else signed
    if deadline < 0 or deadline > proto.TICKS_MASK:
        raise proto.Rejected("expired", "no deadline on the command", _name(body))
    left = (deadline - (s.board.ticks_ms() & proto.TICKS_MASK)) & proto.TICKS_MASK
    if left >= proto.TICKS_HALF or left > proto.COMMAND_TTL_MS + proto.HEARTBEAT_MS:
        raise proto.Rejected("expired", "the command's deadline has passed (held back on the line?)",
                             _name(body))
    return body


def _name(body):
    word = body.split(b" ", 1)[0][:16]
    try:
        return bytes(word).decode()
    except UnicodeError:
        return "?"
