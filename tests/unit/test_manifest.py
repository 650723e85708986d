"""firmware/manifest.py, the one file hash: it equals hashlib's SHA-256 of the
whole file at every chunk boundary under CPython; the device-side check
runs this source; and its check names a missing or altered file. The same
hash in the MicroPython VM, and the boot self-test against `shoe deploy`'s
staging: tests/e2e/test_manifest_vm.py."""

import os

from host_tools import deploy

from firmware import manifest
from firmware.link import journal
from support.hashed_files import files  # noqa: F401 (the fixture)


def test_file_sha256_is_sha256_of_the_whole_file_under_cpython(files):
    root, want = files
    for rel, digest in want.items():
        assert manifest.file_sha256(str(root / rel)) == digest
        assert manifest.file_sha256(str(root / rel), bytearray(7)) == digest  # any buffer size


def test_check_names_a_missing_or_altered_file(files):
    root, want = files
    assert manifest.check(str(root), want) is None
    (root / "f512.bin").write_bytes(b"\x00" * 512)
    problem = manifest.check(str(root), want)
    assert problem.startswith("self-test: f512.bin does not match the manifest (sha256 ")
    (root / "f512.bin").unlink()
    assert manifest.check(str(root), want) == "self-test: f512.bin listed in the manifest is missing"
    assert manifest.load(str(root)) is None  # no manifest.json: a development tree


def test_the_device_check_runs_the_firmware_manifest_source():
    script = deploy.hash_script({"b.mpy": "00" * 32, "a.mpy": "11" * 32})
    assert script.startswith((deploy.FIRMWARE / "manifest.py").read_text())
    assert script.rstrip().endswith("report(['a.mpy', 'b.mpy'])")


def test_the_manifest_file_name_is_one_constant():
    assert deploy.MANIFEST == manifest.NAME == "manifest.json"


def test_the_data_names_are_the_ones_the_code_writes():
    j = journal.Journal("/nonexistent/journal.bin")
    names = {os.path.basename(p) for p in (j.path, j.tilt_path, j.mark_path, j.path + ".bad", j.path + ".tmp")}
    from firmware.boards import ring_flash
    from firmware.emulator import shoe_board
    names |= {"journal.bin" + ring_flash.MAP, "journal.bin" + ring_flash.FOLDER, "journal.bin" + shoe_board.NOR}
    from host_tools import deploy
    from firmware.shuffler import device
    custody = {device.STATE_FILE, device.STATE_FILE + ".tmp"}   # the shuffler's (shuffler/device.py _save)
    assert set(manifest.DATA) == names | {deploy.CARDSET} | custody
