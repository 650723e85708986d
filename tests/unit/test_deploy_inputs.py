"""`shoe deploy`'s refusals and its key files, in the test's own process:
bad options and inputs get one line and exit 1 or 2 before anything is
staged, a device's hash report is checked file by file, and a key is never
readable by others nor written into a shared directory (staging, flashing
and the VM: tests/e2e/test_deploy.py)."""

import os
import pathlib

import pytest

from host_tools import cli, deploy


def _mode(path):
    return oct(pathlib.Path(path).stat().st_mode & 0o777)


def test_deploy_needs_exactly_one_of_port_and_dry_run(tmp_path, capsys):
    assert cli.main(["deploy", "--board", "pico"]) == 2
    assert cli.main(["deploy", "--board", "pico", "--port", "/dev/null",
                     "--dry-run", str(tmp_path)]) == 2
    assert "either --port DEVICE" in capsys.readouterr().err


def test_deploy_refuses_bad_inputs_precisely(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(tmp_path)]) == 1
    assert "is not empty and holds no earlier staging" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"
    short = tmp_path / "short.key"
    short.write_bytes(b"\x01" * 16)
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(tmp_path / "o"),
                     "--key-file", str(short)]) == 1
    assert "holds 16 bytes; a shoe key is exactly 32" in capsys.readouterr().err
    assert cli.main(["deploy", "--board", "nano", "--dry-run", str(tmp_path / "o")]) == 1
    assert "unknown board 'nano'" in capsys.readouterr().err
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(tmp_path / "o"),
                     "--shoe-id", "bad id!"]) == 1
    assert "shoe id 'bad id!'" in capsys.readouterr().err


def test_check_hashes_names_missing_and_unreported_files():
    files = {"a.mpy": "11" * 32, "b/c.mpy": "22" * 32, "d.bin": "33" * 32}
    report = "%s a.mpy\nmissing b/c.mpy\n" % ("11" * 32)
    assert deploy.check_hashes(files, report) == [
        "b/c.mpy: missing on the device", "d.bin: not reported by the device"]


def test_a_key_file_others_can_read_is_refused(tmp_path, capsys):
    from host_tools.protocol import keys
    path = tmp_path / "k.key"
    path.write_bytes(b"\x07" * 32)
    for mode, who in ((0o644, "others"), (0o640, "its group")):
        os.chmod(path, mode)
        with pytest.raises(keys.KeyFileError) as err:
            keys.read_key(path)
        assert "can be read by %s (mode %03o)" % (who, mode) in str(err.value)
        assert "chmod 600" in str(err.value)
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(tmp_path / "o"),
                     "--key-file", str(path)]) == 1
    assert "can be read by its group" in capsys.readouterr().err
    os.chmod(path, 0o600)
    assert keys.read_key(path) == b"\x07" * 32
    with pytest.raises(keys.KeyFileError, match="cannot read key file"):
        keys.read_key(tmp_path / "none.key")


def test_keys_are_never_put_in_a_shared_directory(tmp_path):
    from host_tools.protocol import keys
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp: narrowing it would break other users
    with pytest.raises(keys.KeyFileError, match="open to other users"):
        keys.write_key(shared / "k.key", b"\x01" * 32)
    assert not (shared / "k.key").exists()
    keys.write_key(tmp_path / "a" / "b" / "k.key", b"\x01" * 32)
    assert [_mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "k.key")] == \
        ["0o700", "0o700", "0o600"]


def test_a_shuffler_takes_no_shoe_reader_option(capsys):
    assert cli.main(["deploy", "--device", "shuffler", "--board", "pico", "--reader", "gm65",
                     "--dry-run", "/nonexistent"]) == 2
    assert "--reader is the shoe's" in capsys.readouterr().err
