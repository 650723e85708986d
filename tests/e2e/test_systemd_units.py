"""The systemd units in deploy/systemd, checked by `systemd-analyze verify`
(Debian's systemd; `make test` installs it when missing, as root). The
units name /opt/shoe/.venv/bin/shoe; verify wants the program to exist, so
each is checked as installed here: the same file with this checkout's
program. A unit verify rejects is shown to fail, so the check is not empty."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNITS = os.path.join(ROOT, "deploy", "systemd")
SHOE = os.path.join(ROOT, ".venv", "bin", "shoe")


def _verify(path):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.fail("systemd-analyze is missing (make test installs Debian's systemd when run as root)",
                    pytrace=False)
    return subprocess.run([tool, "verify", path], capture_output=True, text=True, timeout=60)


def _installed(tmp_path, name, text=None):
    text = open(os.path.join(UNITS, name)).read() if text is None else text
    out = tmp_path / name
    out.write_text(text.replace("/opt/shoe/.venv/bin/shoe", SHOE))
    return str(out)


@pytest.mark.parametrize("name", ["shoe-pit.service", "shoe-central.service"])
def test_the_unit_verifies(tmp_path, name):
    r = _verify(_installed(tmp_path, name))
    assert r.returncode == 0 and r.stderr.strip() == "", r.stderr


def test_a_broken_unit_fails_verify(tmp_path):
    text = open(os.path.join(UNITS, "shoe-pit.service")).read()
    broken = text.replace("ExecStart=/opt/shoe/.venv/bin/shoe", "ExecStart=shoe-not-a-path/shoe")
    r = _verify(_installed(tmp_path, "shoe-pit.service", broken))
    assert r.returncode != 0 or "ExecStart" in r.stderr, (r.returncode, r.stderr)
