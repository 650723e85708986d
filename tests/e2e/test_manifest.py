"""firmware/manifest.py, the one file hash: it equals hashlib's SHA-256 of the
whole file at every chunk boundary, under CPython and in the MicroPython VM;
the boot self-test, `shoe deploy` staging and the device-side check all use
it; and its check names a missing or altered file."""

import hashlib
import subprocess

import pytest

from host_tools import deploy, vm

import manifest  # noqa: E402  (firmware/manifest.py)

SIZES = (0, 1, manifest.CHUNK - 1, manifest.CHUNK, manifest.CHUNK + 1, 3 * manifest.CHUNK, 5000)


@pytest.fixture
def files(tmp_path):
    out = {}
    for n in SIZES:
        data = bytes((i * 7 + n) & 0xFF for i in range(n))
        (tmp_path / ("f%d.bin" % n)).write_bytes(data)
        out["f%d.bin" % n] = hashlib.sha256(data).hexdigest()
    return tmp_path, out


def test_file_sha256_is_sha256_of_the_whole_file_under_cpython(files):
    root, want = files
    for rel, digest in want.items():
        assert manifest.file_sha256(str(root / rel)) == digest
        assert manifest.file_sha256(str(root / rel), bytearray(7)) == digest  # any buffer size


def test_file_sha256_is_the_same_in_the_micropython_vm(files):
    root, want = files
    program = "import manifest\nmanifest.report(%r)\n" % (sorted(want) + ["nope.bin"],)
    proc = subprocess.run(vm.micropython_cmd(["-c", program]), cwd=root, env=vm.micropython_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert {p: d for d, p in lines if d != "missing"} == want
    assert ["missing", "nope.bin"] in lines


def test_check_names_a_missing_or_altered_file(files):
    root, want = files
    assert manifest.check(str(root), want) is None
    (root / "f512.bin").write_bytes(b"\x00" * 512)
    problem = manifest.check(str(root), want)
    assert problem.startswith("self-test: f512.bin does not match the manifest (sha256 ")
    (root / "f512.bin").unlink()
    assert manifest.check(str(root), want) == "self-test: f512.bin listed in the manifest is missing"
    assert manifest.load(str(root)) is None  # no manifest.json: a development tree


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


def test_the_device_check_runs_the_firmware_manifest_source():
    script = deploy.hash_script({"b.mpy": "00" * 32, "a.mpy": "11" * 32})
    assert script.startswith((deploy.FIRMWARE / "manifest.py").read_text())
    assert script.rstrip().endswith("report(['a.mpy', 'b.mpy'])")


def test_the_manifest_file_name_is_one_constant():
    assert deploy.MANIFEST == manifest.NAME == "manifest.json"
