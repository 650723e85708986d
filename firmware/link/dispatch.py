"""Host commands on the shoe: authenticate, spend the counter, parse, act.

The checks run in a fixed order — MAC (under this connection's nonce), then
the counter, then the name and arguments (link/schema.py) — so a forged
frame is reported as forged without its contents ever being interpreted, and
an authentic command is never accepted twice: its counter is made durable
before it acts, in the journal or, while tilted, in the journal's marker.
Each command's action is one entry of ``ACTIONS``.
"""

from link import auth, proto, schema
from link import journal as _journal
from link import reports

# Commands a tilted shoe still takes: they inspect or repair, never play.
TILT_COMMANDS = ("status", "time", "clear_tilt")


def _bets(s, args):
    s.bets()


def _exposed(s, args):
    s.exposed()


def _shoe(s, args):
    s.new_shoe(args["decks"], args["designation"], args["exposed"], args["batch"], args["set"],
               args["setdigest"])


def _status(s, args):
    reports.status(s)


def _time(s, args):
    s.time_t = args["t"]
    s.time_ticks = s.board.ticks_ms()
    reports.time(s, args["t"])


def _clear_tilt(s, args):
    s.clear_tilt(args["seq"])


ACTIONS = {
    "bets": _bets,
    "exposed": _exposed,
    "shoe": _shoe,
    "status": _status,
    "time": _time,
    "clear_tilt": _clear_tilt,
}


def command(s, counter, payload):
    """One ``C`` frame; raises proto.Rejected for anything refused."""
    body = auth.verify_host(s.key, s.shoe_id, s.nonce, proto.COMMAND, counter, payload)
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
    name, args = schema.parse_command(body)
    if (s.tilt is not None or s.halt is not None) and name not in TILT_COMMANDS:
        raise proto.Rejected("wrong_state", "%s: the shoe is tilted (%s); it takes only %s"
                             % (name, s.tilt or s.halt, ", ".join(TILT_COMMANDS)), name)
    if name == "clear_tilt":
        if s.tilt is None:
            raise proto.Rejected("wrong_state", "clear_tilt: the shoe is not tilted", name)
        if s.halt is not None:
            raise proto.Rejected("wrong_state", "clear_tilt: the boot self-test failed (%s); "
                                 "a technician must reflash the firmware" % s.halt, name)
    reports.accepted(s, name, counter)
    ACTIONS[name](s, args)


def _name(body):
    word = body.split(b" ", 1)[0][:16]
    try:
        return bytes(word).decode()
    except UnicodeError:
        return "?"
