"""The shuffler's end of the authenticated link v2: the shoe's Session, as is.

The link (hello, signed and chained events, acks, retransmission, the
journal and its loss marker, commands) is device-neutral; only the shoe's
inputs are not. The shuffler's events are not functions of replayable
inputs (they depend on fresh entropy and on the mechanism), so each is
journaled literally (an EVENT record) before it is queued, exactly as the
shoe journals its link events: a power cut loses none, and the boot replay
rebuilds the seq counter and the unacked events byte for byte. Once the
host has acked everything, a grown journal is compacted (maybe_compact). The shoe's
game object stays idle (no shoe is ever started), so the replay and the
refill pass the literal events straight through.

Every shuffler event carries ``"source":"shuffler"``; the host checks it
against shuffler/schema.py.
"""

import json

from link import journal as _journal
from link.session import Session

SOURCE = "shuffler"
COMPACT_BYTES = 16384   # journal size beyond which an idle, fully acked shuffler starts a new one


class ShufflerSession(Session):
    def send(self, event):
        """Journal one event (a dict) and queue it for the host."""
        event["source"] = SOURCE
        body = json.dumps(event).encode()
        if self.tilt is None and self.journal.f is not None:
            self.journal.blob(_journal.EVENT, body, 0, len(body))
        self._emit(body, len(body))

    def send_all(self, events):
        for ev in events:
            self.send(ev)

    def maybe_compact(self, limit=COMPACT_BYTES):
        """The shoe starts a short journal at every new shoe; the shuffler
        has no shoes, so it does the same whenever the host has acked every
        event and the journal has grown past ``limit``: a new generation
        holding only the base (the acked seq and its tag), as the shoe's
        compaction writes it. Nothing unacked is in flight, so nothing the
        host lacks is dropped. True when it compacted."""
        j = self.journal
        if (self.tilt is not None or j.f is None or self.spilled or self.tag_stale
                or self.acked != self.seq or self.outbox.count or j.size <= limit):
            return False
        j.compact(self.acked, self.acked, self.counter, self.acked_tag, ())
        self.journaled_ack = self.acked
        self.last_checkpoint = min(self.last_checkpoint, self.acked)
        return True

    # The shoe's inputs: a shuffler deals no game. A host command that would
    # start one (`shoe`) is answered with an error, and nothing changes.
    def new_shoe(self, *args, **kw):
        self.error("new shoe refused: this device is a shuffler")

    def _not_a_shoe(self, *args):
        self.error("refused: this device is a shuffler, not a shoe")

    bets = card = cover = exposed = empty = _not_a_shoe
