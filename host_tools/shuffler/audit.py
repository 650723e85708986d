"""`shoe shuffler audit --db DB --reveal FILE`: did the shoe deal exactly what
the shuffler sealed? (issue 14 item 6; docs/shuffler.md, "Audit").

Three checks, in this order, and the first difference is named:

1. The commitment opens: SHA-256 over the revealed salt, batch id and order
   (firmware/shuffler/commit.py, the one definition of the layout) equals
   the commitment published at the seal. The published value is only ever
   the ``commit`` of the shuffler's ``custody`` seal event in the store
   (``source`` shuffler), and only when the seal's signature (the
   shuffler's secure element, firmware/shuffler/seal.py) checks under the
   shuffler's registered public key (``--pubkey`` or ``ID.pub`` in
   ``--key-dir``): no key, one line and exit 2; a seal unsigned or not
   signed by that key, an irregularity. The reveal file's own
   ``commitment`` is never taken (whoever wrote the file would have chosen
   it): no seal event, no pass. Every revealed name must be the card of its record in the card
   set, which the audit always needs (--cardset: the store holds none),
   so a name edited to hide a switched card is caught without any flag.
2. The cards the shoe read, burn included, are a contiguous run of the
   committed order after the cut. Ch 5B moves the cards above the cut card
   to the bottom, so the dealt run is a rotation of the delivered order:
   the offset is taken from the first card read (among its copies in a
   multi-deck batch, the one whose run matches longest) and every following
   card must follow it.
3. The cards not dealt, read back at the shuffler's intake in the order
   they come out of the shoe, continue the rotation to the end: together
   with the dealt run they are the whole order, each card once.

What the shoe read comes from the store (host_tools/store/db.py,
Store.rows): every ``card`` event (burn, simulated rounds and held cards
included: each is a physical card that left the shoe) and every
``irregularity`` the intake raised for a card it refused (an unknown ID, a
card of the other batch, a card already dealt), from the ``shoe`` event
that started dealing the batch to the next ``shoe`` event. The shoe names
cards by rank and suit only, so a switched card of the same rank and suit
from another deck of the batch is not seen here (the commitment names the
physical card, by card-set record); the real-time check inside the shoe is
where that would be caught.

Exit status: 0 the shoe dealt the committed order; 1 (exits.EXIT_FOUND) any
difference, named (a seal not signed by the shuffler's key included); 2 a
bad reveal file, an ambiguous shoe, or no registered public key for the
shuffler whose seal it is; 3 a file that
cannot be read; 5 a store that cannot be used.
"""

import json
import re
import sys

from host_tools.exits import ShoeError
from host_tools import exits

from firmware.baccarat import cards
from firmware.shuffler import commit, seal

# Intake refusals in the shoe (firmware/cardset/intake.py): a physical card
# was drawn and read, but never given to the game.
REFUSED_RULES = ("unknown_card", "duplicate_card", "wrong_batch")
_NAME = re.compile(r"^[A23456789TJQK][CDHS]$")
_ID = re.compile(r"^[AB]-[0-9]{1,10}$")


class RevealError(ShoeError, ValueError):
    """The reveal file is not one the audit can read (exit 2)."""


class Irregular(ShoeError):
    """A difference between the committed order and what was dealt (exit 1)."""


def parse_reveal(data):
    """The reveal file (bytes) as a dict; RevealError with one line if not."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeError, ValueError) as exc:
        raise RevealError("the reveal file is not JSON: %s" % exc)
    if not isinstance(doc, dict):
        raise RevealError("the reveal file must be a JSON object")
    for key in ("batch_id", "order", "records", "salt", "commitment", "returned"):
        if key not in doc:
            raise RevealError("the reveal file has no %r" % key)
    if not isinstance(doc["batch_id"], str) or not _ID.match(doc["batch_id"]):
        raise RevealError("batch_id must look like \"A-3\" (batch letter, serial), not %r" % (doc["batch_id"],))
    for key in ("order", "returned"):
        v = doc[key]
        if not isinstance(v, list) or not all(isinstance(n, str) and _NAME.match(n) for n in v):
            raise RevealError("%s must be a list of card names like \"TD\"" % key)
    recs = doc["records"]
    if not isinstance(recs, list) or not all(type(r) is int and 0 <= r <= 0xFFFF for r in recs):
        raise RevealError("records must be a list of card-set record numbers 0..65535")
    if len(recs) != len(doc["order"]):
        raise RevealError("records has %d entries and order %d" % (len(recs), len(doc["order"])))
    if not doc["order"]:
        raise RevealError("the order is empty")
    for key, size in (("salt", commit.SALT_BYTES), ("commitment", commit.DIGEST_BYTES)):
        v = doc[key]
        if not isinstance(v, str) or not re.match(r"^[0-9a-f]{%d}$" % (2 * size), v):
            raise RevealError("%s must be %d lower-case hex digits" % (key, 2 * size))
    for key in ("shoe",):
        if key in doc and not isinstance(doc[key], str):
            raise RevealError("%s must be a string" % key)
    if "shoe_seq" in doc and type(doc["shoe_seq"]) is not int:
        raise RevealError("shoe_seq must be a whole number")
    return doc


def _events(store, shoe_id):
    for row in store.rows(shoe_id):
        try:
            ev = json.loads(row["event"])
        except ValueError:
            continue
        if isinstance(ev, dict):
            yield row["seq"], ev


def published_commitment(store, batch_id, public_key):
    """(commit, shuffler id, counter) of the shuffler's seal event for
    batch_id, or None when the store holds none. Every such seal must be
    signed by the secure element of the shuffler it is stored under:
    ``public_key(device_id)`` gives that device's registered key (X||Y) or
    raises PublicKeyMissing; a seal that is unsigned, or whose signature
    does not check, is Irregular (its commitment is never taken), and so
    are two seals of one id that differ."""
    found = set()
    for shoe_id in store.shoe_ids():
        for seq, ev in _events(store, shoe_id):
            if (ev.get("type") == "custody" and ev.get("to") == "sealed" and ev.get("id") == batch_id
                    and ev.get("source") == SOURCE):
                _check_seal(shoe_id, seq, ev, public_key(shoe_id))
                found.add((ev.get("commit"), shoe_id, ev.get("counter")))
    if len({f[0] for f in found}) > 1:
        raise Irregular("the store holds %d different seals of batch %s" % (len(found), batch_id))
    return min(found) if found else None


def _check_seal(device_id, seq, ev, xy):
    """Irregular unless ``ev`` carries the chip's signature over its own
    statement (shuffler/seal.py) under the key ``xy``."""
    from host_tools.protocol import pubkeys
    where = "the seal of batch %s (shuffler %s, seq %d)" % (ev.get("id"), device_id, seq)
    sig, counter, commit_hex = ev.get("sig"), ev.get("counter"), ev.get("commit")
    if not isinstance(sig, str) or type(counter) is not int or not isinstance(commit_hex, str):
        raise Irregular("%s is not signed by the shuffler's secure element (%s): its commitment is not taken"
                        % (where, ev.get("unsigned") or "no signature"))
    try:
        rs = bytes.fromhex(sig)
    except ValueError:
        rs = b""
    if not pubkeys.verify(xy, seal.statement(device_id, ev["id"], commit_hex, counter), rs):
        raise Irregular("%s: the signature does not check under the shuffler's registered public key: "
                        "its commitment is not taken" % where)


class PublicKeyMissing(ShoeError, ValueError):
    """No registered public key for a shuffler whose seal is in the store (exit 2)."""


def key_lookup(pubkey=None, key_dir=None):
    """``public_key(device_id)`` for published_commitment: the file
    ``pubkey`` for every device, else ``<key_dir>/<ID>.pub`` (default:
    `shoe deploy`'s key directory); the one reader of a .pub
    (host_tools/protocol/pubkeys.py)."""
    import pathlib

    from host_tools.protocol import pubkeys

    def lookup(device_id):
        if pubkey:
            path = pathlib.Path(pubkey)
        else:
            from host_tools import deploy
            path = pathlib.Path(key_dir or deploy.DEFAULT_KEY_DIR).expanduser() / ("%s.pub" % device_id)
        try:
            return pubkeys.read_public(path)
        except pubkeys.PublicKeyFileError as e:
            raise PublicKeyMissing("the seal's signature cannot be checked, so no commitment is taken: %s "
                                   "(give --pubkey ID.pub or --key-dir)" % e) from None
    return lookup


# What this audit cannot see, said in every report (docs/shuffler.md, "Audit").
NOT_CHECKED = (
    "not checked: a card switched for a same-named card of another deck of the batch (the shoe's "
    "events name rank and suit only)",
    "not checked here: the link tags of the seal event and of the shoe's events, and the record's signed "
    "checkpoints (run `shoe verify`)",
    "not checked: that the returned cards are the physical ones (they are as the shuffler's intake "
    "read them)",
)


def dealt_cards(store, shoe_id, batch_id, shoe_seq=None):
    """(seq of the shoe event, [(seq, card name or None), ...]) of the shoe
    that dealt batch_id. RevealError when no shoe, or more than one, fits."""
    letter = batch_id[0]
    shoes = []
    rows = list(_events(store, shoe_id))
    for i, (seq, ev) in enumerate(rows):
        if ev.get("type") == "shoe":
            shoes.append((i, seq, ev))
    if shoe_seq is not None:
        fit = [s for s in shoes if s[1] == shoe_seq]
        if not fit or fit[0][2].get("batch") != letter:
            raise RevealError("seq %d of shoe %s is not a `shoe` event dealing batch %s"
                              % (shoe_seq, shoe_id, letter))
    else:
        fit = [s for s in shoes if s[2].get("batch_id") == batch_id]
        if not fit:
            fit = [s for s in shoes if s[2].get("batch") == letter]
            if len(fit) > 1:
                raise RevealError("shoe %s dealt batch %s %d times (seq %s): name the one in the "
                                  "reveal file's shoe_seq" % (shoe_id, letter, len(fit),
                                                              ", ".join(str(s[1]) for s in fit)))
        if not fit:
            raise RevealError("shoe %s has no `shoe` event dealing batch %s" % (shoe_id, letter))
    start, seq0, _ev = fit[0]
    out = []
    for seq, ev in rows[start + 1:]:
        kind = ev.get("type")
        if kind == "shoe":
            break
        if kind == "card":
            out.append((seq, ev.get("card")))
        elif kind == "irregularity" and ev.get("rule") in REFUSED_RULES:
            out.append((seq, ev.get("card")))  # None: an unknown ID
    return seq0, out


def _ordinal(n):
    if 10 <= n % 100 <= 20:
        return "%dth" % n
    return "%d%s" % (n, {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def compare(order, dealt, returned):
    """Check dealt + returned against the rotations of order. Returns
    (offset, None) when they match, else (offset, message naming the first
    card that differs)."""
    n = len(order)
    seen = dealt + returned
    names = [c for _seq, c in dealt]
    if not dealt:
        return 0, "the shoe read no card of this batch"
    candidates = [r for r in range(n) if order[r] == names[0]] or [0]
    best, best_len = candidates[0], -1
    for r in candidates:
        k = 0
        while k < len(seen) and k < n:
            want = order[(r + k) % n]
            got = seen[k][1] if k < len(dealt) else seen[k]
            if got != want:
                break
            k += 1
        if k > best_len:
            best, best_len = r, k
    k = best_len
    if k == n and len(seen) == n:
        return best, None
    if k == len(seen):  # every card matched, but fewer than the order holds
        return best, ("%d card(s) of the order neither dealt nor returned, the first %s at position %d "
                      "of the order" % (n - len(seen), order[(best + k) % n], (best + k) % n + 1))
    if k >= n:
        extra = seen[n]
        what = extra[1] if isinstance(extra, tuple) else extra
        where = ("read by the shoe (event seq %d)" % extra[0]) if isinstance(extra, tuple) \
            else "returned at the intake"
        return best, "an extra card %s %s after the whole order" % (what or "with an unknown ID", where)
    want = order[(best + k) % n]
    pos = (best + k) % n + 1
    if k < len(dealt):
        seq, got = dealt[k]
        if k == 0:
            return best, ("the first card the shoe read (event seq %d) is %s, which is not in the "
                          "committed order: a cold deck or a switched card" % (seq, got or "an unknown ID"))
        return best, ("the %s card the shoe read (event seq %d) is %s where the committed order "
                      "has %s (position %d of the order, cut at %d): a switched card or a stacked "
                      "shoe" % (_ordinal(k + 1), seq, got or "an unknown ID", want, pos, best + 1))
    j = k - len(dealt)
    return best, ("the %s card returned at the intake is %s where the committed order has %s "
                  "(position %d of the order): a card switched in the shoe or on its way back"
                  % (_ordinal(j + 1), returned[j], want, pos))


def audit(store, doc, shoe_id, registry, public_key):
    """Lines of the report; raises Irregular on the first difference.
    ``registry`` (the card set) is required: names are always bound to
    records. ``public_key``: key_lookup's, for the seal's signature."""
    if registry is None:
        raise RevealError(CARDSET_NEEDED)
    bid = doc["batch_id"]
    # Which shoe dealt the batch is a question about the input (exit 2), so
    # it is settled before anything is judged.
    seq0, dealt = dealt_cards(store, shoe_id, bid, doc.get("shoe_seq"))
    salt = bytes.fromhex(doc["salt"])
    found = published_commitment(store, bid, public_key)
    if found is None:
        raise Irregular("no seal event of the shuffler for batch %s in the store: the commitment is "
                        "taken only from the seal, never from the reveal file" % bid)
    published, shuffler_id, counter = found
    source = "the shuffler's seal event in the store, signed by %s's secure element (seal counter %d)" % (
        shuffler_id, counter)
    if published != doc["commitment"]:
        raise Irregular("the reveal file's commitment %s... is not the one published at the seal %s..."
                        % (doc["commitment"][:16], published[:16]))
    if len(set(doc["records"])) != len(doc["records"]):
        raise Irregular("the revealed order names one physical card (card-set record) twice")
    if not commit.opens(bytes.fromhex(published), salt, bid, doc["records"]):
        raise Irregular("the commitment of batch %s does not open with the revealed order and salt"
                        % bid)
    lines = ["batch %s: the commitment opens (published value from %s)" % (bid, source)]
    order = doc["order"]
    # Names bound to records, always: a name edited in the reveal file to hide a switch fails here.
    letter = 1 if bid[0] == "A" else 2
    for i, r in enumerate(doc["records"]):
        if not (r < registry.count and registry.card(r) < 52 and registry.batch(r) == letter
                and cards.name(registry.card(r)) == order[i]):
            raise Irregular("position %d of the order names %s but its record %d is not that card "
                            "of batch %s in the card set" % (i + 1, order[i], r, bid[0]))
    if len(order) != registry.decks(letter) * 52:
        raise Irregular("the order holds %d cards, batch %s holds %d"
                        % (len(order), bid[0], registry.decks(letter) * 52))
    lines.append("the %d revealed names match their card-set records" % len(order))
    rc = doc.get("returned_check")
    if rc is not None:
        if rc["published"] is None:
            raise Irregular("the returned read-back of batch %s was revealed but never committed" % bid)
        try:
            opened = commit.opens(bytes.fromhex(rc["published"]), bytes.fromhex(rc["salt"] or ""),
                                  bid + commit.RETURNED_SUFFIX, rc["records"])
        except ValueError:
            opened = False
        if not opened:
            raise Irregular("the returned read-back of batch %s does not open its commitment" % bid)
    if doc.get("returned_pending"):
        names = [c for _seq, c in dealt]
        offset, diff = compare(order, dealt, order_rest(order, names))
        if diff:
            raise Irregular(diff)
        lines.append("shoe %s (from event seq %d) read %d cards, burn included, from position %d of the "
                     "order: dealt as committed" % (shoe_id, seq0, len(dealt), offset + 1))
        lines.append("not checked yet: the %d cards not dealt (the returned read-back of %s is committed "
                     "and revealed at the batch's next load)" % (len(order) - len(dealt), bid))
        lines.extend(NOT_CHECKED)
        return lines
    offset, diff = compare(order, dealt, doc["returned"])
    if diff:
        raise Irregular(diff)
    lines.append("shoe %s (from event seq %d) read %d cards, burn included, from position %d of the "
                 "order; %d returned at the intake complete it: dealt exactly as committed"
                 % (shoe_id, seq0, len(dealt), offset + 1, len(doc["returned"])))
    lines.extend(NOT_CHECKED)
    return lines


def order_rest(order, names):
    """The rest of the rotation after the dealt run, as if returned: used only
    while the real read-back is not revealed yet, so compare() checks the
    dealt run alone (an empty dealt run stays an irregularity there)."""
    if not names:
        return []
    n = len(order)
    for r in range(n):
        if all(order[(r + k) % n] == names[k] for k in range(min(len(names), n))):
            return [order[(r + len(names) + j) % n] for j in range(max(0, n - len(names)))]
    return []


# -- the reveal from the store alone -------------------------------------------

SOURCE = "shuffler"


def reveal_from(events, batch_id):
    """The reveal file's fields from a shuffler's ``reveal`` and ``returned``
    events for one batch id (sent in parts, firmware/shuffler/device.py), or
    None while its reveal is incomplete. ``returned`` is every card read at
    the intake when the batch came back, in order: the shoe's undealt
    remainder first (fed first, in the order it left the shoe), then the
    discards; ``returned_for`` cuts it to the remainder."""
    parts, back = {}, {}
    committed = None
    for e in events:
        if e.get("source") != SOURCE or e.get("id") != batch_id:
            continue
        if e.get("type") == "reveal":
            parts[e.get("part")] = e
        elif e.get("type") == "returned":
            back[e.get("part")] = e
        elif e.get("type") == "returned_commit":
            committed = e
    if not parts or len(parts) != next(iter(parts.values())).get("parts"):
        return None
    recs, order = [], []
    for k in sorted(parts):
        text = parts[k]["records"]
        recs += [int(text[i:i + 4], 16) for i in range(0, len(text), 4)]
        order += parts[k]["cards"]
    first = parts[min(parts)]
    doc = {"batch_id": batch_id, "records": recs, "order": order, "salt": first["salt"],
           "commitment": first["commitment"], "returned": []}
    if back and len(back) == next(iter(back.values())).get("parts"):
        rrecs = []
        for k in sorted(back):
            doc["returned"] += back[k]["cards"]
            text = back[k].get("records", "")
            rrecs += [int(text[i:i + 4], 16) for i in range(0, len(text), 4)]
        b0 = back[min(back)]
        doc["returned_check"] = {"salt": b0.get("salt"), "records": rrecs,
                                 "published": committed.get("commit") if committed else None}
    else:
        # Committed when read, revealed at the batch's next load (the order
        # it fed must be out first): not yet.
        doc["returned_pending"] = committed is not None or not back
    return doc


def _stored(store):
    """(device id, seq, event, received) of every stored event, oldest first."""
    out = []
    for shoe_id, seq, text, received in store.db.execute(
            "SELECT shoe_id, seq, event, received FROM events ORDER BY received, shoe_id, seq"):
        try:
            ev = json.loads(text)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append((shoe_id, seq, ev, received))
    return out


def reveals_in_store(store):
    """A reveal document per batch the store holds a complete reveal of,
    with the shoe that dealt it: the first ``shoe`` event of the batch's
    letter, from another device, stored after the shuffler released it."""
    rows = _stored(store)
    shuffler_events = [ev for _i, _s, ev, _r in rows if ev.get("source") == SOURCE]
    released = {}
    devices = set()
    ids = []
    for shoe_id, _seq, ev, received in rows:
        if ev.get("source") != SOURCE:
            continue
        devices.add(shoe_id)
        if ev.get("type") == "custody" and ev.get("to") == "released":
            released.setdefault(ev.get("id"), received)
        if ev.get("type") == "reveal" and ev.get("id") not in ids:
            ids.append(ev.get("id"))
    docs = []
    for bid in ids:
        doc = reveal_from(shuffler_events, bid)
        if doc is None:
            continue
        since = released.get(bid)
        for shoe_id, seq, ev, received in rows:
            if shoe_id in devices or ev.get("type") != "shoe" or ev.get("batch") != bid[0]:
                continue
            if since is not None and received >= since:
                doc["shoe"], doc["shoe_seq"] = shoe_id, seq
                break
        docs.append(doc)
    return docs


def returned_for(store, doc, shoe_id):
    """Cut the intake's reads to the shoe's undealt remainder."""
    _seq0, dealt = dealt_cards(store, shoe_id, doc["batch_id"], doc.get("shoe_seq"))
    doc["returned"] = doc["returned"][:max(0, len(doc["records"]) - len(dealt))]
    return doc


def run_store(args, store, registry):
    """`audit --db DB` without --reveal: every batch revealed on the link.
    ``args``: its ``pubkey`` and ``key_dir`` say where the shuffler's
    registered public key is (key_lookup)."""
    public_key = key_lookup(getattr(args, "pubkey", None), getattr(args, "key_dir", None))
    docs = reveals_in_store(store)
    if not docs:
        print("shoe shuffler audit: the store holds no complete reveal from a shuffler "
              "(give --reveal FILE for a reveal made elsewhere)", file=sys.stderr)
        return exits.EXIT_USAGE
    status = 0
    for doc in docs:
        if "shoe" not in doc:
            print("shoe shuffler audit: IRREGULARITY in batch %s: revealed, but no shoe dealt it after "
                  "its release" % doc["batch_id"])
            status = exits.EXIT_FOUND
            continue
        try:
            lines = audit(store, returned_for(store, doc, doc["shoe"]), doc["shoe"], registry, public_key)
        except (RevealError, PublicKeyMissing) as exc:
            print("shoe shuffler audit: batch %s: %s" % (doc["batch_id"], exc), file=sys.stderr)
            status = status or exits.EXIT_USAGE
            continue
        except Irregular as exc:
            print("shoe shuffler audit: IRREGULARITY in batch %s: %s" % (doc["batch_id"], exc))
            status = exits.EXIT_FOUND
            continue
        for line in lines:
            print(line)
    return status


CARDSET_NEEDED = ("--cardset FILE is required: every revealed name is checked against its card-set record "
                  "(the store holds no card set)")


def run(args):
    from firmware.cardset import registry as _registry
    from host_tools.store import db, export
    doc = None
    if not args.cardset:
        print("shoe shuffler audit: %s" % CARDSET_NEEDED, file=sys.stderr)
        return exits.EXIT_USAGE
    try:
        if args.reveal is not None:
            doc = parse_reveal(exits.read_input(args.reveal))
        registry = _registry.load(args.cardset)
    except (RevealError, _registry.CardSetError) as exc:
        print("shoe shuffler audit: %s" % exc, file=sys.stderr)
        return exits.EXIT_USAGE
    if doc is None:
        with db.open_existing(args.db) as store:
            return run_store(args, store, registry)
    with db.open_existing(args.db) as store:
        shoe_id = export.pick_shoe(store, args.shoe or doc.get("shoe"))
        try:
            lines = audit(store, doc, shoe_id, registry, key_lookup(args.pubkey, args.key_dir))
        except (RevealError, PublicKeyMissing) as exc:
            print("shoe shuffler audit: %s" % exc, file=sys.stderr)
            return exits.EXIT_USAGE
        except Irregular as exc:
            print("shoe shuffler audit: IRREGULARITY in batch %s: %s" % (doc["batch_id"], exc))
            return exits.EXIT_FOUND
    for line in lines:
        print(line)
    return 0
