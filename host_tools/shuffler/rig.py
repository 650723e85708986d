"""An emulated shuffler with a bridge storing its events: the arrangement
`shoe demo --shuffler` and the shuffler's device tests share.

``wait(pred)`` blocks until an event the bridge stored satisfies ``pred``
(the store is where the pit learns anything, so that is where progress is
measured); ``reveal_doc(batch_id)`` rebuilds the reveal the shuffler sent
in parts, as host_tools/shuffler/audit.py reads it from a store.
"""

import time

from host_tools.bridge.rig import ThreadedBridge
from host_tools.shuffler.emulate import ShufflerEmulator


class Timeout(RuntimeError):
    pass


class Rig:
    def __init__(self, directory, db_path, device_id="SHUF1", decks=1, seed=1, bridge=True):
        self.emu = ShufflerEmulator(directory, device_id, decks=decks, seed=seed)
        self.db_path = db_path
        self.bridge = None
        self.emu.start()
        if bridge:
            self.bridge = ThreadedBridge(db_path, self.emu.host_path, self.emu.key)
        self.emu.wait_booted()

    @property
    def events(self):
        return [e for _s, e in self.bridge.events]

    def shuffler_events(self, kind=None):
        return [e for e in self.events if e.get("source") == "shuffler" and (kind is None or e["type"] == kind)]

    def wait(self, pred, what, timeout=60.0, since=0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            evs = self.bridge.events
            for _s, e in evs[since:]:
                if pred(e):
                    return e
            if self.emu.proc.poll() is not None:
                raise Timeout("the shuffler VM exited (%s) waiting for %s; see %s"
                              % (self.emu.proc.returncode, what, self.emu.stderr_path))
            time.sleep(0.02)
        raise Timeout("no %s stored within %.0f s (last events: %s)"
                      % (what, timeout, [e for _s, e in self.bridge.events[-4:]]))

    def custody(self, batch, to, timeout=60.0, since=0):
        return self.wait(lambda e: e.get("type") == "custody" and e.get("batch") == batch and e.get("to") == to,
                         "custody %s -> %s" % (batch, to), timeout, since)

    def mark(self):
        return len(self.bridge.events)

    def load(self, batch, uids):
        """Put cards in the tray and press load: returns the event mark before it."""
        since = self.mark()
        self.emu.feed(uids)
        self.emu.press("load %s" % batch)
        return since

    def close(self):
        if self.bridge is not None:
            self.bridge.close()
        self.emu.close()


def reveal_from(events, batch_id):
    """The reveal file's fields (audit.parse_reveal) from a shuffler's stored
    ``reveal`` and ``returned`` events for one batch id, or None while the
    reveal is incomplete."""
    parts = {}
    back = {}
    for e in events:
        if e.get("source") != "shuffler" or e.get("id") != batch_id:
            continue
        if e.get("type") == "reveal":
            parts[e["part"]] = e
        elif e.get("type") == "returned":
            back[e["part"]] = e
    if not parts or len(parts) != next(iter(parts.values()))["parts"]:
        return None
    recs = []
    for k in sorted(parts):
        text = parts[k]["records"]
        recs += [int(text[i:i + 4], 16) for i in range(0, len(text), 4)]
    first = parts[1]
    doc = {"batch_id": batch_id, "records": recs, "salt": first["salt"],
           "commitment": first["commitment"], "returned": []}
    if back and len(back) == next(iter(back.values()))["parts"]:
        for k in sorted(back):
            doc["returned"] += back[k]["cards"]
    return doc
