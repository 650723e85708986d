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

from baccarat.jsonout import JsonOut
from host_tools.protocol import pubkeys
from link import events_schema, reports

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


class Result:
    def __init__(self):
        self.fault = None          # (seq, reason) of the first checkpoint that does not match
        self.signed = 0            # signed checkpoints that verified
        self.unsigned = []         # (seq, why) of checkpoints the chip did not sign
        self.last_signed = None    # seq of the last signed checkpoint
        self.last_seq = None       # the record's last seq
        self.counters = None       # (first, last) counter signed


def check(shoe_id, rows, key, manifest=None):
    """``rows``: (seq, event text, mac) in seq order (the MAC chain already
    checked); ``key``: the device key's X||Y (pubkeys). ``manifest``: the deployed manifest's SHA-256, or None when no
    deploy record is at hand. Returns a Result."""
    r = Result()
    tags = {}
    last_counter = None
    for seq, text, mac in rows:
        tags[seq] = mac
        r.last_seq = seq
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
            r.unsigned.append((seq, cp.get("unsigned", "unsigned")))
        else:
            through = cp["through"]
            if through != seq - 1:
                r.fault = (seq, "covers seq %d, not the event before it" % through)
                return r
            if tags.get(through) != cp["head"]:
                r.fault = (seq, "the chain head the shoe signed (%s) is not the stored tag of seq %d (%s): "
                                "the events before it are not the ones the shoe signed"
                           % (cp["head"][:16], through, (tags.get(through) or "-")[:16]))
                return r
            message = statement_bytes(shoe_id, through, cp["head"], counter, cp["manifest"])
            if not signature_ok(key, message, cp["sig"]):
                r.fault = (seq, "the signature does not verify under the shoe's public key")
                return r
            if manifest is not None and cp["manifest"] != manifest:
                r.fault = (seq, "signed by firmware with manifest %s, not the deployed %s"
                           % (cp["manifest"][:16] or "-", manifest[:16]))
                return r
            r.signed += 1
            r.last_signed = seq
            r.counters = (r.counters[0] if r.counters else counter, counter)
        if counter is None:
            continue
        if last_counter is not None:
            if counter == last_counter:
                r.fault = (seq, "counter %d signed twice (a journal restored from an earlier copy)" % counter)
                return r
            if counter < last_counter:
                r.fault = (seq, "counter goes backwards from %d to %d (a journal restored from an earlier copy)"
                           % (last_counter, counter))
                return r
            if counter != last_counter + 1:
                r.fault = (seq, "counter jumps from %d to %d: the checkpoints signed between are not in this "
                                "record (a journal restored from an earlier copy, or a power cut while "
                                "signing)" % (last_counter, counter))
                return r
        last_counter = counter
    return r
