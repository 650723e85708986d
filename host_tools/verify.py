"""`shoe verify --db DB | --central DSN [--key-file KEY | --key-dir DIR] [--shoe ID] [--anchor ...]`.

Surveillance runs this before trusting an export. It names the first bad seq
so an investigator can go straight to the row; exit 0 only if every chain is
whole from the shoe's first stored seq to the head recorded for it, and no
critical alert (a rollback, a fork) is stored. The pit's audit log and the
alerts' history are hash chains too (host_tools/store/audit.py): a deleted
or edited row of either fails.

Two levels of proof:

- Without ``--key-file`` it recomputes the store's SHA-256 chain. That
  catches accidents and careless edits, but anyone who can write the file
  can recompute it, so the output says the shoe's signatures were not checked.
- With ``--key-file`` it also checks every event's tag, made by the shoe with
  its key over the previous event's tag (docs/design.md, the store
  contract): every stored event came from the key holder, in order, none
  missing, from ``first_prev`` on, with chain restarts only where the
  protocol allows one. A store edited and re-chained without the key fails.
- With the shoe's public key (``SHOE-ID.pub`` beside ``--key-file``, in
  ``--key-dir``, ``--pubkey``, or the central device registry) it checks
  every signed checkpoint (host_tools/protocol/checkpoints.py): the chip's
  signature, the chain head it names, the counter, the manifest. That is
  the proof an insider holding the MAC key cannot forge; without a public
  key verify says so and fails, unless ``--mac-only`` asks for the MAC
  chain alone.
- ``--anchor SHOE:SEQ:MAC`` (a checkpoint tag printed earlier by this
  command, or kept elsewhere) proves the store still reaches SEQ with the
  very event the shoe signed there: a truncated tail, re-chained or not,
  fails it. Each passing shoe's latest checkpoint is printed as such a line.

The store is opened read-only (SQLite ``mode=ro``): checking the evidence
must never change it.

``--central DSN`` checks the casino's PostgreSQL record (host_tools/casino)
with the same walk: ``check_shoe`` reads either through the one record
interface (host_tools/protocol/record.py); a record without the SHA-256 row
chain (``HASHED = False``) is checked on its tag chain alone, so it needs the keys (``--key-dir``: one
``<shoe_id>.key`` per shoe), and its own anchors table is checked too.
"""

import hashlib
import json
import os
import sys

from host_tools import exits
from host_tools.protocol import alerts, chain, walk
from host_tools.store import audit, db


def add_arguments(parser):
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--db", help="the store's SQLite file")
    where.add_argument("--central", metavar="DSN", help="the casino's PostgreSQL record (shoe central)")
    parser.add_argument("--key-dir", help="a directory of <shoe_id>.key files: check each shoe's tags")
    parser.add_argument("--shoe", help="check only this shoe id")
    parser.add_argument("--key-file", help="the shoe key (32 bytes): also check every event's tag")
    parser.add_argument("--anchor", action="append", default=[], metavar="SHOE:SEQ:MAC",
                        help="a checkpoint tag kept outside the store; may be repeated")
    parser.add_argument("--pubkey", help="the shoe's public key (PEM, SHOE-ID.pub from `shoe deploy`); "
                        "default: the .pub beside --key-file, or in --key-dir")
    parser.add_argument("--mac-only", action="store_true",
                        help="check the MAC chain only, without the signed checkpoints")
    parser.add_argument("--alerts", action="store_true",
                        help="list every stored alert (without it: one line per shoe, by kind and count)")


def parse_anchor(text):
    """(shoe, seq, mac) of ``SHOE:SEQ:MAC``, or ValueError with the reason."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise ValueError("anchor %r is not SHOE:SEQ:MAC" % text)
    shoe, seq, mac = parts
    if not seq.isdigit():
        raise ValueError("anchor %r: SEQ must be a whole number" % text)
    mac = mac.lower()
    if len(mac) != 32 or any(c not in "0123456789abcdef" for c in mac):
        raise ValueError("anchor %r: MAC must be 32 hex digits" % text)
    return shoe, int(seq), mac


def check_shoe(store, shoe_id, fkey=None, anchors=(), restarts=None):
    """None if the shoe's record is whole, else (seq, reason) for the first
    fault. ``fkey`` (auth.frames_key of the shoe key) adds the tag chain;
    ``anchors`` are (seq, mac) pairs the store must still hold; the seqs
    where the tag chain restarts under zeros are appended to ``restarts``."""
    info = store.shoe(shoe_id)
    hashed = store.HASHED
    prev = db.GENESIS
    expected = info["first_seq"]
    link = info["first_prev"]
    if fkey is not None and expected is not None and link is None:
        return expected, "no first_prev recorded: the store cannot show where the shoe's chain starts"
    if fkey is not None and expected == 1 and link != db.ZERO_HEX:
        return 1, "first_prev of seq 1 is not zeros (a chain starts at seq 1 from nothing)"
    if store.STARTS_AT_ONE and expected not in (None, 1):
        # the central record: `shoe central` starts a shoe at its first
        # event only (central/ingest.start_prev); a start elsewhere was
        # not made by it (a start at a device-signed checkpoint comes
        # with the root-of-trust work)
        return expected, ("the central record of this shoe starts at seq %d, not at its first "
                          "event" % expected)
    tags = {}
    # MALFORMED still proves the shoe signed it: verify is about provenance,
    # the writers' gate about the schema (schema=False).
    tags_walk = walk.Walk(fkey, shoe_id, chain.Head(), lambda seq: info["first_prev"], schema=False)
    for row in store.rows(shoe_id):
        seq, text = row["seq"], row["event"]
        if expected is None:
            return seq, "row stored but the shoe's chain head records no events"
        if info["last_seq"] is not None and seq > info["last_seq"]:
            return seq, "row after the chain head seq %d (inserted)" % info["last_seq"]
        if seq < expected:
            return seq, "row before the chain's first seq %d (inserted)" % expected
        if seq > expected:
            return expected, "missing (deleted); next stored row is seq %d" % seq
        digest = prev
        if hashed:
            if row["prev_hash"] != prev.hex():
                return seq, "prev_hash does not link to seq %d (row moved or replaced)" % (seq - 1)
            digest = db.chain_hash(prev, text.encode("utf-8"), seq, shoe_id)
            if digest.hex() != row["hash"]:
                return seq, "hash mismatch: event text, seq or shoe id altered"
        fault = _column_fault(row)
        if fault:
            return seq, fault
        if fkey is not None:
            if not row["mac"]:
                return seq, "no tag stored: this event cannot be shown to come from the shoe"
            # The acceptance the bridge applied before storing (protocol/
            # chain.py), through the walk `shoe central` uses (walk.py).
            step = tags_walk.step(seq, [walk.Candidate(seq, text.encode("utf-8"), row["mac"], text, False)])
            if step.winner is None:
                return seq, ("tag does not verify under the shoe's key: the event was altered, "
                             "or an event before it is missing or altered")
            if step.verdict.how == chain.RESTART and restarts is not None:
                restarts.append(seq)
            tags[seq] = row["mac"]
            link = row["mac"]
        prev = digest
        expected = seq + 1
    last = info["last_seq"]
    if last is not None and expected != last + 1:
        return expected, "missing (deleted); chain head is seq %d" % last
    if not hashed and fkey is not None and info.get("last_mac") not in (None, link):
        return last, "chain head tag does not match the last row's tag"
    if hashed and info["head_hash"] is not None and info["head_hash"] != prev.hex():
        return last, "chain head hash does not match the last row"
    for seq, mac in anchors:
        if seq not in tags:
            if last is None or seq > last:
                return seq, "anchor seq %d is not in the store (it ends at %s): the tail is missing" % (
                    seq, last)
            return seq, "anchor seq %d is before the store's first seq %s" % (seq, info["first_seq"])
        if tags[seq] != mac:
            return seq, "anchor tag %s does not match the stored event's tag %s" % (mac, tags[seq])
    return None


def _column_fault(row):
    # type/round are indexes derived from the event; recall trusts the text,
    # but a tool querying the columns must not be misled either.
    try:
        event = json.loads(row["event"])
    except ValueError:
        return "event text is not JSON"
    rnd = event.get("round") if isinstance(event, dict) else None
    if not isinstance(event, dict) or row["type"] != event.get("type") or \
            row["round"] != (rnd if isinstance(rnd, int) else None):
        return "type/round columns do not match the event"
    return None


def _frames_key(path):
    from host_tools.protocol.keys import read_key
    from firmware.link import auth
    key = read_key(path)
    return auth.frames_key(key), hashlib.sha256(key).hexdigest()[:16]


def _record_key(info, shoe_key, raw):
    """The frame key for the link protocol version the shoe's record was
    written under (db.record_proto): each record is checked under its own
    version's tag, so a store the bridge kept under version 2 still
    verifies. ``raw`` gives the shoe key itself (needed only for another
    version than this one's). ValueError names a version without tags here."""
    from firmware.link import host_frames, proto
    version = db.record_proto(info)
    if version is None or version == proto.PROTO or shoe_key is None:
        return shoe_key
    return host_frames.frames_key(raw(), version)


def _raw_key(args, shoe_id):
    """The shoe key itself, from --key-file or the shoe's file in --key-dir."""
    from host_tools.protocol.keys import read_key
    return read_key(args.key_file or os.path.join(args.key_dir, shoe_id + ".key"))


def _options(args):
    """(anchors by shoe, frames key, key id, key directory) from the
    arguments, or a string: the one line that says what is wrong with them."""
    fkey = key_id = keydir = None
    anchors = {}
    try:
        for text in args.anchor:
            shoe, seq, mac = parse_anchor(text)
            anchors.setdefault(shoe, []).append((seq, mac))
    except ValueError as e:
        return str(e)
    if args.key_file and args.key_dir:
        return "give --key-file or --key-dir, not both"
    if args.key_dir:
        from host_tools.protocol.keys import Keys
        keydir = Keys(args.key_dir)
        key_id = "dir %s" % args.key_dir
    if args.central and not (args.key_file or args.key_dir):
        return ("--central needs --key-dir (or --key-file): the central record's proof is the "
                "shoes' tag chain")
    if anchors and not (args.key_file or args.key_dir):
        return "--anchor needs --key-file: without the key a stored tag proves nothing"
    if args.key_file:
        try:
            fkey, key_id = _frames_key(args.key_file)
        except (OSError, ValueError) as e:
            return str(e)
    return anchors, fkey, key_id, keydir


def _open(args):
    """The record to check (protocol/record.Record), or a string saying why it cannot be opened."""
    try:
        if args.central:
            from host_tools.central.record import CentralRecord
            return CentralRecord(args.central)
        return db.open_existing(args.db)
    except (db.StoreError, ValueError) as e:
        return str(e)


def run(args):
    options = _options(args)
    store = _open(args) if not isinstance(options, str) else options
    if isinstance(store, str):
        print("verify: %s" % store, file=sys.stderr)
        return exits.EXIT_USAGE
    anchors, fkey, key_id, keydir = options
    with store:
        shoes = [args.shoe] if args.shoe else store.shoe_ids()
        for shoe in anchors:
            if shoe not in shoes:
                shoes.append(shoe)  # an anchor for a shoe the store lacks must fail, not be skipped
        bad = 0
        for shoe_id in shoes:
            bad += _verify_shoe(store, shoe_id, args, anchors.get(shoe_id, ()), fkey, key_id, keydir)
        if not shoes:
            print("OK   store is empty")
        if not args.central:
            bad += _check_logs(store)
        elif not args.shoe:
            bad += _check_pit_chains(store)
    return exits.EXIT_FOUND if bad else exits.EXIT_OK


def _verify_shoe(store, shoe_id, args, anchors, fkey, key_id, keydir):
    """Check one shoe's record, print what holds and what fails; returns the failures."""
    info = store.shoe(shoe_id)
    if info is None:
        print("FAIL shoe %s: not in the store" % shoe_id)
        return 1
    shoe_key = fkey
    if keydir is not None:
        try:
            shoe_key = keydir.frames_key(shoe_id)
        except ValueError as e:  # a key file that cannot be used
            print("FAIL shoe %s: %s" % (shoe_id, e))
            return 1
        if shoe_key is None:
            print("FAIL shoe %s: no key %s.key in %s" % (shoe_id, shoe_id, args.key_dir))
            return 1
    try:
        shoe_key = _record_key(info, shoe_key, lambda: _raw_key(args, shoe_id))
    except ValueError as e:
        print("FAIL shoe %s: %s" % (shoe_id, e))
        return 1
    bad = 0
    kept = list(anchors)
    if shoe_key is not None:
        kept += store.anchors(shoe_id)  # the record's own checkpoints must still hold
    restarts = []
    fault = check_shoe(store, shoe_id, shoe_key, kept, restarts)
    signed = None
    if fault:
        print("FAIL shoe %s: seq %s: %s" % (shoe_id, fault[0], fault[1]))
        bad += 1
    elif not args.mac_only and (shoe_key is not None or args.pubkey):
        signed = _check_signed(store, shoe_id, args, info, shoe_key, restarts)
        if signed is None or signed.fault:
            bad += 1
    if not fault and (signed is None or not signed.fault) and \
            (signed is not None or args.mac_only or (shoe_key is None and not args.pubkey)):
        _print_whole(store, shoe_id, args, info, anchors, shoe_key, key_id, signed)
    return bad + _report_alerts(store, shoe_id, getattr(args, "alerts", False))


def _print_whole(store, shoe_id, args, info, anchors, shoe_key, key_id, signed):
    """The lines of a shoe whose record held: what was checked, the notes, its anchors."""
    print("OK   shoe %s: %d events, seq %s..%s, head %s, %s" % (
        shoe_id, store.count(shoe_id), info["first_seq"], info["last_seq"],
        (info["head_hash"] or info.get("last_mac") or "-")[:16],
        "tags verified under key %s" % key_id if shoe_key is not None else
        "SHA-256 chain only: the shoe's tags were not checked (no --key-file)"))
    if signed is not None:
        _print_signed(shoe_id, signed)
    elif args.mac_only:
        print("note shoe %s: signed checkpoints not checked (--mac-only): the MAC key's "
              "holders could have written this record" % shoe_id)
    if shoe_key is not None and info["key_id"] and info["key_id"] != key_id:
        print("note shoe %s: the bridge recorded key %s, this key is %s" % (
            shoe_id, info["key_id"], key_id))
    if info["first_seq"] not in (None, 1) and signed is None:
        print("note shoe %s: the record starts at seq %d; seqs before it are in "
              "another store" % (shoe_id, info["first_seq"]))
    for seq, mac in anchors:
        print("OK   anchor %s:%d:%s" % (shoe_id, seq, mac))
    if store.held(shoe_id):
        print("note shoe %s: %d events held, waiting for a missing predecessor" % (
            shoe_id, store.held(shoe_id)))
    cp = store.latest_checkpoint(shoe_id)
    if cp:
        print("anchor %s:%d:%s" % (shoe_id, cp[0], cp[1]))


def _public_key_path(args, shoe_id):
    import pathlib
    from host_tools.protocol import pubkeys
    if args.pubkey:
        return pathlib.Path(args.pubkey)
    if args.key_file:
        return pubkeys.pub_path(args.key_file)
    if args.key_dir:
        return pathlib.Path(args.key_dir) / (shoe_id + pubkeys.SUFFIX)
    return None


def _deployed_manifest(args, shoe_id):
    """The SHA-256 of the manifest `shoe deploy` recorded beside the key, or None."""
    from host_tools.protocol.keys import deployed_manifest
    path = _public_key_path(args, shoe_id)
    if path is None or args.pubkey:
        return None
    return deployed_manifest(path)


def _check_signed(store, shoe_id, args, info, shoe_key, restarts):
    """The auditor's rule on the shoe's record (protocol/checkpoints.py): a
    Result, or None after printing the one line that says why it cannot be
    applied (no public key, no MAC key, not the whole record)."""
    from host_tools.protocol import checkpoints, pubkeys
    if shoe_key is None:
        print("FAIL shoe %s: --pubkey needs the MAC key too (--key-file or --key-dir): a signature covers "
              "the events before it only through their tags" % shoe_id)
        return None
    if info["first_seq"] not in (None, 1):
        print("FAIL shoe %s: the record starts at seq %d: events 1..%d of the device are not in it, and a "
              "record is the device's own only whole, from its first event" % (
                  shoe_id, info["first_seq"], info["first_seq"] - 1))
        return None
    pem = None
    if args.central and not args.pubkey:
        pem = store.public_key(shoe_id)
        where = "the central device registry"
    else:
        path = _public_key_path(args, shoe_id)
        where = str(path)
        try:
            pem = path.read_bytes()
        except OSError:
            pem = None
    if not pem:
        print("FAIL shoe %s: no public key (%s): its signed checkpoints cannot be checked; "
              "--mac-only checks the MAC chain alone" % (shoe_id, where))
        return None
    try:
        key = pubkeys.from_pem(pem, where)
    except pubkeys.PublicKeyFileError as e:
        print("FAIL shoe %s: public key: %s" % (shoe_id, e))
        return None
    rows = ((row["seq"], row["event"], row["mac"]) for row in store.rows(shoe_id))
    result = checkpoints.check(shoe_id, rows, key, _deployed_manifest(args, shoe_id), restarts)
    if result.fault:
        print("FAIL shoe %s: seq %d: %s" % (shoe_id, result.fault[0], result.fault[1]))
    return result


def _print_signed(shoe_id, r):
    """The auditor's rule held: what covers the record, and the tail of a
    shoe in play that is not yet signed (named, never hidden in a note)."""
    from host_tools.protocol.checkpoints import UNSIGNED_MAX
    if r.signed:
        print("OK   shoe %s: %s covered by %d checkpoint%s its chip signed (verified under its public key), "
              "counters %d..%d without a gap" % (
                  shoe_id, "every event" if r.pending is None else "events 1..%d" % r.last_signed,
                  r.signed, "" if r.signed == 1 else "s", r.counters[0], r.counters[1]))
    for seq, why in r.unsigned:
        if r.last_signed is not None and seq < r.last_signed:
            print("OK   shoe %s: checkpoint seq %d is unsigned (%s); a later signed checkpoint covers its "
                  "events and proves the counter" % (shoe_id, seq, why))
    if r.pending is not None:
        print("OK   shoe %s: events %d..%d not yet signed: the device's latest, no shoe ended among them, "
              "within the %d events it may leave unsigned (its next checkpoint signs them)"
              % (shoe_id, r.pending[0], r.pending[1], UNSIGNED_MAX))


def _check_logs(store):
    """The pit's audit log and the alerts' history: each hash chain whole
    (host_tools/store/audit.py). Returns the number of failures."""
    bad = 0
    n, head, why = audit.check_audit(store.db)
    if why:
        print("FAIL audit log: %s" % why)
        bad += 1
    elif n:
        print("OK   audit log: %d rows chained, head %s" % (n, head[:16]))
    n, why = audit.check_alerts(store.db)
    if why:
        print("FAIL alerts: %s" % why)
        bad += 1
    elif n:
        print("OK   alerts: %d states chained" % n)
    return bad


def _check_pit_chains(store):
    """Central: every pit's alert history and audit log whole on the pit's
    own hash chain (host_tools/central/pitlog.py), and no critical alert
    tied to no shoe (a pit row refused as forged). Returns the failures."""
    from host_tools.central import pitlog
    bad = 0
    for (casino, pit, kind), rows in sorted(store.pit_chains().items()):
        why = pitlog.check(kind, rows)
        if why:
            print("FAIL pit %s/%s %s log: %s" % (casino, pit, kind, why))
            bad += 1
        else:
            print("OK   pit %s/%s %s log: %d rows on the pit's chain, head %s" % (
                casino, pit, kind, len(rows), rows[-1][2]["hash"][:16]))
    for a in store.stray_alerts():
        if a["severity"] == "critical":
            print("FAIL central: critical alert %s x%d: %s" % (a["kind"], a["count"], a["detail"]))
            bad += 1
    return bad


def _report_alerts(store, shoe_id, every=False):
    """Print the shoe's stored alerts; return how many are critical (each a
    failure, each named). The rest are one line by kind and count (an edge
    monitor alone raises dozens a shoe, which buried the verdict), or with
    ``every`` (--alerts) one line each."""
    critical, kinds = 0, {}
    rows = store.alerts(shoe_id)
    for a in rows:
        if a["severity"] == "critical" and alerts.cleared(rows, a):
            # A condition that ended (NOT RECORDING, then recording again):
            # the chain above says whether anything was lost in it.
            print("note shoe %s: critical alert %s, cleared: %s" % (shoe_id, a["kind"], a["detail"]))
        elif a["severity"] == "critical":
            critical += 1
            print("FAIL shoe %s: critical alert %s: %s" % (shoe_id, a["kind"], a["detail"]))
        elif every:
            print("note shoe %s: %s alert %s x%d: %s" % (shoe_id, a["severity"], a["kind"],
                                                        a["count"], a["detail"]))
        else:
            kinds[(a["kind"], a["severity"])] = kinds.get((a["kind"], a["severity"]), 0) + 1
    if kinds:
        n = sum(kinds.values())
        print("note shoe %s: %d alert%s: %s (--alerts lists them)" % (
            shoe_id, n, "" if n == 1 else "s",
            ", ".join("%s %d (%s)" % (k, c, sev) for (k, sev), c in sorted(kinds.items()))))
    return critical
