"""The shuffler's state for the pit page, folded from its stored events.

A pit table whose port has a shuffler on it (the device's events carry
``"source":"shuffler"``) shows: each batch's custody state and id, which
batch is in play (released to the shoe), which is stored and whether its
seal holds, the door, a tilt, and the latest faults. Only what the events
say: the order never reaches the pit before the reveal, and this view
keeps no card of it.
"""

FAULTS_KEPT = 5


class ShufflerView:
    def __init__(self):
        self.seen = False
        self.batches = {"A": {"state": "empty", "id": None}, "B": {"state": "empty", "id": None}}
        self.door = None
        self.tilt = None
        self.faults = []

    def fold(self, event):
        self.seen = True
        kind = event.get("type")
        if kind == "custody":
            b = self.batches.get(event.get("batch"))
            if b is None:
                return
            b["state"] = event.get("to")
            if "id" in event:
                b["id"] = event["id"]
            if event.get("to") == "broken":
                self._fault("batch %s custody broken (%s)" % (event.get("batch"), event.get("reason")))
            elif event.get("to") == "rejected":
                self._fault("batch %s rejected: %s bad, %s missing"
                            % (event.get("batch"), event.get("bad"), event.get("missing")))
        elif kind == "mech_fault":
            self._fault("mechanism: %s (batch %s, card %s)" % (event.get("reason"), event.get("batch"),
                                                              event.get("card")))
        elif kind == "tilt":
            self.tilt = event.get("reason")
            self._fault("tilt: %s" % self.tilt)
        elif kind == "tilt_cleared":
            self.tilt = None
        elif kind == "door":
            self.door = {"shut": event.get("shut"), "locked": event.get("locked")}
        elif kind == "batch_card":
            self._fault("intake: %s %s" % (event.get("kind"), event.get("name")))

    def _fault(self, text):
        self.faults.append(text)
        del self.faults[:-FAULTS_KEPT]

    def state(self):
        """The JSON the pit's /api/tables gives for this table's shuffler."""
        in_play = [k for k, b in self.batches.items() if b["state"] == "released"]
        stored = [k for k, b in self.batches.items() if b["state"] not in ("empty", "released")]
        return {"batches": {k: dict(b) for k, b in self.batches.items()},
                "in_play": in_play[0] if in_play else None,
                "stored": stored[0] if stored else None,
                "stored_sealed": bool(stored) and self.batches[stored[0]]["state"] == "sealed",
                "door": self.door, "tilt": self.tilt, "faults": list(self.faults)}
