"""The pit's watch over the shuffler's orders (docs/shuffler.md, "Fresh and
bound"): what the shoe armed against what the shuffler released for it.

The pit relays the shuffler's sealed order to the shoe unread
(host_tools/protocol/orderrelay.py); whatever the relay did, the record
says what came of it, signed by each device: the shuffler's ``order`` event
names the batch it released for a shoe and its serial, and a paired shoe's
``shoe`` event names the order it armed, or null and why none. From those:

- ``order_unchecked`` (warning): a paired shoe is dealt without an armed
  order (the order was dropped, lost in a power cut, or never sent);
- ``order_not_released`` (critical): the armed order is not the last one
  the shuffler released for that shoe;
- ``order_stale`` / ``order_foreign`` (critical): the shoe's own
  irregularity for an order it refused (Ch 5H(4)).

Kinds and severities are host_tools/protocol/alerts.py's; the fields the
link schema's (firmware/link/events_schema.py). ``judge`` is the one rule;
``OrderWatch`` runs it on the pit's committed events (its own thread, as the
edge monitor), ``replay`` over a store's events in the order received.
"""

import json

from host_tools.pit.worker import Worker
from host_tools.protocol import alerts
from firmware.link import events_schema as E
from firmware.link import order as _order

UNCHECKED, NOT_RELEASED = "order_unchecked", "order_not_released"
for _kind in (UNCHECKED, NOT_RELEASED) + E.ORDER_REFUSED:
    assert _kind in alerts.KINDS, _kind
E.require("shoe", E.SHOE_ORDER, E.SHOE_SERIAL, E.SHOE_UNCHECKED)
E.require("order", "shoe", "id", "serial", "part", source="shuffler")


def _released(event):
    """(shoe id, (batch id, serial)) of a shuffler's order event's first part, else None."""
    if event.get("source") != "shuffler" or event.get("type") != _order.NAME or event.get("part") != 1:
        return None
    return event["shoe"], (event["id"], event.get("serial"))


def judge(released, shoe_id, event):
    """The alert (kind, detail) one committed event calls for, or None.
    ``released`` maps a shoe id to the (batch id, serial) the shuffler last
    released for it, and is updated here from the shuffler's events; a
    callable ``released.missing(shoe_id)`` may look further (the store)."""
    got = _released(event)
    if got is not None:
        released[got[0]] = got[1]
        return None
    if event.get("source") is not None:
        return None
    if event.get("type") == "irregularity" and event.get("rule") in E.ORDER_REFUSED:
        return event["rule"], "the shoe refused an order (%s): %s" % (event.get("section"), event.get("detail"))
    if event.get("type") != "shoe" or E.SHOE_ORDER not in event:
        return None  # not a shoe paired with a shuffler: nothing to check against
    armed = event[E.SHOE_ORDER]
    if armed is None:
        return UNCHECKED, "batch %s is dealt without the real-time check: %s" % (
            event.get("batch"), event.get(E.SHOE_UNCHECKED, "no order armed"))
    want = released.get(shoe_id)
    if want is None and hasattr(released, "missing"):
        want = released.missing(shoe_id)
    if want is None or want != (armed, event.get(E.SHOE_SERIAL)):
        return NOT_RELEASED, "the shoe armed order %s (serial %s), but %s" % (
            armed, event.get(E.SHOE_SERIAL), "the shuffler released no order for it" if want is None
            else "the shuffler's last release for it is %s (serial %s)" % want)
    return None


class _FromStore(dict):
    """The released map, falling back on the store after a pit restart."""

    def __init__(self, store):
        dict.__init__(self)
        self.store = store

    def missing(self, shoe_id):
        for (text,) in self.store.db.execute(
                "SELECT event FROM events WHERE type = ? ORDER BY received DESC LIMIT 400", (_order.NAME,)):
            try:
                got = _released(json.loads(text))
            except (ValueError, AttributeError, KeyError):
                continue
            if got is not None and got[0] == shoe_id:
                return got[1]
        return None


class OrderWatch(Worker):
    """``listener`` goes into ``Pit.listeners``; ``start``/``close`` run the worker."""

    NAME = "pit-orders"

    def __init__(self, pit, store_path):
        Worker.__init__(self, pit, store_path)
        self.released = None

    def wants(self, message):
        if message.get("type") != "event":
            return False
        event = message.get("event") or {}
        return _released(event) is not None or (event.get("source") is None and event.get("type") in (
            "shoe", "irregularity"))

    def handle(self, store, message):
        if self.released is None:
            self.released = _FromStore(store)
        verdict = judge(self.released, message.get("shoe"), message["event"])
        if verdict is None:
            return
        kind, detail = verdict
        severity = alerts.severity(kind)
        shoe, name = message.get("shoe"), message.get("table")
        rid = store.alert(shoe, severity, kind, detail)
        self.pit.publish({"type": "alert", "table": name, "shoe": shoe, "severity": severity,
                          "kind": kind, "detail": detail, "id": rid})


def replay(store):
    """The alerts ``judge`` calls for over every event of ``store``, in the
    order received: [{"shoe", "kind", "severity", "detail"}]."""
    released, out = {}, []
    for shoe_id, text in store.db.execute("SELECT shoe_id, event FROM events ORDER BY received, seq"):
        try:
            event = json.loads(text)
        except ValueError:
            continue
        verdict = judge(released, shoe_id, event)
        if verdict is not None:
            out.append({"shoe": shoe_id, "kind": verdict[0], "severity": alerts.severity(verdict[0]),
                        "detail": verdict[1]})
    return out
