"""What a pit puts on JetStream and `shoe central` takes off it, stated once.

One message carries a run of consecutive events of one shoe (up to
``MAX_EVENTS``; a single event when the publisher is keeping pace, a run
when it catches up), or runs of several shoes of one pit (``MAX_EVENTS`` in
all): a pit of thousands of tables each dealing at a dealer's pace has one
new event per shoe at a time, and one message per event was one hub fsync
per event (at 6,000 tables the hub fell seconds behind, `shoe bench
casino`). Why runs and not one message per event: the hub runs
JetStream with ``sync_interval: always`` (a PubAck means the message is on
disk, docs/casino.md), which is one fsync per stored message; measured on
the 2-core bench machine that fsync cost the hub 70-120 us of CPU per
message, more than every other part of the path together. A run of n events
costs one fsync, one PubAck, one delivery and one consumer ack.

The payload is the events' text exactly as the shoe sent them (the bytes
each tag covers), concatenated; everything else rides in headers, so each
body a consumer verifies is the body the shoe signed, untouched by any
envelope:

- ``Nats-Msg-Id: SHOE:SEQ`` (one event) or ``SHOE:FIRST-LAST`` (a run): the
  broker drops a second publish of the same message inside the stream's
  duplicate window. That is an optimisation (less traffic, fewer rows to
  compare), not the guarantee: the window is finite, a pit that was cut off
  longer than it republishes from its high-water mark (perhaps cut into
  other runs), and a sourced or injected message can carry no id at all.
  The guarantee is the consumer's: PostgreSQL's primary key (shoe_id, seq),
  ``ON CONFLICT DO NOTHING``, and a byte comparison of anything that collides.
- ``Shoe-Id``, ``Shoe-Seq``: the shoe and the seq of the first event;
  ``Shoe-Tag``: each event's link-v2 tag (docs/protocol.md), comma-separated
  in seq order; ``Shoe-Len``: each event's length in bytes (absent for one
  event: the whole payload); ``Shoe-First-Prev`` when the run starts at the
  first event a pit store holds for the shoe (the PREV its tag was made
  over); ``Pit-Committed``: each event's pit commit time (seconds since the
  epoch), for the latency figures; ``Pit-Published``: when the publisher
  handed the message to NATS (one stamp per message), so the latency
  figures split into stages (`shoe bench casino`).

Several shoes' runs in one message: ``Shoe-Id``, ``Shoe-Seq`` and
``Shoe-Table`` list each run's shoe, first seq and table, ``Shoe-Count``
its number of events; ``Shoe-Tag``, ``Shoe-Len`` and ``Pit-Committed`` list
every event in order; no ``Shoe-First-Prev`` (central ignores it anyway:
ingest.start_prev); the subject's table token is ``_runs`` (no table can
have it) and ``Nats-Msg-Id`` names the runs.

Subjects: ``shoe.<casino>.<pit>.<table>``; one stream per casino on the hub
(``SHOE_<casino>``), and in the leaf-node topology one per pit on its leaf
(``PIT_<casino>_<pit>``, in the leaf's JetStream domain), sourced by the hub's.
"""

import re

from host_tools.exits import ShoeError
from host_tools.store import audit

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")   # casino, pit and table names (subject tokens)
SHOE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")  # what the consumer accepts as a shoe id
DUPLICATE_WINDOW_S = 600.0
MAX_EVENTS = 64       # events per message: ~4 KB of body, ~3 KB of headers

H_ID = "Nats-Msg-Id"
H_SHOE = "Shoe-Id"
H_SEQ = "Shoe-Seq"
H_TAG = "Shoe-Tag"
H_LEN = "Shoe-Len"
H_FIRST_PREV = "Shoe-First-Prev"
H_COMMITTED = "Pit-Committed"
H_PUBLISHED = "Pit-Published"
H_COUNT = "Shoe-Count"      # several shoes' runs: events per run
H_TABLE = "Shoe-Table"      # several shoes' runs: each run's table
RUNS = "_runs"              # the table token of a message holding several shoes' runs
UNASSIGNED = "unassigned"   # the table token of a shoe no table has claimed yet
# A pit's alerts and audit rows ride on its own subjects too, under a table
# token no table can have (NAME starts with a letter or digit): a JSON list
# of the store's rows, each with its row id, so a republish is absorbed.
PIT_LOG = {"alert": "_alerts", "audit": "_audit"}
# The keys of each pit-log row: the pit's hash-chain rows as its store
# holds them (host_tools/store/audit.py: the audit log, and the alert
# history, one row per state an alert took), hashes included.
LOG_ROW_KEYS = {
    "audit": audit.AUDIT_COLUMNS + ("prev_hash", "hash"),
    "alert": ("id", "alert_id", "state", "prev_hash", "hash"),
}


def subject(casino, pit, table):
    return "shoe.%s.%s.%s" % (casino, pit, table or UNASSIGNED)


def log_subject(casino, pit, kind):
    return "shoe.%s.%s.%s" % (casino, pit, PIT_LOG[kind])


def log_kind(subject_text):
    """'alert' or 'audit' for a pit-log subject, else None."""
    token = subject_text.rsplit(".", 1)[-1]
    for kind, t in PIT_LOG.items():
        if t == token:
            return kind
    return None


def casino_subjects(casino):
    return "shoe.%s.>" % casino


def pit_subjects(casino, pit):
    return "shoe.%s.%s.>" % (casino, pit)


def casino_stream(casino):
    return "SHOE_%s" % casino


def pit_stream(casino, pit):
    return "PIT_%s_%s" % (casino, pit)


def msg_id(shoe_id, seq, last=None):
    if last is None or last == seq:
        return "%s:%d" % (shoe_id, seq)
    return "%s:%d-%d" % (shoe_id, seq, last)


def headers(shoe_id, seq, tag, committed, first_prev=None):
    """The headers of a message holding one event."""
    return run_headers(shoe_id, seq, [tag or ""], [committed], None, first_prev)


def run_headers(shoe_id, seq, tags, committed, lens=None, first_prev=None):
    """The headers of a message holding ``len(tags)`` consecutive events
    from ``seq``; ``lens``: their byte lengths (needed for more than one)."""
    n = len(tags)
    h = {H_ID: msg_id(shoe_id, seq, seq + n - 1), H_SHOE: shoe_id, H_SEQ: str(seq),
         H_TAG: ",".join(tags), H_COMMITTED: ",".join(["%.6f" % c for c in committed])}
    if n > 1:
        h[H_LEN] = ",".join(map(str, lens))
    if first_prev is not None:
        h[H_FIRST_PREV] = first_prev
    return h


def runs_subject(casino, pit):
    return "shoe.%s.%s.%s" % (casino, pit, RUNS)


def batch_headers(runs):
    """The headers of one message holding several shoes' runs: ``runs`` is
    a list of (shoe, first seq, table, tags, committed, lens)."""
    import hashlib
    ident = ";".join("%s:%d+%d" % (r[0], r[1], len(r[3])) for r in runs)
    return {H_ID: "runs:" + hashlib.sha256(ident.encode()).hexdigest()[:32],
            H_SHOE: ",".join(r[0] for r in runs), H_SEQ: ",".join(str(r[1]) for r in runs),
            H_TABLE: ",".join(r[2] or UNASSIGNED for r in runs),
            H_COUNT: ",".join(str(len(r[3])) for r in runs),
            H_TAG: ",".join(t for r in runs for t in r[3]),
            H_COMMITTED: ",".join("%.6f" % c for r in runs for c in r[4]),
            H_LEN: ",".join(str(n) for r in runs for n in r[5])}


class Malformed(ShoeError, ValueError):
    """A message that is not a pit's event (missing or bad headers)."""


def decode(subject_text, hdrs, data):
    """The runs of a message: a list of (casino, pit, table, shoe, first
    seq, first_prev, events), where events is a list of (tag, committed,
    body bytes) in seq order; or Malformed with the reason. Nothing here is
    trusted yet: the consumer checks each tag before any of it counts."""
    parts = subject_text.split(".")
    if len(parts) != 4 or parts[0] != "shoe":
        raise Malformed("subject %r is not shoe.CASINO.PIT.TABLE" % subject_text[:80])
    hdrs = hdrs or {}
    shoes = (hdrs.get(H_SHOE) or "").split(",")
    seqs = (hdrs.get(H_SEQ) or "").split(",")
    if not all(shoes) or not all(q.isdigit() and int(q) >= 1 for q in seqs):
        raise Malformed("no %s/%s headers" % (H_SHOE, H_SEQ))
    tags = (hdrs.get(H_TAG) or "").split(",")
    n = len(tags)
    shoe, seq = shoes[0], seqs[0]
    if n > MAX_EVENTS:
        raise Malformed("shoe %s seq %s: %d events in one message (at most %d)" % (
            shoe, seq, n, MAX_EVENTS))
    if H_COUNT in hdrs:
        counts = hdrs[H_COUNT].split(",")
        tables = (hdrs.get(H_TABLE) or "").split(",")
        if (parts[3] != RUNS or not (len(shoes) == len(seqs) == len(counts) == len(tables))
                or not all(c.isdigit() and int(c) >= 1 for c in counts)
                or sum(map(int, counts)) != n
                or not all(NAME.fullmatch(t) or t == UNASSIGNED for t in tables)):
            raise Malformed("shoe %s seq %s: %s/%s/%s do not describe the message's runs" % (
                shoe, seq, H_SHOE, H_SEQ, H_COUNT))
    elif len(shoes) != 1 or len(seqs) != 1:
        raise Malformed("shoe %s seq %s: several shoes without %s" % (shoe, seq, H_COUNT))
    else:
        counts, tables = [str(n)], [parts[3]]
    committed = (hdrs.get(H_COMMITTED) or "").split(",")
    try:
        committed = [float(c) for c in committed] if len(committed) == n else [0.0] * n
    except ValueError:
        committed = [0.0] * n
    data = bytes(data)
    if n == 1:
        bodies = [data]
    else:
        lens = (hdrs.get(H_LEN) or "").split(",")
        if len(lens) != n or not all(x.isdigit() for x in lens) or sum(map(int, lens)) != len(data):
            raise Malformed("shoe %s seq %s: %s does not cut the payload into %d events" % (
                shoe, seq, H_LEN, n))
        bodies, at = [], 0
        for x in lens:
            x = int(x)
            bodies.append(data[at:at + x])
            at += x
    events = list(zip(tags, committed, bodies))
    out, at = [], 0
    first_prev = hdrs.get(H_FIRST_PREV) if len(shoes) == 1 else None
    for shoe, seq, count, table in zip(shoes, seqs, counts, tables):
        count = int(count)
        out.append((parts[1], parts[2], table, shoe, int(seq), first_prev, events[at:at + count]))
        at += count
    return out
