"""firmware/manifest.py in the MicroPython VM: the file hash equals hashlib's
SHA-256 there too, and the boot self-test passes a staged image and names an
altered file (under CPython: tests/unit/test_manifest.py)."""

import subprocess

from host_tools import deploy, vm

from firmware import manifest
from support.hashed_files import files  # noqa: F401 (the fixture)


def test_file_sha256_is_the_same_in_the_micropython_vm(files):
    root, want = files
    program = "import manifest\nmanifest.report(%r)\n" % (sorted(want) + ["nope.bin"],)
    proc = subprocess.run(vm.micropython_cmd(["-c", program]), cwd=root, env=vm.micropython_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert {p: d for d, p in lines if d != "missing"} == want
    assert ["missing", "nope.bin"] in lines


def test_staging_and_the_boot_self_test_agree(tmp_path):
    staged = deploy.stage("pico", tmp_path, "MAN", bytes(32))
    assert "manifest.mpy" in staged["files"]  # checked like every other file
    assert manifest.load(str(tmp_path)) == staged["files"]
    assert manifest.check(str(tmp_path), staged["files"]) is None
    # main.py's self-test, run in the VM from the staged tree as a board runs it.
    program = "import main\nprint(main._check_manifest())\n"
    ok = subprocess.run(vm.micropython_cmd(["-c", program]), cwd=tmp_path,
                        env=dict(vm.micropython_env(), MICROPYPATH=str(tmp_path)),
                        capture_output=True, text=True, timeout=60)
    assert ok.stdout.strip() == "None", ok.stderr
    game = tmp_path / "baccarat" / "game.mpy"
    game.write_bytes(game.read_bytes()[:-1] + b"\x00")
    bad = subprocess.run(vm.micropython_cmd(["-c", program]), cwd=tmp_path,
                         env=dict(vm.micropython_env(), MICROPYPATH=str(tmp_path)),
                         capture_output=True, text=True, timeout=60)
    assert "self-test: baccarat/game.mpy does not match the manifest" in bad.stdout, bad.stderr
