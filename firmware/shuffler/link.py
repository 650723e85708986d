"""The shuffler's end of the authenticated link v2: the device-agnostic
link (link/core.py: hello, signed and chained events, acks, retransmission,
the journal and its loss marker, the link's commands status, time and
clear_tilt), without the shoe's game.

The shuffler's events are not functions of replayable inputs (they depend
on fresh entropy and on the mechanism), so each is journaled literally (an
EVENT record) before it is queued, exactly as the shoe journals its link
events: a power cut loses none, and the boot replay (link/replay.py)
rebuilds the seq counter and the unacked events byte for byte; a refill
brings spilled ones back the same way. Once the host has acked everything,
a grown journal is compacted (maybe_compact). The shoe's commands (`shoe`,
`bets`, `exposed`) are not in its table: a host that sends one gets an
`unknown_command` error.

A technician's probes (`shoe acceptance --device shuffler`):
``sensor`` (the mechanism's sensors as they read now), ``cycle`` (one card
through the mechanism and back, each sensor's levels on the way) and the
secure element's ``secure`` and ``sign``. They are answered by
shuffler/probes.py, loaded for the question and let go after it
(lazy.unload), and only while the machine is idle and holds no batch: a
shuffler in play never carries their code.

Every shuffler event carries ``"source":"shuffler"``; the host checks it
against shuffler/schema.py.
"""

import json

from link import journal as _journal
from link import reports
from link.commands import SHUFFLER_COMMANDS
from link.core import Link

SOURCE = "shuffler"
COMPACT_BYTES = 16384   # journal size beyond which an idle, fully acked shuffler starts a new one
# The shuffler's outbox: 1.5 KiB and 12 slots, not the shoe's 4 KiB and
# 32 (link/outbox.py). It sends a few events per batch, in bursts only at
# a reveal (parts of at most 48 records, under 1 KiB each, so any one event
# fits), and whatever does not fit waits in the journal and is refilled
# from there (link/core.py), as on the shoe; the 3.2 KB saved in 32 bits
# pay for the secure element's driver (docs/shuffler.md, "Footprint").
OUTBOX_BYTES = 1536
OUTBOX_SLOTS = 12


def run(s, args):
    """Every probe: shuffler/probes.py, loaded for it and let go
    (its name given as text, so that the boot interns none of it)."""
    probes = __import__("shuffler.probes", None, None, ("run",))
    try:
        probes.run(s, args)
    finally:
        from lazy import unload
        unload("shuffler.probes")


ACTIONS = {"sensor": run, "cycle": run, "secure": run, "sign": run}
ACTIONS.update(Link.ACTIONS)   # the link's own (link/dispatch.py)


class ShufflerSession(Link):
    DEVICE = "shuffler"
    COMMANDS = SHUFFLER_COMMANDS   # link/commands.py: the pit checks a body against the same table
    ACTIONS = ACTIONS
    device = None   # the Device, once booted (main.py): the probes need its mechanism
    wanted = -1   # the seq a checkpoint must cover (want_checkpoint); -1: none asked

    def want_checkpoint(self):
        """A checkpoint covering every event sent so far, at the next pass
        between inputs (signed by the secure element on a board that has
        one, link/core.py). The device asks at each seal and at the end of
        each reveal: a shuffler sends a few dozen events per batch, so the
        link's every-256-events checkpoint alone would leave a batch's whole
        custody unsigned for days."""
        self.wanted = self.seq

    def checkpoint_due(self):
        return self.wanted >= self.last_checkpoint or Link.checkpoint_due(self)

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

    def error(self, message):
        """An input the shuffler cannot take (an operator line, an internal
        error): ``{"type":"error","message":...}``, the event a shoe's game
        writes for its refused inputs, journaled literally."""
        o = self.out
        o.reset()
        o.raw(b'{"type":"error","message":')
        o.text(message if len(message) <= reports.TEXT_MAX else message[:reports.TEXT_MAX] + "...")
        self.link_send()

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
