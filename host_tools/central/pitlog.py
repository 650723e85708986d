"""Each pit's alert history and audit log at central, accepted on the pit's
own hash chain (host_tools/store/audit.py): rows in, verdicts out; no I/O.

A pit keeps two chains: ``audit_log`` (what people did) and ``alert_log``
(every state an alert row took). Its publisher sends the chain rows as they
stand, hashes included (casino/publish.py). Central takes a row only where
it extends that pit's chain: its id is the next id, its ``prev_hash`` is the
hash of the row central took last, and its hash recomputes over its values
(the same ``audit.row_hash`` the pit made it with). So:

- a row edited or made up on the way (its hash does not recompute) is
  refused, with a ``pit_log_forged`` alert;
- a second, different row for an id central holds is refused the same way
  (two rows cannot both follow one head);
- a row whose predecessor has not arrived (dropped, or still in the other
  consumer's batch) is held, unlinked, until it arrives; one still waiting
  after ``ingest.GAP_S`` raises a ``pit_log_gap`` alert;
- `shoe verify --central` walks every pit's chain as central holds it from
  the pit's first row (``check``): a row deleted or edited at central, or a
  row still held after a gap, fails it.

Why the pit's chain and not one central makes: a chain central made
itself would prove only that central's rows were not changed after they
arrived; the pit's chain also shows a row the pit wrote that never arrived.
"""

import json

from host_tools.casino import wire
from host_tools.store import audit

KINDS = ("alert", "audit")
ROW_KEYS = wire.LOG_ROW_KEYS   # what a published row holds
GENESIS = audit.GENESIS


def values(kind, row):
    """The values the pit's hash covers, in its order."""
    if kind == "audit":
        return tuple(row.get(c) for c in audit.AUDIT_COLUMNS)
    return (row.get("alert_id"), row.get("state"))


def self_consistent(kind, row):
    """Whether the row's hash recomputes over its values and its prev."""
    prev, h = row.get("prev_hash"), row.get("hash")
    if not isinstance(prev, str) or not isinstance(h, str):
        return False
    try:
        return audit.row_hash(prev, values(kind, row)) == h
    except (TypeError, ValueError):
        return False


def well_formed(kind, row):
    """A published row has every key of its kind and an integer id."""
    return (isinstance(row, dict) and all(k in row for k in ROW_KEYS[kind])
            and isinstance(row.get("id"), int) and not isinstance(row["id"], bool))


def row_time(kind, row):
    """When the row was written at the pit (an alert state: its last time)."""
    if kind == "audit":
        t = row.get("time")
    else:
        t = display(kind, row).get("last_time")
    return t if isinstance(t, (int, float)) and not isinstance(t, bool) else None


def display(kind, row):
    """The row as a person reads it: an alert history row's state spelled
    out under the alert's own column names."""
    if kind == "alert":
        try:
            state = json.loads(row.get("state") or "null")
        except ValueError:
            state = None
        if isinstance(state, list) and len(state) == len(audit.ALERT_COLUMNS):
            out = dict(zip(audit.ALERT_COLUMNS, state))
            out["history_id"] = row.get("id")
            return out
    return {k: v for k, v in row.items() if k not in ("prev_hash", "hash")}


class Step:
    """What acceptance decided for one group (casino, pit, kind)."""

    def __init__(self):
        self.link = []       # rows that extend the chain, in order (new head: the last)
        self.hold = []       # rows to keep unlinked, waiting for a predecessor
        self.drop = []       # ids of held rows to forget (linked now, or refused)
        self.refused = []    # (row id, why) for pit_log_forged alerts
        self.duplicates = 0


def accept(kind, head_id, head_hash, incoming, held, stored_hash):
    """Extend one pit's chain of ``kind``.

    ``head_id``/``head_hash``: the last linked row (0/GENESIS for none);
    ``incoming``: the batch's rows; ``held``: rows held earlier (unlinked);
    ``stored_hash(id)``: the hash central holds for a linked id, or None.
    Returns a Step."""
    step = Step()
    cands = {}
    for row, was_held in [(r, True) for r in held] + [(r, False) for r in incoming]:
        rid = row["id"]
        if not self_consistent(kind, row):
            step.refused.append((rid, "row %d: its hash does not recompute over it (edited or made "
                                      "up on the way)" % rid))
            if was_held:
                step.drop.append(rid)
            continue
        if rid <= head_id:
            have = stored_hash(rid)
            if have == row["hash"]:
                if not was_held:
                    step.duplicates += 1
            else:
                step.refused.append((rid, "row %d: a second, different row for an id central holds "
                                          "(a fork of the pit's chain)" % rid))
            if was_held:
                step.drop.append(rid)
            continue
        same = cands.setdefault(rid, [])
        if any(c[0]["hash"] == row["hash"] for c in same):
            if not was_held:
                step.duplicates += 1
            continue
        same.append((row, was_held))
    while True:
        nxt = head_id + 1
        options = cands.pop(nxt, None)
        if not options:
            break
        winner = None
        for row, was_held in options:
            if winner is None and row["prev_hash"] == head_hash:
                winner = row
            else:
                step.refused.append((nxt, "row %d: does not follow the pit's row %d (another "
                                          "chain, or a row made up on the way)" % (nxt, head_id)))
            if was_held:
                step.drop.append(nxt)
        if winner is None:
            break
        step.link.append(winner)
        head_id, head_hash = nxt, winner["hash"]
    for rid, options in sorted(cands.items()):
        for row, was_held in options:
            if not was_held:
                step.hold.append(row)
    return step


def check(kind, rows):
    """None, or why the chain central holds for one pit and kind is not
    whole: ``rows`` are (id, linked, body dict) in id order."""
    prev, last = GENESIS, 0
    for rid, linked, row in rows:
        if not linked:
            return "row %d is held: row %d never arrived (dropped on the way?)" % (rid, last + 1)
        if rid != last + 1:
            return "row %d missing (deleted?)" % (last + 1)
        if row.get("prev_hash") != prev or not self_consistent(kind, row):
            return "row %d does not link or its hash does not recompute (edited?)" % rid
        prev, last = row["hash"], rid
    return None
