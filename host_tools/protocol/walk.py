"""One shoe's chain walked forward: candidates in; stored rows, holds and
refusals out.

Pure (no I/O, no store): the central consumer (host_tools/central/ingest.py)
gives it a batch's messages and held rows for one shoe, `shoe verify`
(host_tools/verify.py) gives it a record's rows one seq at a time, and both
get the same verdicts from the one chain acceptance (chain.accept) in the
same order. A candidate is anything with ``seq``, ``body`` (bytes), ``mac``,
``text`` (the body decoded, or None) and ``held`` (it came from the record's
held rows, not a new message).
"""

import collections

from host_tools.protocol import alerts, chain
from host_tools.protocol.untrusted import excerpt

# A stored row offered to the walk (`shoe verify`); the consumer's messages
# (central/ingest.Msg) carry the same fields.
Candidate = collections.namedtuple("Candidate", "seq body mac text held")


class Step:
    """What one seq's candidates came to: ``winner`` (the candidate that
    extends the chain, its parsed ``event`` and the ``verdict``), the
    ``refused`` ones as (candidate, alert kind, detail), the ``waiting`` ones
    (a new shoe's event that is not its first), and ``malformed`` when the
    shoe's key signed one that fails the event schema."""

    __slots__ = ("winner", "event", "verdict", "refused", "waiting", "malformed")

    def __init__(self):
        self.winner = self.event = self.verdict = None
        self.refused, self.waiting = [], []
        self.malformed = False


class Walk:
    """A shoe's chain head, advanced one seq at a time.

    ``start(seq)`` is the PREV a shoe's first event may link to when the
    record holds none of it yet (None: it may not start there). ``schema``:
    a signed event that fails the event schema is refused (a writer's gate);
    without it, it still links (the verifier asks who signed, not whether it
    parses).
    """

    def __init__(self, fkey, shoe_id, head, start, schema=True):
        self.fkey, self.shoe_id = fkey, shoe_id
        self.head = head
        self.start = start
        self.schema = schema

    def next_seq(self, seqs):
        """The seq the chain takes next, of the candidate ``seqs``."""
        return min(seqs) if self.head.last_seq is None else self.head.last_seq + 1

    def step(self, seq, candidates):
        """Try the candidates for ``seq`` (in order; the first that verifies wins)."""
        out = Step()
        for m in candidates:
            if self.head.last_seq is not None:
                head = self.head
            else:
                head = chain.Head(seq, self.start(seq))
            if head.last_seq is None and head.first_prev is None:
                out.waiting.append(m)  # a new shoe's event, not its first: wait for that one
                continue
            verdict = chain.accept(self.fkey, self.shoe_id, head, seq, m.body, m.mac or "", text=m.text)
            links = verdict.kind == chain.STORED or (not self.schema and verdict.kind == chain.MALFORMED)
            if out.winner is None and links:
                out.winner, out.verdict, out.event = m, verdict, verdict.event
            elif out.winner is None and verdict.kind == chain.MALFORMED:
                # The shoe's key signed it, but it fails the link schema (the
                # same check the bridge makes): an alert, never a row; the
                # shoe's record stops before it.
                out.refused.append((m, alerts.FOR_VERDICT[chain.MALFORMED], "seq %d: signed by the shoe "
                                    "but %s: not stored: %s" % (seq, verdict.why, excerpt(m.body))))
                out.malformed = True
            else:
                out.refused.append((m, alerts.FOR_VERDICT[chain.FORGED], "seq %d: tag does not verify "
                                    "under the shoe's key after seq %s: %s" % (
                                        seq, self.head.last_seq, excerpt(m.body))))
        if out.winner is not None:
            for m in out.waiting:
                out.refused.append((m, "forged_event", "seq %d: a second event for the shoe's first "
                                    "stored seq: %s" % (seq, excerpt(m.body))))
            out.waiting = []
            if self.head.last_seq is None:   # the chain starts here, at the PREV its tag verified under
                self.head = chain.Head(seq, out.verdict.prev or self.start(seq))
            self.head = self.head.extended(seq, out.winner.mac)
        return out


class Result:
    """A shoe's batch walked: ``stored`` as (candidate, event) in seq order,
    ``refused`` as (candidate, alert kind, detail), ``settled`` (held
    candidates decided either way, to take out of the held rows), ``left``
    (candidates that still wait for a predecessor) and the chain ``head``."""

    __slots__ = ("stored", "refused", "settled", "left", "head")

    def __init__(self):
        self.stored, self.refused, self.settled, self.left = [], [], [], []
        self.head = None


def walk(fkey, shoe_id, head, candidates, start):
    """Advance ``head`` through ``candidates`` ({seq: [candidate]}, each seq's
    distinct ones; emptied as it goes) as far as the chain links. The
    candidates at or below the head are the caller's (a collision with a
    stored row needs the record)."""
    w = Walk(fkey, shoe_id, head, start)
    out = Result()
    while candidates:
        nxt = w.next_seq(candidates)
        if nxt not in candidates:
            break
        tried = candidates.pop(nxt)
        step = w.step(nxt, tried)
        out.refused += step.refused
        if step.winner is None:
            out.settled += [m for m in tried if m.held and m not in step.waiting]
            if step.waiting and not step.malformed:
                candidates[nxt] = step.waiting
            break
        out.settled += [m for m in tried if m.held]
        out.stored.append((step.winner, step.event))
    out.left = [m for seq_c in candidates.values() for m in seq_c]
    out.head = w.head
    return out
