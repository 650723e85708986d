"""The edge monitor for every table of a pit, on one worker thread of its own.

`shoe bridge` runs the analysis package's EdgeMonitor on its console; the
pit runs the same monitor (made by the bridge's own ``edge_monitor_factory``)
here, and what it raises becomes a stored alert (kind ``edge``) that the
page shows and a supervisor acknowledges like any other.

Why a thread apart: pricing every offered wager after a result costs a few
ms per round (`shoe bench analysis`), which must delay neither a table's
acks (its bridge thread) nor the pushes to the page (the event loop). The
monitor is advisory: it may lag, and a burst it cannot queue makes it
re-read that table's card set from the store rather than price a wrong
composition. A table seen for the first time, or with a new shoe id, is
primed from the store too (its shoe and card events; no result is priced).
"""

import logging

from host_tools.bridge.command import edge_monitor_factory
from host_tools.pit import report
from host_tools.pit.worker import Worker

log = logging.getLogger("shoe.pit.edges")

WATCHED = ("shoe", "card", "result")  # the events that change a monitor


class _Table:
    __slots__ = ("shoe", "monitor", "seq")

    def __init__(self, shoe):
        self.shoe, self.monitor, self.seq = shoe, None, 0


class EdgeWatch(Worker):
    """``listener`` goes into ``Pit.listeners``; ``start``/``close`` run the worker."""

    NAME = "pit-edges"

    def __init__(self, pit, store_path, factory=None):
        Worker.__init__(self, pit, store_path)
        self.factory = factory or edge_monitor_factory()
        self.tables = {}
        self.lost = set()  # tables whose events were dropped: re-read from the store

    def wants(self, message):
        if message.get("type") != "event" or self.factory is None:
            return False
        event = message.get("event") or {}
        return event.get("source") is None and event.get("type") in WATCHED

    def dropped(self, message):
        self.lost.add(message.get("table"))

    def handle(self, store, message):
        """One committed event of one table into its monitor; raise what it says."""
        name, shoe, seq, event = message["table"], message.get("shoe"), message["seq"], message["event"]
        state = self.tables.get(name)
        if state is None or state.shoe != shoe or name in self.lost:
            self.lost.discard(name)
            state = self.tables[name] = self._prime(store, shoe)
        if seq <= state.seq:
            return  # already read from the store by the prime
        state.seq = seq
        if event["type"] == "shoe":
            state.monitor = self.factory(event)
        if state.monitor is None:
            return
        for alert in state.monitor.observe(event) or ():
            self._raise(store, name, shoe, alert)

    def _prime(self, store, shoe):
        state = _Table(shoe)
        if shoe is None:
            return state
        for seq, _t, event in report.card_set_events(store, shoe):
            state.seq = max(state.seq, seq)
            if event["type"] == "shoe":
                state.monitor = self.factory(event)
            elif event["type"] == "card" and state.monitor is not None:
                state.monitor.observe(event)
        return state

    def _raise(self, store, name, shoe, alert):
        kind = alert.get("type")
        if "house_edge" in alert:
            detail = "%s round %s: %s house edge %.3f%% with %s cards left" % (
                kind, alert.get("round"), alert.get("wager"), 100.0 * alert["house_edge"],
                alert.get("cards_left"))
        else:
            detail = "%s: %s" % (kind, alert.get("message"))
        severity = "warning" if kind == "edge_alert" else "info"
        rid = store.alert(shoe, severity, "edge", detail)
        self.pit.publish({"type": "alert", "table": name, "shoe": shoe, "severity": severity,
                          "kind": "edge", "detail": detail, "id": rid})
