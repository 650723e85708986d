"""The shuffler's secure element (the simulated ATECC608B on the emulated
shuffler's I2C bus, provisioned as `shoe deploy --device shuffler` does a
board's; host_tools/sim/vmdevice.py): the link key is derived by the chip at
boot and never lies on the flash; the chip signs the record's checkpoints
and the seal, and `shoe verify` / `shoe shuffler audit` check them."""

import os
import re

import pytest

from host_tools.sim.rigs.shuffler import Rig


@pytest.fixture
def rig(tmp_path):
    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=1, seed=2)
    yield r
    r.close()


def test_the_link_key_is_the_chips_and_not_on_the_flash(rig, tmp_path):
    """An attacker with a dump of the flash gets no link key: no key file,
    and no file holds the key the pit authenticates the shuffler with;
    the bridge stores its events under that key, so the VM derived the
    same one from its chip (slot 2) and the peer's public half."""
    since = rig.load("A", rig.emu.cards.new_deck_order(1))
    rig.custody("A", "sealed", 120, since)
    key = rig.emu.key
    assert rig.emu.key_path == str(tmp_path / "flash.key") and len(key) == 32
    flash = [os.path.join(d, f) for d, _s, fs in os.walk(rig.emu.dir) for f in fs]
    assert not os.path.exists(os.path.join(rig.emu.dir, "shoe_key.bin"))
    for path in flash:
        with open(path, "rb") as f:
            data = f.read()
        assert key not in data and key.hex().encode() not in data.lower(), path
    assert os.path.exists(os.path.join(rig.emu.dir, "link_peer.bin"))
    assert any(e.get("type") == "shuffler_boot" for e in rig.events)


def _verify(*args):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify"] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stdout + r.stderr


def _commit_changed(rows):
    """The forger's edit: the seal's published commitment (the one record a
    shuffler's audit trusts) replaced by another."""
    import json
    out, done = [], False
    for seq, text in rows:
        event = json.loads(text)
        if not done and event.get("type") == "custody" and event.get("to") == "sealed":
            event["commit"] = "%064x" % (int(event["commit"], 16) ^ 1)
            text = json.dumps(event, separators=(",", ":"))
            done = seq
        out.append((seq, text))
    assert done
    return out


def test_a_shuffler_store_forged_with_everything_the_pit_holds_fails_at_its_first_checkpoint(tmp_path):
    """The shoe's forged-record test, on a shuffler's store: the pit holds
    the store and the shuffler's MAC key (``<flash>.key``); it changes the
    seal's commitment and recomputes every tag and link. The MAC chain
    alone accepts that; `shoe verify` (the shoe's own code path,
    protocol/checkpoints.py, with ``<flash>.pub`` beside the key) names
    the first checkpoint after the change; the untouched store passes.
    Before the chip signed the shuffler's checkpoints (and before the seal
    asked for one), verify passed the forgery."""
    import json
    from support import forge

    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=1, seed=2)
    try:
        since = r.load("A", r.emu.cards.new_deck_order(1))
        r.custody("A", "sealed", 120, since)
        # The seal asks for a checkpoint: without it the forged commitment
        # would sit in the unsigned tail verify allows, and prove nothing.
        r.wait(lambda e: e.get("type") == "checkpoint", "a checkpoint after the seal", 120, since)
        device_key = r.emu.key
    finally:
        r.close()
    key = tmp_path / "flash.key"
    rc, out = _verify("--db", tmp_path / "s.db", "--key-file", key)
    assert rc == 0, out
    forged = forge.rewrite(tmp_path / "s.db", tmp_path / "forged.db", "SHUF1", device_key, _commit_changed)
    rc, out = _verify("--db", forged, "--key-file", key, "--mac-only")
    assert rc == 0, out      # the MAC chain alone cannot tell
    rc, out = _verify("--db", forged, "--key-file", key)
    assert rc == 1, out      # before the chip signed the shuffler's checkpoints: 0, the forgery passed
    rows = forge.events(tmp_path / "s.db", "SHUF1")
    sealed = [seq for seq, t in rows if '"to":"sealed"' in t.replace(" ", "")][0]
    first_cp = [seq for seq, t in rows if json.loads(t)["type"] == "checkpoint" and seq > sealed][0]
    assert rc == 1 and "FAIL shoe SHUF1: seq %d" % first_cp in out, out
    assert "is not the stored tag" in out, out
    rc, out = _verify("--db", tmp_path / "s.db", "--key-file", key)
    # Covered: every event through the seal's checkpoint (the link_up a fast
    # host sees after it is the unsigned tail, which its next checkpoint signs).
    assert rc == 0 and re.search(r"OK   shoe SHUF1: (every event|events 1\.\.%d) covered by 1 checkpoint its "
                                 r"chip signed" % first_cp, out), out
    # The forger rewrites the checkpoint's head too: the chip's signature fails.
    forged = forge.rewrite(tmp_path / "s.db", tmp_path / "forged2.db", "SHUF1", device_key, _commit_changed,
                           fix_heads=True)
    rc, out = _verify("--db", forged, "--key-file", key)
    assert rc == 1 and "FAIL shoe SHUF1: seq %d: the signature does not verify" % first_cp in out, out


def test_the_vault_key_is_derived_by_the_chip_and_no_dump_gives_it(tmp_path):
    """Batch A released (in the shoe): its order and salt are on the flash
    only as the vault's ciphertext (custody.json). The key is the chip's:
    SHA-256(VAULT_LABEL || ECDH(slot 2, vault_peer.bin)), which only the
    simulator's own slot-2 key (the oracle, never given out) reproduces; no
    32-byte run of any file the attacker with the flash, or the pit, holds
    opens the vault; a power cut later the chip derives the same key and
    the batch's reveal comes back. Before, the emulator's key was a file
    beside the flash (sealing_key.bin) and a board had none."""
    import hashlib
    import json

    from cryptography.hazmat.primitives.asymmetric import ec
    from firmware.drivers.atecc608 import LINK_SLOT
    from firmware.drivers.atecc608_link import VAULT_LABEL, VAULT_PEER_FILE
    from firmware.shuffler import vault

    r = Rig(str(tmp_path / "flash"), str(tmp_path / "s.db"), decks=1, seed=5)
    try:
        since = r.load("A", r.emu.cards.new_deck_order(1))
        r.custody("A", "sealed", 120, since)
        r.emu.press("release")
        r.custody("A", "released", 60, since)
        stack = [u for u, _c in r.emu.take()]
        with open(os.path.join(r.emu.dir, "custody.json")) as f:
            saved = json.load(f)
        blob, nonce = bytes.fromhex(saved["vault"][0]), bytes.fromhex(saved["commit"][0])
        with open(os.path.join(r.emu.dir, VAULT_PEER_FILE), "rb") as f:
            peer = f.read()
        shared = r.emu.secure.keys[LINK_SLOT].exchange(
            ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + peer))
        key = hashlib.sha256(VAULT_LABEL + shared).digest()
        plain = vault.open_(key, nonce, blob)
        assert plain is not None and len(plain) == 16 + 2 * 52   # salt and 52 records
        dumped = [os.path.join(d, f) for d, _s, fs in os.walk(str(tmp_path)) for f in fs
                  if not f.endswith(".atecc608.json") and not f.endswith((".db", ".db-wal", ".db-shm"))]
        assert any(p.endswith("flash.key") for p in dumped) and any(VAULT_PEER_FILE in p for p in dumped)
        for path in dumped:
            with open(path, "rb") as f:
                data = f.read()
            assert key not in data and key.hex().encode() not in data.lower(), path
            for i in range(max(0, len(data) - 31)):
                assert vault.open_(data[i:i + 32], nonce, blob) is None, (path, i)
        r.emu.power_cut()
        r.emu.start()
        r.emu.wait_booted()
        since = r.load("A", stack)
        r.wait(lambda e: e.get("type") == "reveal" and e.get("part") == e.get("parts"), "the reveal", 120, since)
    finally:
        r.close()
    reveal = [e for e in r.events if e.get("type") == "reveal"][-1]
    assert reveal["salt"] == plain[:16].hex()
