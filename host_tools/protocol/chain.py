"""The one chain acceptance: what a tagged event means for a shoe's record.

The bridge (before it stores and acks), the pit store's writers, `shoe
central` (before a row reaches PostgreSQL) and `shoe verify` (over what was
stored) all ask ``accept`` and act on its verdict, so no two of them can
disagree on a first seq, a gap, a duplicate or a fork. The verdicts, and
the alert kind each becomes, are listed in docs/protocol.md ("Chain
acceptance") and defined once here.

Tag of an event (link v2, firmware/link/host_frames.py)::

    HMAC-SHA256-128(K_frames, SHOE_ID " E" SEQ " " PREV " " event bytes)

PREV is the previous event's tag, the chain's ``first_prev`` for its first
stored event, or 32 zeros where the shoe may restart its chain
(``may_restart``).
"""

import hmac as _hmac

from host_tools.protocol import untrusted

from firmware.link import auth as _auth
from firmware.link import events_schema as _events_schema
from firmware.link import host_frames as _host_frames
from firmware.link import proto as _proto

# Verdicts of ``accept``: every component uses these words, and the alert
# kinds below, for the same situations.
STORED = "stored"              # extends the chain: store it, then ack it
DUPLICATE = "duplicate"        # byte for byte the stored event at this seq: drop it, ack again
GAP = "gap"                    # ahead of the chain's head: an earlier event is missing (resend fills it)
BEFORE_FIRST = "before_first"  # before the record's first seq (acknowledged into another record)
FORGED = "forged"              # the tag does not verify under the shoe's key in this place
FORK = "fork"                  # the shoe's key signed a second, different event for a stored seq
MALFORMED = "malformed"        # the shoe's key signed it, but it fails the event schema

VERDICTS = (STORED, DUPLICATE, GAP, BEFORE_FIRST, FORGED, FORK, MALFORMED)

# How a tag verified.
LINKED = "linked"    # under the previous event's tag
RESTART = "restart"  # under zeros, where the shoe may restart its chain

ZERO_HEX = _auth.ZERO_MAC.decode("ascii")


class Head:
    """What a record holds of one shoe's chain: where it starts (``first_seq``,
    and ``first_prev``, the PREV of that first event) and where it ends
    (``last_seq`` and its tag ``last_mac``). An empty record has no last_seq;
    its first_seq and first_prev say where it may start (None: anywhere)."""

    __slots__ = ("first_seq", "first_prev", "last_seq", "last_mac")

    def __init__(self, first_seq=None, first_prev=None, last_seq=None, last_mac=None):
        self.first_seq = first_seq
        self.first_prev = first_prev
        self.last_seq = last_seq
        self.last_mac = last_mac

    @classmethod
    def of(cls, row):
        """From a store's ``shoe()`` row (a dict, or None for a shoe it never saw)."""
        if not row:
            return cls()
        return cls(row.get("first_seq"), row.get("first_prev"), row.get("last_seq"),
                   row.get("last_mac"))

    def extended(self, seq, mac):
        """The head after ``seq`` (tag ``mac``) is stored."""
        if self.last_seq is None:
            return Head(seq, self.first_prev, seq, mac)
        return Head(self.first_seq, self.first_prev, seq, mac)

    def expected(self):
        return self.first_seq if self.last_seq is None else self.last_seq + 1


class Verdict:
    """``kind`` (one of VERDICTS), ``why`` (one line for a log or an alert),
    ``event`` (the parsed event, for STORED), ``how`` (LINKED or RESTART, for
    STORED) and ``prev`` (the PREV it verified under, for STORED)."""

    __slots__ = ("kind", "why", "event", "how", "prev")

    def __init__(self, kind, why="", event=None, how=None, prev=None):
        self.kind = kind
        self.why = why
        self.event = event
        self.how = how
        self.prev = prev

    def __repr__(self):
        return "Verdict(%s, %r)" % (self.kind, self.why)


def may_restart(seq, event):
    """Whether the shoe may start a new tag chain (PREV = zeros) at this
    event: at seq 1, and at a link ``tilt`` or ``tilt_cleared`` event, where
    a shoe that lost its journal no longer knows its last tag. Anywhere else
    a restart would let a forger who dropped events splice in a fresh chain.
    ``event`` is the parsed event (a dict) or None when it is not JSON."""
    if seq == 1:
        return True
    return (isinstance(event, dict) and event.get("source") == "link"
            and event.get("type") in _proto.RESTART_TYPES)


def _bytes(v, encoding="ascii"):
    return v.encode(encoding, "replace") if isinstance(v, str) else bytes(v)


def tag_link(fkey, shoe_id, seq, prev, body, tag):
    """How an event's tag verifies: LINKED (under ``prev``), RESTART (under
    zeros, where ``may_restart``), or None: the event is not the key
    holder's, or not in this place."""
    tag = _bytes(tag)
    prev = _bytes(prev or b"")
    body = _bytes(body, "utf-8")
    if len(tag) != _proto.MAC_HEX:
        return None
    if len(prev) == _proto.MAC_HEX and _hmac.compare_digest(
            _host_frames.frame_mac(fkey, shoe_id, _proto.EVENT, seq, prev, body), tag):
        return LINKED
    if prev == _auth.ZERO_MAC:
        return None  # already tried
    event, _why = untrusted.parse_json(body)
    if may_restart(seq, event) and _hmac.compare_digest(
            _host_frames.frame_mac(fkey, shoe_id, _proto.EVENT, seq, _auth.ZERO_MAC, body), tag):
        return RESTART
    return None


def check_body(body):
    """(event, None) when ``body`` is a schema-valid event a store can hold,
    else (None, why): the one schema check before any record keeps an event."""
    event, why = untrusted.parse_json(body)
    if why is None:
        why = _events_schema.check_stored(event)
    return (None, why) if why is not None else (event, None)


def accept(fkey, shoe_id, head, seq, body, tag, stored=None, text=None):
    """The verdict on event ``seq`` (``body`` bytes, ``tag``) for a record
    whose chain is ``head``.

    ``stored(seq)`` gives the record's (body text, tag) at a seq it holds (or
    None); it is asked only for a seq at or below the head, to tell a
    duplicate from a fork from a forgery. Without it such a seq is FORGED
    unless it is byte for byte the head itself. ``text``: ``body`` already
    decoded (UTF-8), when the caller has it: parsed as it is, not decoded
    again (the same verdict: json.loads of UTF-8 bytes decodes them so).
    """
    expected = head.expected()
    if expected is not None and seq > expected:
        return Verdict(GAP, "expected seq %d, got %d" % (expected, seq))
    if expected is not None and seq < expected:
        return _collision(fkey, shoe_id, head, seq, body, tag, stored)
    prev = head.last_mac if head.last_seq is not None else head.first_prev
    if prev is None and seq == 1:
        prev = ZERO_HEX
    if prev is None:
        return Verdict(GAP, "seq %d: where this shoe's chain starts is not known yet" % seq)
    how = tag_link(fkey, shoe_id, seq, prev, body, tag)
    if how is None:
        return Verdict(FORGED, "seq %d: tag does not verify under the shoe's key after seq %s"
                       % (seq, head.last_seq))
    # (a leading BOM is the one input json reads differently as text)
    event, why = check_body(body if text is None or text.startswith("\ufeff") else text)
    if why is not None:
        return Verdict(MALFORMED, "%d fails the link schema (%s)" % (seq, untrusted.shown(why, 120)))
    return Verdict(STORED, "", event, how, prev)


def _collision(fkey, shoe_id, head, seq, body, tag, stored):
    body = _bytes(body, "utf-8")
    tag_text = _bytes(tag).decode("ascii", "replace")
    have = stored(seq) if stored is not None else (
        None if seq != head.last_seq else ("", head.last_mac))
    if have is None:
        if head.first_seq is not None and seq < head.first_seq:
            return Verdict(BEFORE_FIRST, "seq %d is before the record's first seq %d"
                           % (seq, head.first_seq))
        return Verdict(FORGED, "seq %d: already in the record and it cannot be compared" % seq)
    if _bytes(have[0], "utf-8") == body and have[1] == tag_text:
        return Verdict(DUPLICATE)
    if seq == head.first_seq:
        prev = head.first_prev
    else:
        before = stored(seq - 1) if stored is not None else None
        prev = before[1] if before else None
    if prev and tag_link(fkey, shoe_id, seq, prev, body, tag) is not None:
        return Verdict(FORK, "the shoe signed a second, different event for stored seq %d: %s "
                       "(the stored one is kept)" % (seq, untrusted.shown(body, 120)))
    return Verdict(FORGED, "seq %d is stored; a different event the shoe's key did not sign "
                   "arrived for it (a replay or a forgery): %s" % (seq, untrusted.shown(body)))
