"""Who sees what of a table, decided once, on the server (BRIEF, "Who may see what").

A player at the table, or anyone without a login, gets the scoreboard the
table shows its players and nothing else: results of completed rounds, the
roads and the ask road, the counts of completed rounds, the table's name and
limits. Never a card still face down or burned, never the cards left, never
an alert or the edge monitor (it says exactly when a side bet favours the
player). Staff see what their job needs; only surveillance sees everything.

Every reply and every pushed message passes through here before it leaves
the pit, so the page cannot show what the server never sent: hiding a field
in the browser would still hand it to anyone reading the API or the stream.
"""

from host_tools.protocol import alerts as alert_kinds
from host_tools.protocol.tablestate import HAND_POSITIONS

PUBLIC = "public"             # no login
VIEWER = "viewer"             # the overview, the live round, alerts read only, the last rounds
SUPERVISOR = "supervisor"     # commands (confirmed) and acknowledgements
SURVEILLANCE = "surveillance"  # everything: burn cards, ranks left, the edge monitor, audit, reports
STAFF = (VIEWER, SUPERVISOR, SURVEILLANCE)
ALL = (PUBLIC,) + STAFF

NOUN = {VIEWER: "staff", SUPERVISOR: "a supervisor", SURVEILLANCE: "surveillance"}  # "refused: not ..."

COMMANDERS = (SUPERVISOR,)
ACKERS = (SUPERVISOR, SURVEILLANCE)
# Kinds only a supervisor may acknowledge: the critical ones (rollback,
# fork, ... and the table's recording_stopped, firmware_mismatch, service_mode).
CRITICAL_ACK = frozenset(alert_kinds.CRITICAL_KINDS)
# Kinds that tell a side bet's expectation: surveillance only.
SECRET_KINDS = frozenset(("edge",))

# The fields of a table the public scoreboard carries ("language": the
# display's labels, "card_set": which card set of the table's shoe this is).
PUBLIC_TABLE = ("name", "designation", "limits", "last_result", "roads", "scoreboard", "language", "card_set")
# What staff below surveillance never get of a table.
STAFF_HIDDEN = ("ranks_left", "shuffle")


def sees_everything(role):
    return role == SURVEILLANCE


def may_ack(role, kind):
    if kind in CRITICAL_ACK:
        return role == SUPERVISOR
    return role in ACKERS


def alerts_for(role, alerts):
    if role == PUBLIC:
        return None
    if sees_everything(role):
        return alerts
    return [a for a in alerts if a.get("kind") not in SECRET_KINDS]


def table_for(role, snap):
    """A table's snapshot (``TableRunner.snapshot`` plus what web.py adds)
    as ``role`` may see it. A new field is hidden from the public until it
    is named in PUBLIC_TABLE."""
    if role == PUBLIC:
        out = {k: snap[k] for k in PUBLIC_TABLE if k in snap}
        result = snap.get("last_result")
        out["round"] = result.get("round") if result else None
        return out
    out = dict(snap)
    if not sees_everything(role):
        for k in STAFF_HIDDEN:
            out.pop(k, None)
    if "alerts" in out:
        out["alerts"] = alerts_for(role, out["alerts"])
    return out


def _staff_event(event):
    """A committed event as staff below surveillance may see it: a card that
    is not face up in a hand (a burn, a discard, a card dealt face down)
    loses its face."""
    if event.get("type") in ("card", "assign") and "card" in event:
        if event.get("pos") not in HAND_POSITIONS or event.get("up") is False:
            event = dict(event)
            del event["card"]
    return event


def message_for(role, message):
    """A pushed message as ``role`` may receive it, or None (not sent).

    The public hears only that a round or a shoe ended, with the result: a
    push per card would tell when the burn is done and how many cards went.
    """
    kind = message.get("type")
    if sees_everything(role):
        return message
    if role == PUBLIC:
        if kind != "event":
            return None
        event = message.get("event") or {}
        if event.get("source") is not None or event.get("type") not in ("result", "void", "shoe", "shoe_end"):
            return None
        live = message.get("live") or {}
        result = live.get("last_result")
        return {"type": "event", "table": message.get("table"),
                "live": {"last_result": result, "round": result.get("round") if result else None}}
    if kind == "alert" and message.get("kind") in SECRET_KINDS:
        return None
    if kind == "event" and isinstance(message.get("event"), dict):
        event = _staff_event(message["event"])
        if event is not message["event"]:
            message = dict(message, event=event)
    return _staff_live(message)


def _staff_live(message):
    """The pushed live state (tablefold.live) without what surveillance alone sees."""
    live = message.get("live")
    if isinstance(live, dict) and any(k in live for k in STAFF_HIDDEN):
        message = dict(message, live={k: v for k, v in live.items() if k not in STAFF_HIDDEN})
    return message
