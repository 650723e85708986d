"""The attacker with the shuffler's flash (Deck Mate 2, 2023; docs/shuffler.md,
"Nothing of the order at rest"): every file of the emulated shuffler's flash
is dumped while batch A is sealed inside and again while it is in the shoe.
Neither dump may hold a run of the order's card-set records (in any encoding
the firmware writes: hex text, decimal JSON, 16-bit words), a run of its
card names, or the salt that opens the published commitment.

The order and the salt are learned afterwards, from the reveal when the
batch comes back, which is when they may be public."""

import os
import re

import pytest

from firmware.baccarat import cards
from host_tools.sim.rigs.shuffler import Rig, reveal_from
from host_tools.sim.shuffler_emulate import TwoBatchSet

A = 1
RUN = 4   # consecutive cards of the order: a run this long is never there by chance


def dump(directory):
    """Every file under the flash directory, as (path, bytes)."""
    out = []
    for root, _dirs, files in os.walk(directory):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out.append((p, fh.read()))
    return out


def leaks(files, records, names, salt):
    """What of the order or salt the files hold: a list of (file, what)."""
    found = []
    sep = rb"[^0-9A-Za-z]{0,8}"
    for path, data in files:
        low = data.lower()
        if salt in data or salt.hex().encode() in low:
            found.append((path, "salt"))
        for i in range(len(records) - RUN + 1):
            run = records[i:i + RUN]
            pats = [b"".join(b"%04x" % r for r in run),
                    sep.join(b"%d" % r for r in run),
                    b"".join(r.to_bytes(2, "big") for r in run),
                    b"".join(r.to_bytes(2, "little") for r in run)]
            for k, p in enumerate(pats):
                if (k == 1 and re.search(rb"(?<![0-9])" + p + rb"(?![0-9])", data)) or (k != 1 and p in low):
                    found.append((path, "records run at %d (%s)" % (i, ("hex", "decimal", "u16be", "u16le")[k])))
                    break
            nrun = [re.escape(n.encode()) for n in names[i:i + RUN]]
            if re.search(sep.join(nrun), data):
                found.append((path, "card names run at %d" % i))
    return found


@pytest.fixture
def rig(tmp_path):
    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=1, seed=11)
    yield r
    r.close()


def test_the_flash_holds_no_order_and_no_salt_while_sealed_or_in_the_shoe(rig):
    uids = rig.emu.cards.new_deck_order(A)
    since = rig.load("A", uids)
    rig.custody("A", "sealed", since=since)
    sealed_dump = dump(rig.emu.dir)
    rig.emu.press("release")
    rig.custody("A", "released", since=since)
    stack = [u for u, _c in rig.emu.take()]
    in_shoe_dump = dump(rig.emu.dir)
    # The shoe ends; the batch comes back and is revealed: now we know.
    since = rig.load("A", stack)
    rig.custody("A", "checked", since=since)
    doc = reveal_from(rig.events, "A-1")
    assert doc is not None and len(doc["records"]) == 52
    names = [cards.name(TwoBatchSet.card_of(u)[2]) for u in stack]
    assert doc["order"] == names
    salt = bytes.fromhex(doc["salt"])
    # The search itself finds what is there: the revealed order is on the
    # flash now (the journal holds the reveal events).
    assert leaks(dump(rig.emu.dir), doc["records"], names, salt)
    assert leaks(sealed_dump, doc["records"], names, salt) == []
    assert leaks(in_shoe_dump, doc["records"], names, salt) == []
