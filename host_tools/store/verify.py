"""`shoe verify --db PATH [--shoe ID]`: recompute every shoe's hash chain.

Surveillance runs this before trusting an export. It names the first bad seq
so an investigator can go straight to the row; exit 0 only if every chain is
whole from the shoe's first stored seq to the head recorded for it.
"""

import json
import sys

from host_tools.store import db


def add_arguments(parser):
    parser.add_argument("--db", required=True, help="the store's SQLite file")
    parser.add_argument("--shoe", help="check only this shoe id")


def check_shoe(store, shoe_id):
    """None if the chain is whole, else (seq, reason) for the first fault."""
    info = store.shoe(shoe_id)
    prev = db.GENESIS
    expected = info["first_seq"]
    for _shoe, seq, text, prev_hex, hash_hex in store.events(shoe_id):
        if expected is None:
            return seq, "row stored but the shoe's chain head records no events"
        if info["last_seq"] is not None and seq > info["last_seq"]:
            return seq, "row after the chain head seq %d (inserted)" % info["last_seq"]
        if seq < expected:
            return seq, "row before the chain's first seq %d (inserted)" % expected
        if seq > expected:
            return expected, "missing (deleted); next stored row is seq %d" % seq
        if prev_hex != prev.hex():
            return seq, "prev_hash does not link to seq %d (row moved or replaced)" % (seq - 1)
        digest = db.chain_hash(prev, text.encode("utf-8"), seq, shoe_id)
        if digest.hex() != hash_hex:
            return seq, "hash mismatch: event text, seq or shoe id altered"
        fault = _column_fault(store, shoe_id, seq, text)
        if fault:
            return seq, fault
        prev = digest
        expected = seq + 1
    last = info["last_seq"]
    if last is not None and expected != last + 1:
        return expected, "missing (deleted); chain head is seq %d" % last
    if info["head_hash"] is not None and info["head_hash"] != prev.hex():
        return last, "chain head hash does not match the last row"
    return None


def _column_fault(store, shoe_id, seq, text):
    # type/round are indexes derived from the event; recall trusts the text,
    # but a tool querying the columns must not be misled either.
    row = store.db.execute(
        "SELECT type, round FROM events WHERE shoe_id = ? AND seq = ?", (shoe_id, seq)).fetchone()
    event = json.loads(text)
    rnd = event.get("round")
    if row[0] != event.get("type") or row[1] != (rnd if isinstance(rnd, int) else None):
        return "type/round columns do not match the event"
    return None


def run(args):
    try:
        store = db.open_existing(args.db)
    except db.StoreError as e:
        print("verify: %s" % e, file=sys.stderr)
        return 2
    with store:
        shoes = [args.shoe] if args.shoe else store.shoe_ids()
        bad = 0
        for shoe_id in shoes:
            info = store.shoe(shoe_id)
            if info is None:
                print("FAIL shoe %s: not in the store" % shoe_id)
                bad += 1
                continue
            fault = check_shoe(store, shoe_id)
            if fault:
                print("FAIL shoe %s: seq %s: %s" % (shoe_id, fault[0], fault[1]))
                bad += 1
            else:
                print("OK   shoe %s: %d events, seq %s..%s, head %s" % (
                    shoe_id, store.count(shoe_id), info["first_seq"], info["last_seq"],
                    (info["head_hash"] or "-")[:16]))
        if not shoes:
            print("OK   store is empty")
    return 1 if bad else 0
