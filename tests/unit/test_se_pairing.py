"""The pairing key (slot 3 of every chip, shoe's and shuffler's alike):
provisioned by the firmware's own code, registered as ``ID.pair.pub`` beside
``ID.pub``, read back by the one reader (pubkeys.read_pair), and the
driver's pair_secret gives both devices the same 32-byte secret, which the
public files alone do not give (the simulators' own keys are the oracle)."""

import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from firmware.drivers.atecc608 import ATECC608, PAIR_SLOT, SecureElementFault, pair_secret
from firmware.drivers import atecc608_setup
from host_tools import cli, deploy
from host_tools.protocol import pubkeys
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C


def _device(tmp_path, name):
    """A chip provisioned as `shoe deploy` does, its keys registered for ``name``."""
    chip = Chip(str(tmp_path / (name + ".atecc608.json")), timing=0.0)
    se = ATECC608(DirectI2C(Bus({ADDRESS: chip})))
    public, link, pair, serial = bytearray(64), bytearray(64), bytearray(64), bytearray(9)
    assert atecc608_setup.provision(se, public, link, pair) is True
    atecc608_setup.serial(se, serial)
    lines = deploy.register_chip(tmp_path / (name + ".key"),
                                 (serial.hex(), bytes(public), True, bytes(link), bytes(pair)))
    assert any(str(pubkeys.pair_path(tmp_path / (name + ".key"))) in line for line in lines)
    return chip, se, bytes(pair)


def test_shoe_and_shuffler_reach_one_secret_from_each_others_pair_pub(tmp_path):
    shoe_chip, shoe_se, shoe_pair = _device(tmp_path, "SHOE-AAAAAA")
    shuf_chip, shuf_se, shuf_pair = _device(tmp_path, "SHUF-BBBBBB")
    # The one reader, from the link key's path or from the .pub beside it.
    assert pubkeys.read_pair(tmp_path / "SHOE-AAAAAA.key") == shoe_pair
    assert pubkeys.read_pair(tmp_path / "SHUF-BBBBBB.pub") == shuf_pair
    assert pubkeys.read_pair(tmp_path / "SHUF-BBBBBB.pair.pub") == shuf_pair
    # The registered key is slot 3's, not the signing key's.
    assert pubkeys.read_public(tmp_path / "SHOE-AAAAAA.pub") != shoe_pair
    mine, theirs = bytearray(32), bytearray(32)
    pair_secret(shoe_se, pubkeys.read_pair(tmp_path / "SHUF-BBBBBB.key"), mine)
    pair_secret(shuf_se, pubkeys.read_pair(tmp_path / "SHOE-AAAAAA.key"), theirs)
    assert mine == theirs and len(set(mine)) > 8
    # The oracle: ECDH of the simulators' own slot-3 private keys (never
    # given out by the chip) with the other's registered public key.
    other = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + shuf_pair)
    assert shoe_chip.keys[PAIR_SLOT].exchange(ec.ECDH(), other) == bytes(mine)
    # Slot 3 is locked: its key can never be replaced.
    assert shoe_chip._slot_locked(PAIR_SLOT) and shuf_chip._slot_locked(PAIR_SLOT)


def test_the_pairing_slot_cannot_sign(tmp_path):
    """ECDH only (SlotConfig 0x2084): the chip refuses to sign with it, so
    the pairing key is no second signing key."""
    _chip, se, _pair = _device(tmp_path, "SHOE-CCCCCC")
    with pytest.raises(SecureElementFault) as e:
        se.sign(PAIR_SLOT, bytes(32), bytearray(64))
    assert e.value.status == 0x0F


def test_a_missing_pair_pub_is_one_line(tmp_path):
    with pytest.raises(pubkeys.PublicKeyFileError) as e:
        pubkeys.read_pair(tmp_path / "SHOE-DDDDDD.key")
    assert "SHOE-DDDDDD.pair.pub" in str(e.value) and "\n" not in str(e.value)


def test_deploy_pair_stages_the_peers_key_that_the_firmware_pairs_with(tmp_path):
    """`shoe deploy --pair SHUF.pair.pub` puts the shuffler's id and pairing
    key on the shoe's image, in its manifest; the firmware's own reader
    (link/order.pairing_from) on that file, with the shoe's chip, makes the
    shuffler chip's secret. Only public halves cross the pit PC."""
    from firmware.link import order
    _shoe_chip, shoe_se, _ = _device(tmp_path, "SHOE-DDDDDD")
    _shuf_chip, shuf_se, _ = _device(tmp_path, "SHUF-EEEEEE")
    out = tmp_path / "image"
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(out),
                     "--pair", str(tmp_path / "SHUF-EEEEEE.pair.pub")]) == 0
    manifest = json.loads((out / deploy.MANIFEST).read_text())
    assert deploy.PAIR_FILE in manifest["files"]
    peer, secret = order.pairing_from(shoe_se, str(out / deploy.PAIR_FILE))
    theirs = bytearray(32)
    pair_secret(shuf_se, pubkeys.read_pair(tmp_path / "SHOE-DDDDDD.key"), theirs)
    assert peer == "SHUF-EEEEEE" and bytes(secret) == bytes(theirs)
    # The secret itself is in no file of the image nor beside the keys.
    for path in list(out.rglob("*")) + list(tmp_path.glob("*.pub")):
        if path.is_file():
            assert bytes(secret) not in path.read_bytes(), path


@pytest.mark.parametrize("name, words", [
    ("SHUF-EEEEEE.pub", "not SHUF-EEEEEE.pub"),       # the signing key's file, not the pairing key's
    ("nothere.pair.pub", "cannot read public key file"),
])
def test_deploy_pair_refuses_a_wrong_file_in_one_line(tmp_path, capsys, name, words):
    _device(tmp_path, "SHUF-EEEEEE")
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(tmp_path / "image"),
                     "--pair", str(tmp_path / name)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("shoe deploy: ") and words in err and "\n" not in err
    assert not (tmp_path / "image").exists()
