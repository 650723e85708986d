"""The device's own answer to a pit command, as every sender shows it.

The bridge signs and sends a command (HostLink.command: "ok sent NAME as
command N"); that says only that it left the pit PC. The device answers in
its event stream, under the same counter: an ``accepted`` link event (it
acts on it), or an ``error`` link event naming the counter with its reason
("no more bets: no card set loaded", "clear_tilt: the shoe is not tilted").
`shoe bridge --send`, the console's keys and the pit page all wait for that
answer, bounded by ANSWER_S, and report it, never the sending alone.
"""

import re

# How long a sender waits for the device's answer. The shoe answers within a
# heartbeat or two; a loaded pit PC, a slow line and a reconnect take longer.
ANSWER_S = 5.0

_SENT = re.compile(r"^ok sent (\S+) as command (\d+)\b")


def sent_counter(reply):
    """The counter of a command the bridge reports as sent, or None."""
    m = _SENT.match(reply or "")
    return int(m.group(2)) if m else None


def answer_counter(event):
    """The counter of the command this event answers, or None: a link
    ``accepted``, or a link ``error`` that names the command's counter."""
    if event.get("source") != "link" or event.get("type") not in ("accepted", "error"):
        return None
    counter = event.get("counter")
    if isinstance(counter, int) and not isinstance(counter, bool) and counter >= 0:
        return counter
    return None


def reply_line(sent, event, device="shoe"):
    """One line for the sender: "ok ..." when the device accepted, "error
    ..." with its reason when it refused or never answered. ``sent`` is
    the bridge's "ok sent NAME as command N"."""
    if event is None:
        return "error %s; no answer from the %s within %.0f s (`shoe export` shows whether one came later)" % (
            sent[3:], device, ANSWER_S)
    if event.get("type") == "accepted":
        return "%s; accepted by the %s" % (sent, device)
    return "error %s; refused by the %s (%s): %s" % (sent[3:], device, event.get("reason"),
                                                    event.get("message") or "no reason given")
