"""The one module that writes and reads a device's public key
(host_tools/protocol/pubkeys.py): what `shoe deploy` registers, `shoe
verify` checks signed checkpoints with, `shoe central register` loads into
the registry and `shoe acceptance` checks a report with."""

import os

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from host_tools.protocol import checkpoints, pubkeys


def _pair():
    private = ec.generate_private_key(ec.SECP256R1())
    n = private.public_key().public_numbers()
    return private, n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")


def _sign(private, message):
    r, s = decode_dss_signature(private.sign(message, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def test_written_beside_the_key_as_pem_0644_and_read_back(tmp_path):
    _, xy = _pair()
    key = tmp_path / "keys" / "SHOE-0A0B0C.key"
    path = pubkeys.pub_path(key)
    assert path.name == "SHOE-0A0B0C.pub"
    assert pubkeys.pub_path(key, ".pair.pub").name == "SHOE-0A0B0C.pair.pub"   # a second key of the device
    os.umask(0o077)   # the mode is set, not left to the umask
    pubkeys.write_public(path, xy)
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"   # the link key's private directory
    assert path.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----\n")
    assert pubkeys.read_public(path) == xy
    assert pubkeys.from_pem(path.read_text(), "the registry") == xy
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.parametrize("data,why", [
    (b"not a key\n", "is not a PEM public key"),
    (ec.generate_private_key(ec.SECP384R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
     "holds a secp384r1 key, not the P-256 key of an ATECC608B"),
])
def test_a_file_that_is_not_a_p256_key_is_refused_in_one_line(tmp_path, data, why):
    path = tmp_path / "bad.pub"
    path.write_bytes(data)
    with pytest.raises(pubkeys.PublicKeyFileError) as e:
        pubkeys.read_public(path)
    assert why in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(pubkeys.PublicKeyFileError, match="cannot read public key file"):
        pubkeys.read_public(tmp_path / "missing.pub")


def test_signatures_verify_under_the_key_and_no_other(tmp_path):
    private, xy = _pair()
    _, other = _pair()
    message = checkpoints.statement_bytes("SHOE-1", 7, "ab" * 16, 3, "cd" * 32)
    rs = _sign(private, message)
    assert pubkeys.verify(xy, message, rs)
    assert not pubkeys.verify(other, message, rs)
    assert not pubkeys.verify(xy, message + b"x", rs)
    assert checkpoints.signature_ok(xy, message, rs.hex())
    assert not checkpoints.signature_ok(xy, message, "zz" * 64)      # not hex: refused, not raised
    assert not checkpoints.signature_ok(xy, message, rs.hex()[:-2])  # short
