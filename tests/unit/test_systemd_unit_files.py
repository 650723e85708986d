"""The shipped systemd units (deploy/systemd/) as text; systemd itself checks
them in tests/e2e/test_systemd_units.py."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNITS = os.path.join(ROOT, "deploy", "systemd")


def test_units_raise_the_file_limit_and_keep_keys_private():
    for name in ("shoe-pit.service", "shoe-central.service"):
        text = open(os.path.join(UNITS, name)).read()
        assert "LimitNOFILE=65536" in text and "UMask=0077" in text and "User=shoe" in text, name
