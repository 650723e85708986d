"""What a pit puts on JetStream and `shoe central` takes off it, stated once.

One message per stored event. The payload is the event text exactly as the
shoe sent it (the bytes its tag covers); everything else rides in headers,
so the body a consumer verifies is the body the shoe signed, untouched by
any envelope:

- ``Nats-Msg-Id: SHOE:SEQ``: the broker drops a second publish of the same
  event inside the stream's duplicate window. That is an optimisation (less
  traffic, fewer rows to compare), not the guarantee: the window is finite,
  a pit that was cut off longer than it republishes from its high-water mark,
  and a sourced or injected message can carry no id at all. The guarantee is
  the consumer's: PostgreSQL's primary key (shoe_id, seq), ``ON CONFLICT DO
  NOTHING``, and a byte comparison of anything that collides.
- ``Shoe-Id``, ``Shoe-Seq``, ``Shoe-Tag``: the event's place and its link-v2
  tag (docs/protocol.md); ``Shoe-First-Prev`` on the first event a pit store
  holds for a shoe (the PREV its tag was made over); ``Pit-Committed``: the
  pit's commit time (seconds since the epoch), for the latency figures.

Subjects: ``shoe.<casino>.<pit>.<table>``; one stream per casino on the hub
(``SHOE_<casino>``), and in the leaf-node topology one per pit on its leaf
(``PIT_<casino>_<pit>``, in the leaf's JetStream domain), sourced by the hub's.
"""

import re

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")   # casino, pit and table names (subject tokens)
SHOE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")  # what the consumer accepts as a shoe id
DUPLICATE_WINDOW_S = 600.0

H_ID = "Nats-Msg-Id"
H_SHOE = "Shoe-Id"
H_SEQ = "Shoe-Seq"
H_TAG = "Shoe-Tag"
H_FIRST_PREV = "Shoe-First-Prev"
H_COMMITTED = "Pit-Committed"
UNASSIGNED = "unassigned"   # the table token of a shoe no table has claimed yet


def subject(casino, pit, table):
    return "shoe.%s.%s.%s" % (casino, pit, table or UNASSIGNED)


def casino_subjects(casino):
    return "shoe.%s.>" % casino


def pit_subjects(casino, pit):
    return "shoe.%s.%s.>" % (casino, pit)


def casino_stream(casino):
    return "SHOE_%s" % casino


def pit_stream(casino, pit):
    return "PIT_%s_%s" % (casino, pit)


def msg_id(shoe_id, seq):
    return "%s:%d" % (shoe_id, seq)


def headers(shoe_id, seq, tag, committed, first_prev=None):
    h = {H_ID: msg_id(shoe_id, seq), H_SHOE: shoe_id, H_SEQ: str(seq), H_TAG: tag or "",
         H_COMMITTED: "%.6f" % committed}
    if first_prev is not None:
        h[H_FIRST_PREV] = first_prev
    return h


class Malformed(ValueError):
    """A message that is not a pit's event (missing or bad headers)."""


def decode(subject_text, hdrs, data):
    """(casino, pit, table, shoe, seq, tag, first_prev, committed, body bytes)
    of a message, or Malformed with the reason. Nothing here is trusted
    yet: the consumer checks the tag before any of it counts."""
    parts = subject_text.split(".")
    if len(parts) != 4 or parts[0] != "shoe":
        raise Malformed("subject %r is not shoe.CASINO.PIT.TABLE" % subject_text[:80])
    hdrs = hdrs or {}
    shoe = hdrs.get(H_SHOE)
    seq = hdrs.get(H_SEQ, "")
    if not shoe or not seq.isdigit() or int(seq) < 1:
        raise Malformed("no %s/%s headers" % (H_SHOE, H_SEQ))
    try:
        committed = float(hdrs.get(H_COMMITTED) or 0.0)
    except ValueError:
        committed = 0.0
    return (parts[1], parts[2], parts[3], shoe, int(seq), hdrs.get(H_TAG) or "",
            hdrs.get(H_FIRST_PREV), committed, bytes(data))
