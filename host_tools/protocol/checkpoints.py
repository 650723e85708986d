"""Checking a shoe's signed checkpoints (docs/security.md, "Signed
checkpoints"): the statement each one carries (link/reports.py's ``statement``,
the firmware's own writer), the secure element's ECDSA P-256 signature over it
with the public key registered at deploy, the chain head it names against
the stored tag of that event, the chip's counter, and the manifest.

No I/O: rows in, a verdict out; `shoe verify` reads the store and the key.
The counter is what catches a journal restored from an earlier copy: the
chip's counter cannot go back, so a restored shoe signs its next checkpoint
with a counter beyond the ones its earlier history spent, and a record made
from the restored journal misses them. Every counter value the chip gave a
checkpoint (signed, or spent on an attempt that failed, which the
unsigned checkpoint names) must follow the one before it by exactly one.
"""

import json

from firmware.baccarat.jsonout import JsonOut
from host_tools.protocol import pubkeys
from firmware.link import events_schema, proto, reports

FIELDS = events_schema.require("checkpoint", "through", "counter", "head", "manifest", "sig", "unsigned",
                               source="link")


def statement_bytes(shoe_id, through, head, counter, manifest):
    o = JsonOut(reports.STATEMENT_SIZE + len(shoe_id))
    n = reports.statement(o, shoe_id.encode(), through, head.encode(), counter, manifest.encode())
    return bytes(o.buf[:n])


def signature_ok(key, message, sig_hex):
    """``sig_hex`` (R||S as hex, the checkpoint's ``sig``) verifies under
    the device key ``key`` (X||Y, pubkeys.read_public)."""
    try:
        rs = bytes.fromhex(sig_hex)
    except (TypeError, ValueError):
        return False
    return pubkeys.verify(key, message, rs)


# How many events a shoe in play may have after its last signed checkpoint.
# The device checkpoints once CHECKPOINT_EVERY events have passed since the
# last one, between inputs (link/core.py ``checkpoint_due``), so the events
# of the input that crossed the line come first: one input (a card ending a
# round with its result, an irregularity, the last-hand and shoe-end events,
# a link report) makes far fewer than INPUT_EVENTS_MAX.
INPUT_EVENTS_MAX = 32
UNSIGNED_MAX = proto.CHECKPOINT_EVERY + INPUT_EVENTS_MAX


class Result:
    def __init__(self):
        self.fault = None          # (seq, reason) of the first thing that fails the rule
        self.signed = 0            # signed checkpoints that verified
        self.unsigned = []         # (seq, why) of checkpoints the chip did not sign (each proven by a later one)
        self.last_signed = None    # seq of the last signed checkpoint
        self.last_seq = None       # the record's last seq
        self.counters = None       # (first, last) counter signed
        self.pending = None        # (first, last) seqs not yet signed: the shoe in play's tail


def _type(text):
    try:
        event = json.loads(text)
    except ValueError:
        return None
    return event.get("type") if isinstance(event, dict) else None


def _fail(r, seq, why):
    r.fault = (seq, why)
    return r


def check(shoe_id, rows, key, manifest=None, restarts=()):
    """The auditor's rule (docs/security.md): every event is covered by a
    later checkpoint the chip signed, the chip's counter runs without a gap,
    an unsigned checkpoint is accepted only where a later signed one proves
    it, and only a shoe still in play has a tail not yet signed, at most
    UNSIGNED_MAX events long.

    ``rows``: (seq, event text, mac) of the device's whole record in seq
    order, its MAC chain already checked; ``key``: the device key's X||Y
    (pubkeys). ``manifest``: the deployed manifest's SHA-256, or None when
    no deploy record is at hand. ``restarts``: the seqs where the tag chain
    restarts under zeros (a signature covers events back to the last one
    only). Returns a Result."""
    r = Result()
    tags = {}
    last_counter = None
    open_from = None       # the first seq no signed checkpoint covers yet
    ended = None           # a shoe_end among them
    proving = None         # (seq, counter) of an unsigned checkpoint a signed one must still prove
    restarts = set(restarts)
    for seq, text, mac in rows:
        tags[seq] = mac
        r.last_seq = seq
        if seq in restarts and open_from is not None:
            return _fail(r, open_from, "events %d..%d are not covered by a signed checkpoint: the chain "
                                       "restarts at seq %d, so no later signature reaches them"
                         % (open_from, seq - 1, seq))
        if open_from is None:
            open_from = seq
        if ended is None and '"shoe_end"' in text and _type(text) == "shoe_end":
            ended = seq
        if '"checkpoint"' not in text:
            continue
        try:
            cp = json.loads(text)
        except ValueError:
            continue
        if cp.get("type") != "checkpoint" or cp.get("source") != "link":
            continue
        counter = cp.get("counter")
        if "sig" not in cp:
            why = cp.get("unsigned", "unsigned")
            if why == reports.NO_CHIP.decode():
                return _fail(r, seq, "unsigned checkpoint says the device has no secure element, but it has "
                                     "a registered public key: a record without signatures is not its own")
            r.unsigned.append((seq, why))
            if proving is None and counter is not None:
                proving = (seq, why)   # a counter value spent: only the next signature shows where it went
        else:
            through = cp["through"]
            if through != seq - 1:
                return _fail(r, seq, "covers seq %d, not the event before it" % through)
            if tags.get(through) != cp["head"]:
                return _fail(r, seq, "the chain head the shoe signed (%s) is not the stored tag of seq %d (%s): "
                                     "the events before it are not the ones the shoe signed"
                             % (cp["head"][:16], through, (tags.get(through) or "-")[:16]))
            message = statement_bytes(shoe_id, through, cp["head"], counter, cp["manifest"])
            if not signature_ok(key, message, cp["sig"]):
                return _fail(r, seq, "the signature does not verify under the shoe's public key")
            if manifest is not None and cp["manifest"] != manifest:
                return _fail(r, seq, "signed by firmware with manifest %s, not the deployed %s"
                             % (cp["manifest"][:16] or "-", manifest[:16]))
            r.signed += 1
            r.last_signed = seq
            r.counters = (r.counters[0] if r.counters else counter, counter)
            open_from = ended = proving = None
        if counter is None:
            continue
        if last_counter is not None:
            if counter == last_counter:
                return _fail(r, seq, "counter %d signed twice (a journal restored from an earlier copy)" % counter)
            if counter < last_counter:
                return _fail(r, seq, "counter goes backwards from %d to %d (a journal restored from an earlier "
                                     "copy)" % (last_counter, counter))
            if counter != last_counter + 1:
                return _fail(r, seq, "counter jumps from %d to %d: the checkpoints signed between are not in "
                                     "this record (a journal restored from an earlier copy, or a power cut "
                                     "while signing)" % (last_counter, counter))
        last_counter = counter
    if proving is not None:
        return _fail(r, proving[0], "checkpoint seq %d is unsigned (%s) and no signed checkpoint after it "
                                    "proves its counter or covers the events before it"
                     % (proving[0], proving[1]))
    if open_from is not None:
        n = r.last_seq - open_from + 1
        if ended is not None:
            return _fail(r, open_from, "events %d..%d are not covered by a signed checkpoint, and the shoe "
                                       "ended at seq %d: a finished shoe must be signed to its end"
                         % (open_from, r.last_seq, ended))
        if n > UNSIGNED_MAX:
            return _fail(r, open_from, "events %d..%d (%d) are not covered by a signed checkpoint: a device "
                                       "in play signs at least every %d events"
                         % (open_from, r.last_seq, n, UNSIGNED_MAX))
        r.pending = (open_from, r.last_seq)
    return r
