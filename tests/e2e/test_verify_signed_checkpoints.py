"""Signed checkpoints (docs/security.md, "Signed checkpoints"): the shoe's
secure element signs its chain head at every checkpoint, so an insider who
holds everything the pit holds (the MAC key, the store, the config) cannot
write a record that `shoe verify` accepts as the shoe's own.

The shoe here is the firmware's own session and link core under CPython
(host_tools/sim/shoestream.py) with the simulated ATECC608B on an in-process
I2C bus, driven by the firmware's driver; the signatures are checked by
`shoe verify` as a user runs it, and by `cryptography` directly."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from firmware.drivers.atecc608 import ATECC608
from firmware.drivers.atecc608_setup import provision
from host_tools.protocol import keys
from host_tools.sim import dealer
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C
from host_tools.sim.simtable import SimShoe
from host_tools.store import db
from support import forge


KEY = bytes(range(32))
SHOE = "SHOE-0A0B0C"
MANIFEST = "ab" * 32


def _chip(tmp_path):
    """A provisioned simulated chip (fast: a tenth of the datasheet times)
    and its public key as PEM."""
    chip = Chip(str(tmp_path / "chip.json"), timing=0.02)
    se = ATECC608(DirectI2C(Bus({ADDRESS: chip})))
    public = bytearray(64)
    provision(se, public)
    key = ec.EllipticCurvePublicNumbers(int.from_bytes(public[:32], "big"), int.from_bytes(public[32:], "big"),
                                        ec.SECP256R1()).public_key()
    pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return se, pem


def _lines(seed=1):
    return list(dealer.Dealer(seed, decks=8).lines())


def _record(tmp_path, se, name="pit.db", lines=None, upto=None, **board):
    """A pit store of one 8-deck shoe, filled as the bridge does."""
    path = tmp_path / name
    shoe = SimShoe(SHOE, KEY, lines=lines if lines is not None else _lines(), secure=se, manifest=MANIFEST,
                   workdir=str(tmp_path), **board)
    store = db.Store(str(path))
    try:
        while upto is None or shoe.seq < upto:
            try:
                shoe.deal(store)
            except StopIteration:
                break
    finally:
        store.close()
    return path, shoe


def _key_files(tmp_path, pem):
    kdir = tmp_path / "keys"
    key = kdir / ("%s.key" % SHOE)
    keys.write_key(key, KEY)
    key.with_suffix(".pub").write_bytes(pem)
    return key


def _verify(*args):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify"] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stdout + r.stderr


def _events(path):
    return forge.events(path, SHOE)


def _rewrite(path, out, change, fix_heads=False):
    return forge.rewrite(path, out, SHOE, KEY, change, fix_heads)


def _first_result_changed(rows):
    done = False
    out = []
    for seq, text in rows:
        event = json.loads(text)
        if not done and event["type"] == "result" and event["winner"] in ("banker", "player"):
            event["winner"] = "player" if event["winner"] == "banker" else "banker"
            text = json.dumps(event, separators=(",", ":"))
            done = seq
        out.append((seq, text))
    assert done
    return out


def test_checkpoints_are_signed_by_the_chip(tmp_path):
    se, pem = _chip(tmp_path)
    path, shoe = _record(tmp_path, se)
    shoe.close()
    public = serialization.load_pem_public_key(pem)
    cps = [(seq, json.loads(t)) for seq, t in _events(path) if json.loads(t)["type"] == "checkpoint"]
    assert len(cps) >= 3
    counters = [cp["counter"] for _, cp in cps]
    assert counters == sorted(set(counters)) and counters[0] >= 1
    tags = dict(sqlite3.connect(str(path)).execute("SELECT seq, mac FROM events").fetchall())
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    for seq, cp in cps:
        assert cp["through"] == seq - 1 and cp["head"] == tags[seq - 1] and cp["manifest"] == MANIFEST
        statement = ("shoe-checkpoint/1 %s %d %s %d %s" % (SHOE, cp["through"], cp["head"], cp["counter"],
                                                            cp["manifest"])).encode()
        sig = bytes.fromhex(cp["sig"])
        der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        public.verify(der, statement, ec.ECDSA(hashes.SHA256()))   # raises if not the chip's


def test_a_store_forged_with_everything_the_pit_holds_fails_at_the_first_checkpoint(tmp_path):
    se, pem = _chip(tmp_path)
    path, shoe = _record(tmp_path, se)
    shoe.close()
    key = _key_files(tmp_path, pem)
    rc, out = _verify("--db", path, "--key-file", key)
    assert rc == 0, out
    assert "its chip signed" in out
    forged = _rewrite(path, tmp_path / "forged.db", _first_result_changed)
    # The forgery is good enough for the MAC chain alone: that is the finding.
    rc, out = _verify("--db", forged, "--key-file", key, "--mac-only")
    assert rc == 0, out
    rc, out = _verify("--db", forged, "--key-file", key)
    assert rc == 1, out
    first_cp = [seq for seq, t in _events(path) if json.loads(t)["type"] == "checkpoint"][0]
    assert "FAIL shoe %s: seq %d" % (SHOE, first_cp) in out, out
    assert "is not the stored tag" in out, out
    # The forger may also rewrite each checkpoint's head to the new tag: then the signature fails.
    forged = _rewrite(path, tmp_path / "forged2.db", _first_result_changed, fix_heads=True)
    rc, out = _verify("--db", forged, "--pubkey", key.with_suffix(".pub"), "--key-file", key)
    assert rc == 1 and "FAIL shoe %s: seq %d: the signature does not verify" % (SHOE, first_cp) in out, out


def test_without_a_public_key_verify_says_so_and_fails_unless_mac_only(tmp_path):
    se, pem = _chip(tmp_path)
    path, shoe = _record(tmp_path, se, upto=300)
    shoe.close()
    key = _key_files(tmp_path, pem)
    key.with_suffix(".pub").unlink()
    rc, out = _verify("--db", path, "--key-file", key)
    assert rc == 1 and "no public key" in out and len([l for l in out.splitlines() if "public key" in l]) == 1, out
    rc, out = _verify("--db", path, "--key-file", key, "--mac-only")
    assert rc == 0, out


def test_events_after_the_last_signed_checkpoint_are_reported_as_such(tmp_path):
    se, pem = _chip(tmp_path)
    path, shoe = _record(tmp_path, se, upto=300)
    shoe.close()
    key = _key_files(tmp_path, pem)
    rc, out = _verify("--db", path, "--key-file", key)
    assert rc == 0, out
    last_cp = [seq for seq, t in _events(path) if json.loads(t)["type"] == "checkpoint"][-1]
    assert "events %d..300 not yet signed" % (last_cp + 1) in out, out


def test_a_journal_restored_from_an_earlier_copy_shows_in_the_counter(tmp_path):
    """The shoe's journal (and its marker) copied after the first checkpoint,
    play goes on past the second, then the copy is put back. The shoe itself
    sees it at boot (link/chipcount.py: its chip's counter is ahead of the
    journal) and tilts. An insider who also edits the copy, appending a
    counter record with the chip's value (the journal's records carry a
    CRC, not a MAC), gets a shoe that deals on from there; its record is
    whole under the MAC key and every signature is the chip's, but the
    chip's counter cannot go back: the counter value signed at the second
    checkpoint is missing from that record, and `shoe verify` says so."""
    from support.journalfile import append_u32
    from firmware.link import chipcount, journal
    se, pem = _chip(tmp_path)
    lines = _lines(3)
    path, shoe = _record(tmp_path, se, lines=lines, upto=300)
    shoe.stream.session.step()
    shoe.stream.session.journal.ack(shoe.stream.session.acked, shoe.stream.session.acked_tag)
    copy = tmp_path / "journal-copy"
    shutil.copytree(shoe.stream.dir, copy)
    rest = list(shoe.stream.lines)      # what the dealer deals after the copy
    shoe.stream.lines = iter(rest)
    store = db.Store(str(path))
    while shoe.seq < 600:
        shoe.deal(store)
    store.close()
    shoe.close()
    key = _key_files(tmp_path, pem)
    rc, out = _verify("--db", path, "--key-file", key)
    assert rc == 0, out
    restored = SimShoe(SHOE, KEY, lines=rest, secure=se, manifest=MANIFEST, workdir=str(tmp_path),
                       journal_from=str(copy))
    tilt = restored.stream.session.tilt
    restored.close()
    assert tilt is not None and tilt.startswith(chipcount.REASON) and "restored" in tilt, tilt
    # The insider's history: the same first 300 events, then the restored shoe, its journal edited.
    append_u32(copy / "journal.bin", journal.CHIP, se.counter(0, False))
    restored = SimShoe(SHOE, KEY, lines=rest, secure=se, manifest=MANIFEST, workdir=str(tmp_path),
                       journal_from=str(copy))
    assert restored.stream.session.tilt is None
    alt = tmp_path / "alt.db"
    store = db.Store(str(alt))
    first = _events(path)[:restored.stream.session.acked]
    tags = dict(sqlite3.connect(str(path)).execute("SELECT seq, mac FROM events").fetchall())
    for seq, text in first:
        store.append(SHOE, seq, text.encode(), mac=tags[seq], first_seq=1 if seq == 1 else None,
                     first_prev="0" * 32 if seq == 1 else None)
    try:
        while restored.seq < 600:
            seq, body, tag, prev = restored.next()
            store.append(SHOE, seq, body, mac=tag)
    finally:
        store.close()
        restored.close()
    rc, out = _verify("--db", alt, "--key-file", key, "--mac-only")
    assert rc == 0, out          # the MAC chain alone cannot tell
    rc, out = _verify("--db", alt, "--key-file", key)
    assert rc == 1 and "counter" in out and "restored" in out, out
