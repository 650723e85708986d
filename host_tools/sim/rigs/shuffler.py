"""An emulated shuffler with a bridge storing its events: the arrangement
`shoe demo --shuffler` and the shuffler's device tests share.

``wait(pred)`` blocks until an event the bridge stored satisfies ``pred``
(the store is where the pit learns anything, so that is where progress is
measured); ``reveal_from`` (host_tools/shuffler/audit.py) rebuilds the
reveal the shuffler sent in parts.
"""

import time

from host_tools.sim.rigs.bridge import ThreadedBridge
from host_tools.shuffler.audit import reveal_from  # noqa: F401  (the one reading of a reveal)
from host_tools.sim.shuffler_emulate import ShufflerEmulator


class Timeout(RuntimeError):
    pass


class Rig:
    def __init__(self, directory, db_path, device_id="SHUF1", decks=1, seed=1, bridge=True, **emu_options):
        self.emu = ShufflerEmulator(directory, device_id, decks=decks, seed=seed, **emu_options)
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
