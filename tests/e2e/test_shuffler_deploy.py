"""`shoe deploy --device shuffler`: the staged shuffler image holds what the
shuffler imports and nothing of the shoe (no game, no shoe main, no
host-only or emulator-only module), and it boots in the VM from the image
alone."""

import os
import subprocess

import pytest

from host_tools import cli, deploy, vm
from host_tools.qa import shuffler_heap as heap

IN = ("main.py", "board_config.mpy", "shoe_key.bin", "manifest.json", "shuffler/board_machine.mpy",
      "shuffler/device.mpy", "shuffler/custody.mpy", "shuffler/link.mpy", "shuffler/drbg.mpy",
      "link/core.mpy", "link/replay.mpy", "link/commands.mpy", "link/dispatch.mpy", "link/journal.mpy",
      "cardset/registry.mpy", "drivers/pn532_uart.mpy", "drivers/tcs34725.mpy", "baccarat/cards.mpy",
      "manifest.mpy", "lazy.mpy", "shuffler/probes.mpy", "probes.mpy", "drivers/atecc608_setup.mpy",
      "shuffler/main.mpy", "shuffler/selftest.mpy")
OUT = ("baccarat/game.mpy", "baccarat/events.mpy", "baccarat/rules.mpy", "baccarat/script.mpy",
       "link/session.mpy", "link/recovery.mpy", "link/schema.mpy", "link/events_schema.mpy",
       "link/host_frames.mpy", "shuffler/entry.mpy", "emulator/shuffler_board.mpy", "emulator/sim_mechanism.mpy",
       "emulator/sample.mpy", "shuffler/schema.mpy", "emulator/shoe_board.mpy", "boards/rp2.mpy",
       "emulator/ptyuart.mpy", "emulator/sim_tcs34725.mpy", "reading.mpy")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    out = tmp_path_factory.mktemp("shuf") / "img"
    assert cli.main(["deploy", "--device", "shuffler", "--board", "pico", "--shoe-id", "SHUF-1",
                     "--dry-run", str(out)]) == 0
    return out


def test_the_image_holds_the_shuffler_and_nothing_of_the_shoe(image):
    files = {p.relative_to(image).as_posix() for p in image.rglob("*") if p.is_file()}
    assert set(IN) <= files
    assert not set(OUT) & files
    assert (image / "main.py").read_text() == (deploy.FIRMWARE / "shuffler" / "entry.py").read_text()
    manifest = __import__("json").loads((image / "manifest.json").read_text())
    assert manifest["device"] == "shuffler" and manifest["heap"] == heap.board_heap_kib() * 1024
    size = sum((image / rel).stat().st_size for rel in manifest["files"])
    print("shuffler image: %d files, %d bytes" % (len(manifest["files"]), size))
    # 86 465 bytes with the boot's manifest check, the vault and the entropy mix; 90 842 with the secure
    # element's driver, its boot-only key derivation and the seal's signer; 94 508 with the real-time
    # check's order module; 99 838 once the probes are really on it (shuffler/probes.py,
    # probes.py and drivers/atecc608_setup.py, which the image never held while it was an import
    # closure: shuffler/link.py loads them from a string). Flash, not heap: a pico's littlefs has
    # about 1.4 MB.
    assert size < 104 * 1024


def _boot_image(image, tmp_path, timeout=60, shown="board.manifest"):
    """The boot of the image's main.py in the VM: (returncode, stdout, stderr), the
    line ``BOOTED state halt SHOWN`` once booted; a halted boot never
    returns, so its VM is stopped at ``timeout``."""
    (tmp_path / "machine.py").write_text(heap.FAKE_MACHINE)
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    (tmp_path / "cardset.bin").write_bytes(TwoBatchSet(1).encode())
    if not (tmp_path / "shoe_key.bin").exists():
        os.link(image / "shoe_key.bin", tmp_path / "shoe_key.bin")
    probe = tmp_path / "probe.py"
    probe.write_text("import machine, board_config, sys\n"
                     "machine.LEVELS[board_config.INPUTS['home']] = 0\n"
                     "machine.LEVELS[board_config.INPUTS['door']] = 0\n"
                     "import main\n"   # the image's main.py: its stages begin with the boot check
                     "for booted in main.boot_stages():\n"
                     "    pass\n"
                     "board, session, device = booted\n"
                     "print('BOOTED', device.machine and device.machine.state[1], repr(session.halt), %s)\n"
                     % shown)
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([str(tmp_path), str(image)]))
    try:
        proc = subprocess.run(vm.micropython_cmd([str(probe)], heap="400k"), env=env, cwd=str(tmp_path),
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err
    return proc.returncode, proc.stdout, proc.stderr


def test_the_shuffler_checks_its_manifest_at_boot(image, tmp_path):
    """As an attacker with the flash: a file nobody deployed is quarantined
    and the shuffler halts saying why (hellos only, no batch runs); an
    altered deployed file stops the boot before any of its code runs."""
    import hashlib
    import json
    import shutil
    img = tmp_path / "img"
    shutil.copytree(image, img)
    (tmp_path / "clean").mkdir()
    rc, out, err = _boot_image(img, tmp_path / "clean")
    digest = hashlib.sha256((img / "manifest.json").read_bytes()).hexdigest()
    assert rc == 0 and "BOOTED empty None %s" % digest in out, err
    (img / "shuffler" / "evil.py").write_text("open('stolen.bin', 'wb').write(open('shoe_key.bin', 'rb').read())\n")
    (tmp_path / "stray").mkdir()
    rc, out, err = _boot_image(img, tmp_path / "stray")
    line = [x for x in out.splitlines() if x.startswith("BOOTED ")][-1]
    assert "self-test: shuffler/evil.py is not in the manifest" in line and line.startswith("BOOTED None"), line
    assert (img / "quarantine" / "shuffler" / "evil.py").exists() and not (img / "shuffler" / "evil.py").exists()
    assert not (tmp_path / "stray" / "stolen.bin").exists()
    shutil.rmtree(img)
    shutil.copytree(image, img)
    listed = json.loads((img / "manifest.json").read_text())["files"]
    assert "shuffler/device.mpy" in listed
    with open(img / "shuffler" / "device.mpy", "ab") as f:
        f.write(b"\0")
    (tmp_path / "altered").mkdir()
    rc, out, err = _boot_image(img, tmp_path / "altered", timeout=8)
    assert rc is None and "BOOTED" not in out  # halted: never returned
    assert "shuffler/device.mpy does not match the manifest" in err


@pytest.mark.parametrize("damage", ["deleted", pytest.param("damaged", marks=pytest.mark.slow)])
def test_without_its_manifest_the_shuffler_halts_before_any_unverified_import(image, tmp_path, damage):
    """The manifest deleted (or damaged) and a trojan link/reports.py added,
    which MicroPython would import in place of the deployed .mpy: nothing
    on the flash is vouched for, so the shuffler halts before importing any
    of it. Before, it went on with a tilt, and the trojan ran."""
    import shutil
    img = tmp_path / "img"
    shutil.copytree(image, img)
    if damage == "deleted":
        (img / "manifest.json").unlink()
    else:
        (img / "manifest.json").write_text('{"files": ')
    (img / "link" / "reports.py").write_text("open('ran.txt', 'w').write('trojan ran')\n")
    (tmp_path / "run").mkdir()
    rc, out, err = _boot_image(img, tmp_path / "run", timeout=8)
    assert rc is None and "BOOTED" not in out, (out, err)   # halted: never returned
    assert "halted: self-test: manifest.json" in err, err
    assert not (tmp_path / "run" / "ran.txt").exists() and not (img / "ran.txt").exists(), "the trojan ran"


def test_the_image_boots_from_its_own_files(image, tmp_path):
    """The staged tree is the only code on the path (plus the fake
    machine module): every module the shuffler imports is in the image."""
    rc, out, err = _boot_image(image, tmp_path, shown="sorted(m for m in sys.modules"
                                                      " if m.startswith(('baccarat', 'link', 'drivers')))")
    assert rc == 0, err
    line = [x for x in out.splitlines() if x.startswith("BOOTED ")][-1]
    assert line.startswith("BOOTED empty None")
    assert "baccarat.game" not in line and "link.session" not in line and "link.schema" not in line
    # The chip's driver stays, its provisioning and the boot-only key
    # derivation do not (as on the shoe: footprint.ON_DEMAND).
    assert "'drivers.atecc608'" in line
    assert "drivers.atecc608_setup" not in line and "drivers.atecc608_link" not in line


def test_deploy_provisions_the_shuffler_chip_and_keeps_no_key_on_its_flash(tmp_path, monkeypatch, capsys):
    """`shoe deploy --device shuffler` does to the shuffler's ATECC608B what
    it does to a shoe's, with the firmware's own provisioning: the link key
    derived from slot 2 (the flash holds only the peer's public half), the
    signing key (slot 0) registered as ID.pub, the pairing key (slot 3) as
    ID.pair.pub. Before, the shuffler got shoe_key.bin on its flash and no
    chip was touched."""
    import hashlib
    from cryptography.hazmat.primitives.asymmetric import ec
    from firmware.drivers.atecc608 import KEY_SLOT, LINK_LABEL, LINK_SLOT, PAIR_SLOT, PEER_FILE
    from host_tools.protocol import pubkeys
    from support.boardfs import BoardDirectory

    device = tmp_path / "device"
    device.mkdir()
    monkeypatch.setattr(deploy, "_run", BoardDirectory(device))
    keydir = tmp_path / "keys"
    assert cli.main(["deploy", "--device", "shuffler", "--board", "pico", "--port", "/dev/ttyACM0",
                     "--shoe-id", "SHUF-T1", "--key-dir", str(keydir)]) == 0
    out = capsys.readouterr().out
    chip = deploy._run.chip
    assert chip is not None and chip.config_locked and chip.data_locked
    key = (keydir / "SHUF-T1.key").read_bytes()
    assert not (device / deploy.KEY_NAME).exists()
    assert not any(key in f.read_bytes() for f in device.rglob("*") if f.is_file())
    peer = (device / PEER_FILE).read_bytes()
    peer_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + peer)
    assert hashlib.sha256(LINK_LABEL + chip.keys[LINK_SLOT].exchange(ec.ECDH(), peer_key)).digest() == key

    def xy(slot):
        n = chip.keys[slot].public_key().public_numbers()
        return n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")
    assert pubkeys.read_public(keydir / "SHUF-T1.pub") == xy(KEY_SLOT)
    assert pubkeys.read_pair(keydir / "SHUF-T1.key") == xy(PAIR_SLOT)
    assert "pairing key (slot 3" in out and ("serial %s" % bytes(chip.serial).hex()) in out
    # The vault key's peer: a public key on the flash, listed in the
    # manifest; its private half was dropped (no file the pit has holds it).
    from firmware.drivers.atecc608_link import VAULT_PEER_FILE
    import json
    vault_peer = (device / VAULT_PEER_FILE).read_bytes()
    assert len(vault_peer) == 64 and vault_peer != peer
    assert VAULT_PEER_FILE in json.loads((device / deploy.MANIFEST).read_text())["files"]
    for slot in (KEY_SLOT, LINK_SLOT, PAIR_SLOT):
        d = chip.keys[slot].private_numbers().private_value.to_bytes(32, "big")
        assert not any(d in f.read_bytes() for f in device.rglob("*") if f.is_file())
