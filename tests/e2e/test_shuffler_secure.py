"""The shuffler's secure element (the simulated ATECC608B on the emulated
shuffler's I2C bus, provisioned as `shoe deploy --device shuffler` does a
board's; host_tools/sim/vmdevice.py): the link key is derived by the chip at
boot and never lies on the flash; the chip signs the record's checkpoints
and the seal, and `shoe verify` / `shoe shuffler audit` check them."""

import os

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
