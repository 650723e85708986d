"""`shoe shuffler audit`: a revealed batch against what the shoe dealt
(host_tools/shuffler/audit.py; docs/shuffler.md, "Audit").

The honest shoe is a real one: the firmware's custody machine checks,
shuffles and seals an 8-deck batch A; the simulated dealer (host_tools/
dealer.py) deals that order after a cut, by the rules; the game core
deals the script (`shoe deal`, CPython) and its events are written to a
store with db.Store.append, as the bridge does (without tags: the audit
reads events, not the link's proof of them, which `shoe verify` checks).
"""

import json
import os
import subprocess
import sys

import pytest

from firmware.baccarat import cards
from host_tools.sim import dealer
from host_tools.deal import deal_bytes
from host_tools.shuffler import audit
from host_tools.store import db
from firmware.shuffler import custody, entropy, shuffle

SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")
from support.cardsets import A, REG, SET_BYTES, uid as _uid  # noqa: E402
from support.sealsign import Signer  # noqa: E402

SHUFFLER = "SHUF-1"


def sealed_batch(seed=11):
    """The custody machine's commitment and, after the shoe, its reveal."""
    m = custody.Shuffler(REG, shuffle.Decider(entropy.SeededSource(seed)))
    m.load(A)
    for d in range(1, 9):
        for c in range(52):
            u = _uid(d, c)
            assert m.read(REG.find(u, len(u)), A) is custody.NONE
    assert m.end(A)[-1]["to"] == "checked"
    m.shuffle(A)
    m.shuffled(A)
    seal = m.seal(A)[0]
    m.release(A)
    return m, seal


def deal(order_names, cut, cover_depth=16, seed=3):
    """The shoe's events for a dealer dealing the order after a cut at ``cut``."""
    d = dealer.Dealer(seed, decks=8, cover_depth=cover_depth)
    codes = [cards.parse(n) for n in order_names]
    d.stack = codes[cut:] + codes[:cut]
    d.cover_at = len(codes) - cover_depth
    return list(d.lines())


def store_events(path, script_lines, shoe_id="SHOE-1", extra=(), shuffler_id=SHUFFLER):
    """The shoe's events under ``shoe_id``; ``extra`` (event lines from the
    shuffler, its seal) under ``shuffler_id``, as the bridge files each
    device's events under its own id. Returns the shoe's events (index k
    is seq k + 1)."""
    out = deal_bytes(("\n".join(script_lines) + "\n").encode())
    lines = out.decode().splitlines()
    with db.Store(path) as store:
        for seq, line in enumerate(extra, 1):
            store.append(shuffler_id, seq, line)
        for seq, line in enumerate(lines, 1):
            store.append(shoe_id, seq, line)
    return [json.loads(x) for x in lines]


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """An honest shoe: (store path, reveal file path, reveal dict, events)."""
    tmp = tmp_path_factory.mktemp("audit")
    m, seal = sealed_batch()
    m.load(A)  # the shoe ended; the batch comes back and the order may be revealed
    rv = m.reveal(A)
    order = [cards.name(REG.card(r)) for r in rv["records"]]
    cut = 137
    script = deal(order, cut)
    signer = Signer(tmp, SHUFFLER)
    seal = signer.sign(dict(seal, source="shuffler"))
    events = store_events(tmp / "s.db", script, extra=[json.dumps(seal)])
    events = [e for e in events if e.get("source") != "shuffler"]
    dealt = sum(1 for e in events if e["type"] == "card")
    returned = [order[(cut + dealt + j) % len(order)] for j in range(len(order) - dealt)]
    doc = {"batch_id": rv["id"], "order": order, "records": rv["records"], "salt": rv["salt"],
           "commitment": rv["commitment"], "returned": returned, "shoe": "SHOE-1"}
    assert doc["commitment"] == seal["commit"]
    (tmp / "reveal.json").write_text(json.dumps(doc))
    # For tests that build their own store (not part of a reveal file): the
    # seal, its signer, and the shuffler's registered key run_audit gives.
    doc = dict(doc, seal=seal, signer=signer, pubkey=str(signer.pub_path))
    cs = tmp / "set.cards"
    cs.write_bytes(SET_BYTES)
    return tmp, doc, script, events, cut


def run_audit(db_path, doc, tmp, *more, cardset=True):
    """The audit on a reveal file; the card set is given unless ``cardset`` is False."""
    if "pubkey" in doc and "--pubkey" not in more and "--key-dir" not in more:
        more = more + ("--pubkey", doc["pubkey"])
    doc = {k: v for k, v in doc.items() if k not in ("seal", "signer", "pubkey")}
    path = tmp / ("r%d.json" % abs(hash(json.dumps(doc))))
    path.write_text(json.dumps(doc))
    if cardset and "--cardset" not in more:
        (tmp / "set.cards").write_bytes(SET_BYTES)
        more = more + ("--cardset", str(tmp / "set.cards"))
    r = subprocess.run([SHOE, "shuffler", "audit", "--db", str(db_path), "--reveal", str(path)] + list(more),
                       capture_output=True, text=True, timeout=60)
    assert "Traceback" not in r.stderr
    return r


def test_audit_passes_an_honest_shoe(honest):
    tmp, doc, _script, events, cut = honest
    r = run_audit(tmp / "s.db", doc, tmp, "--cardset", str(tmp / "set.cards"))
    assert r.returncode == 0, r.stdout + r.stderr
    dealt = sum(1 for e in events if e["type"] == "card")
    assert "commitment opens" in r.stdout
    assert "the 416 revealed names match" in r.stdout
    assert "not checked: a card switched for a same-named card of another deck" in r.stdout
    assert "not checked here: the link tags" in r.stdout
    assert "read %d cards, burn included, from position %d" % (dealt, cut + 1) in r.stdout
    assert 300 < dealt < 416


def _switch_40th_card(doc, script):
    """The script with its 40th card line (a card the shoe reads) naming
    another card: (script, the card that was there, the card put there)."""
    card_lines = [i for i, line in enumerate(script) if line[:2] in doc["order"]]
    i = card_lines[39]
    was = script[i][:2]
    new = "AS" if was != "AS" else "KD"
    switched = list(script)
    switched[i] = new + script[i][2:]
    return switched, was, new


def test_audit_catches_a_card_switched_between_shuffler_and_shoe(honest, tmp_path):
    tmp, doc, script, events, _cut = honest
    # The 40th card line of the script (a card the shoe reads) is replaced by
    # another card: someone switched it after the seal.
    switched, was, new = _switch_40th_card(doc, script)
    evs = store_events(tmp_path / "s.db", switched, extra=[json.dumps(doc["seal"])])
    seq = [k for k, e in enumerate(evs, 1) if e["type"] == "card"][39]
    r = run_audit(tmp_path / "s.db", doc, tmp_path)
    assert r.returncode == 1
    assert ("the 40th card the shoe read (event seq %d) is %s where the committed order has %s"
            % (seq, new, was)) in r.stdout


def test_audit_catches_a_cold_deck(honest, tmp_path):
    tmp, doc, script, _events, _cut = honest
    cold = [line for line in dealer.script(99, decks=8)]
    store_events(tmp_path / "s.db", cold, extra=[json.dumps(doc["seal"])])
    r = run_audit(tmp_path / "s.db", doc, tmp_path)
    assert r.returncode == 1 and "IRREGULARITY in batch A-1" in r.stdout
    assert "card the shoe read" in r.stdout


def test_audit_catches_a_switch_in_the_returned_cards_and_a_short_return(honest):
    tmp, doc, *_ = honest
    bad = dict(doc, returned=list(doc["returned"]))
    was = bad["returned"][5]
    bad["returned"][5] = "AS" if was != "AS" else "KD"
    r = run_audit(tmp / "s.db", bad, tmp)
    assert r.returncode == 1
    assert "the 6th card returned at the intake is %s where the committed order has %s" % (
        bad["returned"][5], was) in r.stdout
    short = dict(doc, returned=doc["returned"][:-2])
    r = run_audit(tmp / "s.db", short, tmp)
    assert r.returncode == 1 and "2 card(s) of the order neither dealt nor returned" in r.stdout
    extra = dict(doc, returned=doc["returned"] + ["AS"])
    r = run_audit(tmp / "s.db", extra, tmp)
    assert r.returncode == 1 and "an extra card AS returned at the intake" in r.stdout


def test_audit_refuses_an_order_or_salt_that_does_not_open(honest):
    tmp, doc, *_ = honest
    swapped = dict(doc, records=[doc["records"][1], doc["records"][0]] + doc["records"][2:])
    r = run_audit(tmp / "s.db", swapped, tmp)
    assert r.returncode == 1 and "does not open" in r.stdout
    salted = dict(doc, salt="00" * 16)
    r = run_audit(tmp / "s.db", salted, tmp)
    assert r.returncode == 1 and "does not open" in r.stdout
    # names that are not the committed records: caught with the card set
    renamed = dict(doc, order=[doc["order"][1], doc["order"][0]] + doc["order"][2:])
    if renamed["order"] != doc["order"]:
        r = run_audit(tmp / "s.db", renamed, tmp, "--cardset", str(tmp / "set.cards"))
        assert r.returncode == 1 and "position 1 of the order names" in r.stdout


def test_audit_prefers_the_published_commitment_in_the_store(honest, tmp_path):
    tmp, doc, script, *_ = honest
    m, seal = sealed_batch(seed=12)  # another seal of "A-1", published on the link
    seal = dict(seal, source="shuffler")
    store_events(tmp_path / "s.db", script, extra=[doc["signer"].line(seal)])
    r = run_audit(tmp_path / "s.db", doc, tmp_path)
    assert r.returncode == 1 and "not the one published at the seal" in r.stdout
    ok = dict(doc)
    store_events(tmp_path / "t.db", script, extra=[doc["signer"].line(dict(seal, commit=doc["commitment"]))])
    r = run_audit(tmp_path / "t.db", ok, tmp_path)
    assert r.returncode == 0 and "seal event in the store" in r.stdout


def test_bad_reveal_files_and_stores_get_one_line(honest, tmp_path):
    tmp, doc, *_ = honest
    pubkey = doc["pubkey"]
    doc = {k: v for k, v in doc.items() if k not in ("seal", "signer", "pubkey")}   # what a reveal file holds
    cases = [("{", 2, "not JSON"), ("[]", 2, "JSON object"),
             (json.dumps(dict(doc, salt="xyz")), 2, "salt must be 32"),
             (json.dumps({k: v for k, v in doc.items() if k != "returned"}), 2, "no 'returned'"),
             (json.dumps(dict(doc, order=["ZZ"] + doc["order"][1:])), 2, "card names"),
             (json.dumps(dict(doc, batch_id="C-1")), 2, "batch_id")]
    for text, code, words in cases:
        p = tmp_path / "bad.json"
        p.write_text(text)
        r = subprocess.run([SHOE, "shuffler", "audit", "--db", str(tmp / "s.db"), "--reveal", str(p),
                            "--cardset", str(tmp / "set.cards")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == code and words in r.stderr and "Traceback" not in r.stderr, (text[:40], r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run([SHOE, "shuffler", "audit", "--db", str(tmp_path / "none.db"),
                        "--reveal", str(tmp / "reveal.json"), "--cardset", str(tmp / "set.cards")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 5 and "no store" in r.stderr
    r = subprocess.run([SHOE, "shuffler", "audit", "--db", str(tmp / "s.db"),
                        "--reveal", str(tmp_path / "missing.json"), "--cardset", str(tmp / "set.cards")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "Traceback" not in r.stderr
    # batch B was never dealt in this store
    r = run_audit(tmp / "s.db", dict(doc, batch_id="B-1", pubkey=pubkey), tmp_path)
    assert r.returncode == 2 and "no `shoe` event dealing batch B" in r.stderr


def test_two_shoes_of_one_batch_need_shoe_seq(honest, tmp_path):
    tmp, doc, script, *_ = honest
    evs = store_events(tmp_path / "s.db", script + script, extra=[json.dumps(doc["seal"])])
    r = run_audit(tmp_path / "s.db", doc, tmp_path)
    assert r.returncode == 2 and "dealt batch A 2 times" in r.stderr
    second = [k for k, e in enumerate(evs, 1) if e["type"] == "shoe"][1]
    r = run_audit(tmp_path / "s.db", dict(doc, shoe_seq=second), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_audit_refuses_a_reveal_whose_names_were_edited_to_hide_a_switch(honest, tmp_path):
    """The attacker switches the 40th card in the shoe and edits that one
    name in the reveal file so the dealt run matches; records, salt and
    commitment untouched, so the commitment still opens. No flag is given:
    the audit binds names to records by itself (the card set is required)."""
    tmp, doc, script, events, cut = honest
    switched, was, new = _switch_40th_card(doc, script)
    store_events(tmp_path / "s.db", switched, extra=[json.dumps(doc["seal"])])
    pos = (cut + 39) % len(doc["order"])
    assert doc["order"][pos] == was
    edited = dict(doc, order=list(doc["order"]))
    edited["order"][pos] = new
    r = run_audit(tmp_path / "s.db", edited, tmp_path, "--cardset", str(tmp / "set.cards"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "position %d of the order names %s but its record" % (pos + 1, new) in r.stdout
    # without --cardset the audit does not run at all: one line, exit 2
    r = run_audit(tmp_path / "s.db", edited, tmp_path, cardset=False)
    assert r.returncode == 2 and "--cardset" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_audit_takes_the_commitment_only_from_the_shuffler_seal_in_the_store(honest, tmp_path):
    """A store with no seal event: the reveal file's own commitment is not
    taken (whoever wrote the file would choose it)."""
    tmp, doc, script, *_ = honest
    store_events(tmp_path / "s.db", script)
    r = run_audit(tmp_path / "s.db", doc, tmp_path, "--cardset", str(tmp / "set.cards"))
    assert r.returncode == 1 and "no seal event of the shuffler for batch A-1" in r.stdout
    # a seal event a shoe wrote (not source shuffler) is not the shuffler's
    store_events(tmp_path / "t.db", script, extra=[json.dumps(dict(doc["seal"], source="shoe"))])
    r = run_audit(tmp_path / "t.db", doc, tmp_path, "--cardset", str(tmp / "set.cards"))
    assert r.returncode == 1 and "no seal event of the shuffler" in r.stdout


def test_the_commitment_is_taken_only_from_a_seal_the_shuffler_chip_signed(honest, tmp_path):
    """Whoever can write the store (an insider at the pit, with the
    shuffler's MAC key) cannot choose the commitment: a seal without the
    chip's signature, one whose commitment was changed after signing, one
    signed by another shuffler's chip, and a store whose shuffler has no
    registered key each fail in one line. Before the seal was signed, the
    audit took the commitment from any seal event of source shuffler."""
    tmp, doc, script, *_ = honest
    unsigned = {k: v for k, v in doc["seal"].items() if k not in ("sig", "counter")}
    store_events(tmp_path / "u.db", script, extra=[json.dumps(unsigned)])
    r = run_audit(tmp_path / "u.db", doc, tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("IRREGULARITY in batch A-1: the seal of batch A-1 (shuffler SHUF-1, seq 1) is not signed by "
            "the shuffler's secure element (no signature): its commitment is not taken") in r.stdout
    assert len(r.stdout.strip().splitlines()) == 1
    # The commitment replaced after the chip signed (a forger's re-sealed batch of its own order).
    m, other = sealed_batch(seed=13)
    forged = dict(doc["seal"], commit=other["commit"])
    store_events(tmp_path / "f.db", script, extra=[json.dumps(forged)])
    r = run_audit(tmp_path / "f.db", dict(doc, commitment=other["commit"]), tmp_path)
    assert r.returncode == 1 and "the signature does not check under the shuffler's registered public key" \
        in r.stdout, r.stdout + r.stderr
    # Signed, but by another shuffler's chip.
    stranger = Signer(tmp_path, "SHUF-9")
    store_events(tmp_path / "o.db", script, extra=[stranger.line(doc["seal"])])
    r = run_audit(tmp_path / "o.db", doc, tmp_path)
    assert r.returncode == 1 and "does not check" in r.stdout, r.stdout + r.stderr
    # The honest store, with no registered key at hand: one line, exit 2.
    nokeys = tmp_path / "nokeys"
    nokeys.mkdir()
    r = run_audit(tmp / "s.db", doc, tmp_path, "--key-dir", str(nokeys))
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "the seal's signature cannot be checked, so no commitment is taken" in r.stderr
    assert "SHUF-1.pub" in r.stderr
    # And with it: the commitment is taken, and the report says from which chip.
    r = run_audit(tmp / "s.db", doc, tmp_path, "--key-dir", str(tmp))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "signed by SHUF-1's secure element (seal counter %d)" % doc["seal"]["counter"] in r.stdout
