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
One function per kind of thing sent: ``table_for`` (the API's tables, with
``round_for`` and ``recall_for``), ``message_for`` (the event stream, with
``event_for`` and ``live_for``), ``alerts_for`` (lists, counts, /metrics).
The central view serves its page through the same functions.
"""

from host_tools.protocol import alerts as alert_kinds
from host_tools.protocol.tablestate import HAND_POSITIONS
from firmware.link import events_schema as E

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
# Kinds that tell a side bet's expectation: surveillance only, and below
# surveillance not even that one exists (lists, counts, acknowledgements, metrics).
SECRET_KINDS = frozenset(("edge",))
# Kinds whose detail names the cards that raised them (the cold-deck run, the
# order check's expected card): staff below surveillance get the kind's meaning.
CARD_DETAIL_KINDS = frozenset(("cold_deck", "order_mismatch"))

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


def alert_for(role, alert):
    """One alert (a stored row or a pushed message) as staff ``role`` may
    see it: a kind whose detail names cards says what the kind means instead."""
    if sees_everything(role) or alert.get("kind") not in CARD_DETAIL_KINDS:
        return alert
    return dict(alert, detail=alert_kinds.KINDS[alert["kind"]][2])


def alerts_for(role, alerts):
    """The alerts ``role`` may know of (None: not even that there are any).
    The one rule for lists, counts and metrics alike."""
    if role == PUBLIC:
        return None
    if sees_everything(role):
        return alerts
    return [alert_for(role, a) for a in alerts if a.get("kind") not in SECRET_KINDS]


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
        if "current" in out:
            out["current"] = round_for(role, out["current"], out.get("counts"))
        if "recall" in out:
            out["recall"] = recall_for(role, out["recall"])
    if "alerts" in out:
        out["alerts"] = alerts_for(role, out["alerts"])
    return out


# -- cards: face up in a hand, or not shown below surveillance -------------
#
# A card reaches staff below surveillance only once the table sees it face
# up in a hand. Third cards are placed face up (Ch 8E, 8F). P1, B1, P2 and B2
# are placed face down (Ch 8C) and turned when the point counts are announced
# (Ch 8D(3): the ``counts`` event), so until then a viewer's live round holds
# their places, not their faces. A card disclosed as it is dealt (``up``) is
# face up at once, and so is a disclosed card a rule moves into a hand (an
# ``assign`` that did not come from HELD: 13C(2)(b), 13D). A result shows
# both hands. An irregularity names no card below surveillance (the card
# shows where it lies face up, if it ever does). Never shown: burns (the
# exposed first one included: it is burned), discards, held cards (13A,
# 13B(2)) until their round turns them, a face-down card of a round voided
# before its counts, the tallies of the shoe, and whatever tells a deck order.

THIRD_POSITIONS = HAND_POSITIONS[4:]          # P3, B3
HELD_FROM = "HELD"
# Field kinds of the event schema that name cards or count them; and the
# fields of other kinds that tell where a card is in the set or an order.
_CARD_KINDS = ("card", "cards", "ranks", "tally")
_CARD_PLACES = ("deck", "expected_deck", "position", "pattern", "records")


def _card_fields():
    """{(source, type): fields a role below surveillance may not get},
    read from the event schema itself, so a new card field is hidden from
    the day it is added."""
    out = {}
    for source in (None, "link", "shuffler"):
        for kind, fields in E.table(source).items():
            names = tuple(f[0] for f in fields if f[1] in _CARD_KINDS or f[0] in _CARD_PLACES
                          or (f[0] == "cards" and f[1] == "strs"))
            if names:
                out[(source, kind)] = names
    return out


CARD_FIELDS = _card_fields()


def _face_up(event):
    """The fields of a game event that show a card face up in a hand."""
    kind, pos = event.get("type"), event.get("pos")
    if kind == "result":
        return CARD_FIELDS.get((None, "result"), ())
    if kind == "card" and (pos in THIRD_POSITIONS or (pos in HAND_POSITIONS and event.get("up") is True)):
        return ("card", "deck")
    if kind == "assign" and pos in HAND_POSITIONS and event.get("from") != HELD_FROM:
        return ("card",)
    return ()  # an irregularity names no card: a disclosed one shows where it lies face up in a hand


def event_for(role, event):
    """A committed event (any source) as staff ``role`` may see it: the
    fields of CARD_FIELDS that do not show a card face up in a hand are
    left out. (The public is sent no events: ``message_for``.)"""
    if sees_everything(role):
        return event
    hidden = CARD_FIELDS.get((event.get("source"), event.get("type")))
    if not hidden:
        return event
    shown = _face_up(event) if event.get("source") is None else ()
    drop = [f for f in hidden if f in event and f not in shown]
    if not drop:
        return event
    return {k: v for k, v in event.items() if k not in drop}


def _shown_in_round(pos, turned):
    return pos in THIRD_POSITIONS or (turned and pos in HAND_POSITIONS)


def round_for(role, current, counts):
    """The round being dealt (``TableState``'s ``current``) as ``role`` may
    see it; ``counts``: the round's announced point counts, or None. A card
    still face down keeps its place with no face: [pos, None]."""
    if current is None or sees_everything(role):
        return current
    turned = counts is not None
    return dict(current, cards=[[pos, card if _shown_in_round(pos, turned) else None]
                                for pos, card in current.get("cards", ())])


def recall_for(role, rounds):
    """The recall's rounds (``RoundBook`` records) as ``role`` may see them:
    a void round's cards that were never turned lose their faces, and the
    irregularities their cards."""
    if rounds is None or sees_everything(role):
        return rounds
    out = []
    for r in rounds:
        turned = r.get("counts") is not None
        r = dict(r, cards=[[pos, card if _shown_in_round(pos, turned) else None]
                           for pos, card in r.get("cards", ())],
                 irregularities=[event_for(role, dict(i, type="irregularity")) for i in r.get("irregularities", ())])
        for i in r["irregularities"]:
            del i["type"]
        if r.get("status") != "result":  # a result's hands are face up; a void's are what was turned
            r["player"] = [c for p, c in r["cards"] if c is not None and p[0] == "P"]
            r["banker"] = [c for p, c in r["cards"] if c is not None and p[0] == "B"]
        out.append(r)
    return out


def live_for(role, live):
    """An event message's ``live`` (``TableFold.live``) as staff ``role`` may
    see it: without what surveillance alone sees (the ranks left), the
    round without the cards not face up in a hand."""
    if live is None or sees_everything(role):
        return live
    if any(k in live for k in STAFF_HIDDEN):
        live = {k: v for k, v in live.items() if k not in STAFF_HIDDEN}
    if "current" not in live:
        return live
    return dict(live, current=round_for(role, live["current"], live.get("counts")))


def message_for(role, message):
    """A pushed message as ``role`` may receive it, or None (not sent).

    The public hears only that a round or a shoe ended, with the result: a
    push per card would tell when the burn is done and how many cards went.
    Staff below surveillance get every message but an alert or an
    acknowledgement of a kind only surveillance may know of, each event and
    its live round without the cards not face up in a hand.
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
    if kind in ("alert", "ack"):
        if message.get("kind") in SECRET_KINDS:
            return None
        return alert_for(role, message) if kind == "alert" else message
    if kind == "event" and isinstance(message.get("event"), dict):
        event, live = event_for(role, message["event"]), live_for(role, message.get("live"))
        if event is not message["event"] or live is not message.get("live"):
            message = dict(message, event=event, live=live)
    return message
