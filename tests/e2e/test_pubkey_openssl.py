"""A device's public key file as an auditor reads it, with openssl and none of
this code (the file is written by host_tools/protocol/pubkeys.py; the
module itself is tests/unit/test_pubkeys.py)."""

import subprocess

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from host_tools.protocol import pubkeys


def test_openssl_reads_the_file_without_this_code(tmp_path):
    n = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
    xy = n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")
    path = tmp_path / "D.pub"
    pubkeys.write_public(path, xy)
    r = subprocess.run(["openssl", "pkey", "-pubin", "-in", str(path), "-noout", "-text"],
                       capture_output=True, text=True)
    if r.returncode == 127:
        pytest.fail("openssl is not installed")
    assert r.returncode == 0 and "prime256v1" in r.stdout + r.stderr, r.stdout + r.stderr
