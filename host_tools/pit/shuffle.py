"""Shuffle quality at the pit: each table's shoe scored from the record, and
the alerts it raises (kind ``shuffle``, and ``cold_deck`` for the shoe's stop).

The score is host_tools/analysis/shuffle_score.py over the stored ``shoe``
and ``card`` events of the table's shoe: the current card set against the
order decks come in and against the last earlier card set of its batch. The
page and the end-of-shoe report read it (``shoe_score``); ``ShuffleWatch``
raises the alerts on a worker thread of its own, as the edge monitor does
(host_tools/pit/edges.py), so no table thread waits for it:

- at ``shoe_end``, a warning ``shuffle`` alert when the shoe's combined
  p-value is below the score's ALPHA (the shoe was weakly shuffled);
- at the shoe's own ``cold_deck`` irregularity (Ch 5A: the game stopped), a
  critical ``cold_deck`` alert naming the pattern and the cards, so the stop
  is in the alert list a supervisor works through; the supervisor's
  ``clear_stop`` goes through the page or console like every command and
  is in the audit log.
"""

import json
import logging

from host_tools.analysis import shuffle_score as Q
from host_tools.pit.worker import Worker
from firmware.link import events_schema as E

log = logging.getLogger("shoe.pit.shuffle")

SHOES_BACK = 3  # card sets read: the current one and enough before it to find its batch's previous


def _events(store, shoe_id):
    """The stored shoe and card events of the last SHOES_BACK card sets."""
    starts = [r[0] for r in store.db.execute(
        "SELECT seq FROM events WHERE shoe_id = ? AND type = 'shoe' ORDER BY seq DESC LIMIT ?",
        (shoe_id, SHOES_BACK))]
    if not starts:
        return []
    out = []
    for (text,) in store.db.execute(
            "SELECT event FROM events WHERE shoe_id = ? AND seq >= ? AND type IN ('shoe', 'card') ORDER BY seq",
            (shoe_id, min(starts))):
        try:
            event = json.loads(text)
        except ValueError:
            continue  # `shoe verify` names such a row
        if isinstance(event, dict) and event.get("source") is None:
            out.append(event)
    return out


_cache = {}  # (store file, shoe id) -> (newest stored seq, score): the page re-reads often


def shoe_score(store, shoe_id):
    """The current card set's score (shuffle_score.score's dict), or None
    before any card. A row that cannot be scored leaves the score out."""
    if shoe_id is None:
        return None
    newest = store.db.execute("SELECT MAX(seq) FROM events WHERE shoe_id = ?", (shoe_id,)).fetchone()[0]
    key = (id(store), shoe_id)
    hit = _cache.get(key)
    if hit is not None and hit[0] == newest:
        return hit[1]
    result = _score(store, shoe_id)
    if len(_cache) > 256:
        _cache.clear()
    _cache[key] = (newest, result)
    return result


def _score(store, shoe_id):
    try:
        results = Q.score_events(_events(store, shoe_id))
    except Q.ScoreError as exc:
        log.warning("shoe %s: shuffle score skipped: %s", shoe_id, exc)
        return None
    return results[-1] if results else None


def summary(result):
    """One line for an alert or a log."""
    worst = min(result["stats"].items(), key=lambda kv: kv[1]["p"])
    return "shoe's shuffle p = %.3g (below %g): weakest %s %d against %.1f expected (sd %.1f)" % (
        result["p"], result["alpha"], worst[0].replace("_", " "), worst[1]["observed"],
        worst[1]["expected"], worst[1]["sd"])


class ShuffleWatch(Worker):
    """``listener`` goes into ``Pit.listeners``; ``start``/``close`` run the worker."""

    NAME = "pit-shuffle"

    def wants(self, message):
        if message.get("type") != "event":
            return False
        event = message.get("event") or {}
        if event.get("source") is not None:
            return False
        if event.get("type") == "irregularity" and event.get("rule") == E.ORDER_MISMATCH:
            return "position" in event  # the stop itself, not a card drawn while stopped
        return event.get("type") == "shoe_end" or (event.get("type") == "irregularity"
                                                  and event.get("rule") == E.COLD_DECK and "cards" in event)

    def handle(self, store, message):
        """One committed shoe_end or cold_deck event: the alert it calls for."""
        name, shoe, event = message["table"], message.get("shoe"), message["event"]
        if event["type"] == "irregularity" and event.get("rule") == E.ORDER_MISMATCH:
            self._raise(store, name, shoe, "critical", E.ORDER_MISMATCH,
                        "the shoe stopped the game (%s): %s; clear_stop after inspection"
                        % (event.get("section"), event.get("detail")))
            return
        if event["type"] == "irregularity":
            detail = "the shoe stopped the game (%s, %s): %s %s; clear_stop after inspection" % (
                event.get("section"), event.get("rule"), event.get("pattern"), " ".join(event.get("cards") or ()))
            self._raise(store, name, shoe, "critical", E.COLD_DECK, detail)
            return
        result = shoe_score(store, shoe)
        if result is not None and result["weak"]:
            self._raise(store, name, shoe, "warning", "shuffle", summary(result))

    def _raise(self, store, name, shoe, severity, kind, detail):
        rid = store.alert(shoe, severity, kind, detail)
        self.pit.publish({"type": "alert", "table": name, "shoe": shoe, "severity": severity,
                          "kind": kind, "detail": detail, "id": rid})
