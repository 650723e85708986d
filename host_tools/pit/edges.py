"""The edge monitor for every table of a pit, on one worker thread of its own
(in a process of its own in `shoe pit`: edgeproc.py).

`shoe bridge` runs the analysis package's EdgeMonitor on its console; the
pit runs the same monitor (made by host_tools/analysis/monitor.py's
``factory``) here, and what it raises becomes a stored alert (kind ``edge``) that
surveillance's page shows. Its lifecycle (docs/pages.md): a wager turning
player-favourable opens one; the monitor's clear for that wager closes it
(a ``close`` row of the audit log: nobody need acknowledge a condition that
has gone, though a person may earlier), and so does a new card set.

Why a thread apart: pricing every offered wager after a result costs a few
ms per round (`shoe bench analysis`), which must delay neither a table's
acks (its bridge thread) nor the pushes to the page (the event loop). The
monitor is advisory: it may lag, and a burst it cannot queue makes it
re-read that table's card set from the store rather than price a wrong
composition. A table seen for the first time, or with a new shoe id, is
primed from the store too (its shoe and card events; no result is priced).
"""

import logging
import re

from host_tools.analysis.monitor import factory as edge_monitor_factory
from host_tools.view import report
from host_tools.pit.worker import Worker
from host_tools.store import audit

log = logging.getLogger("shoe.pit.edges")

WATCHED = ("shoe", "card", "result")  # the events that change a monitor
CLOSER = "edge-monitor"               # who closes an edge alert (the audit row's user)
KIND = "edge"
# An edge alert's detail (_raise below) names its wager: read back when a
# restarted pit finds edge alerts still open in the store.
_WAGER = re.compile(r"^edge_alert round \S+: (\S+) house edge")


class _Table:
    __slots__ = ("shoe", "monitor", "seq", "open")

    def __init__(self, shoe):
        self.shoe, self.monitor, self.seq = shoe, None, 0
        self.open = {}  # wager -> the id of its open edge alert


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
            state = self.tables[name] = self._prime(store, shoe, name)
        if seq <= state.seq:
            return  # already read from the store by the prime
        state.seq = seq
        if event["type"] == "shoe":
            state.monitor = self.factory(event)
            # a new card set: the last one's edges say nothing any more
            for wager in list(state.open):
                self._close(store, name, shoe, state, wager, "a new card set (seq %s)" % seq)
        if state.monitor is None:
            return
        for alert in state.monitor.observe(event) or ():
            if alert.get("type") == "edge_clear":  # closes its alert; never an alert of its own
                if alert.get("wager") in state.open:
                    self._close(store, name, shoe, state, alert["wager"], "the edge cleared: " + _edge_text(alert))
                continue
            rid = self._raise(store, name, shoe, alert)
            if alert.get("type") == "edge_alert":
                state.open[alert.get("wager")] = rid

    def _prime(self, store, shoe, name=None):
        state = _Table(shoe)
        if shoe is None:
            return state
        started = None
        for seq, received, event in report.card_set_events(store, shoe):
            state.seq = max(state.seq, seq)
            if event["type"] == "shoe":
                state.monitor = self.factory(event)
                started = received
            elif event["type"] == "card" and state.monitor is not None:
                state.monitor.observe(event)
        # Edge alerts still open (a restarted pit): this card set's are closed
        # by their clear (and the monitor does not raise them again meanwhile);
        # an earlier card set's are closed now.
        if name is None:
            return state
        closed = audit.acks(store.db, name)
        for a in store.alerts(shoe):
            m = _WAGER.match(a["detail"] or "") if a["kind"] == KIND else None
            if not m or str(a["id"]) in closed:
                continue
            if started is None or a["time"] < started:
                audit.close(store, name, a["id"], CLOSER, "a new card set")
                continue
            state.open[m.group(1)] = a["id"]
            if state.monitor is not None and hasattr(state.monitor, "favourable"):
                state.monitor.favourable.add(m.group(1))
        return state

    def _raise(self, store, name, shoe, alert):
        kind = alert.get("type")
        detail = _edge_text(alert)
        severity = "warning" if kind == "edge_alert" else "info"
        rid = store.alert(shoe, severity, KIND, detail)
        self.pit.publish({"type": "alert", "table": name, "shoe": shoe, "severity": severity,
                          "kind": KIND, "detail": detail, "id": rid})
        return rid

    def _close(self, store, name, shoe, state, wager, why):
        """An edge alert's lifecycle ends with its clear: no one needs to
        acknowledge a condition that has gone (a person still may, earlier)."""
        rid = state.open.pop(wager)
        if str(rid) in audit.acks(store.db, name):
            return  # acknowledged by a person already
        audit.close(store, name, rid, CLOSER, why)
        # pushed as an edge alert message: roles.py sends it to surveillance only
        self.pit.publish({"type": "alert", "table": name, "shoe": shoe, "kind": KIND, "closed": rid})


def _edge_text(alert):
    kind = alert.get("type")
    if "house_edge" in alert:
        return "%s round %s: %s house edge %.3f%% with %s cards left" % (
            kind, alert.get("round"), alert.get("wager"), 100.0 * alert["house_edge"], alert.get("cards_left"))
    return "%s: %s" % (kind, alert.get("message"))
