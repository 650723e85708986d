"""A device's registered public key: the one place that writes and reads it.

The device key pair is made inside the device's ATECC608B (a slot never
readable, firmware/drivers/atecc608_setup.py); what the pit PC keeps is its
public half, registered when the device is deployed, in a file beside the
device's link key: ``SHOE-xxxxxx.key`` -> ``SHOE-xxxxxx.pub`` (``pub_path``;
a second key of the same device takes another suffix, ``pub_path(key,
".pair.pub")``). `shoe deploy` writes it; `shoe verify` (signed
checkpoints, host_tools/protocol/checkpoints.py), `shoe central register`
and `shoe acceptance` read it.

The chip's pairing key (slot 3, ECDH only: a shoe's and a shuffler's
chips agree a secret the pit PC cannot compute) is registered the same way
as ``SHOE-xxxxxx.pair.pub`` (``pair_path``; read with ``read_pair``).

The file is PEM SubjectPublicKeyInfo of a P-256 key ("-----BEGIN PUBLIC
KEY-----"), so a casino can check a signed checkpoint or acceptance report
with openssl alone, years later, without this code. It is public: written
0644 (beside the link key, so in the private directory that key requires),
and nothing is refused for being readable. Everything else here (the
chip's X||Y, signatures as R||S) is the chip's raw form.
"""

import os
import pathlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from host_tools.exits import ShoeError
from host_tools.protocol import keys

SUFFIX = ".pub"
PAIR_SUFFIX = ".pair.pub"
FILE_MODE = 0o644
XY_BYTES = 64


class PublicKeyFileError(ShoeError, ValueError):
    """A public key file cannot be used; the message says why."""


def pub_path(key_path, suffix=SUFFIX):
    """Where the public key registered with the link key ``key_path`` lives."""
    return pathlib.Path(key_path).with_suffix(suffix)


def pair_path(key_path):
    """Where the pairing public key registered with ``key_path`` lives."""
    return pathlib.Path(key_path).with_suffix(PAIR_SUFFIX)


def read_pair(key_path):
    """The device's registered pairing public key (X||Y, 64 bytes): the one
    reader of ``ID.pair.pub`` for a shoe or a shuffler, whose link key (or
    any file beside it, ``ID.pub`` included) is ``key_path``."""
    path = pathlib.Path(key_path)
    if path.name.endswith(PAIR_SUFFIX):
        return read_public(path)
    if path.name.endswith(SUFFIX):
        path = path.with_name(path.name[:-len(SUFFIX)] + ".key")
    return read_public(pair_path(path))


def _key(xy):
    if len(xy) != XY_BYTES:
        raise ValueError("a P-256 public key is X||Y, %d bytes, not %d" % (XY_BYTES, len(xy)))
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + bytes(xy))


def pem(xy):
    return _key(xy).public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def write_public(path, xy):
    """Register a device key's public half ``xy`` (X||Y) at ``path``, as PEM."""
    write_file(path, pem(xy))


def write_file(path, data):
    """``data`` at ``path``, 0644, whole or not at all (a temporary file
    renamed over it), in the private directory the link key beside it
    requires (keys.private_dir): a public file of the device's keys."""
    keys.private_dir(os.path.dirname(os.path.abspath(os.fspath(path))))
    tmp = "%s.tmp" % path
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(fd, FILE_MODE)   # the mode given to open passes through the umask
        f.write(data)
        f.flush()
        os.fsync(fd)
    os.replace(tmp, path)


def read_public(path):
    """X||Y (64 bytes) of the P-256 key in ``path``; PublicKeyFileError, one line, otherwise."""
    try:
        data = pathlib.Path(path).read_bytes()
    except OSError as e:
        raise PublicKeyFileError("cannot read public key file %s: %s" % (path, e.strerror or e)) from None
    return from_pem(data, path)


def from_pem(data, where):
    """X||Y of the P-256 key in PEM ``data`` (a file's bytes, or the text
    the central device registry holds); ``where`` names it in the one-line
    PublicKeyFileError."""
    if isinstance(data, str):
        data = data.encode("ascii", "replace")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as e:
        raise PublicKeyFileError("%s is not a PEM public key (%s)" % (where, str(e).splitlines()[0])) from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise PublicKeyFileError("%s holds a %s key, not the P-256 key of an ATECC608B"
                                 % (where, getattr(getattr(key, "curve", None), "name", type(key).__name__)))
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)[1:]


def verify(xy, message, rs):
    """True when ``rs`` (R||S, 64 bytes) is the key's ECDSA P-256 signature
    over SHA-256(``message``)."""
    if len(rs) != 64:
        return False
    sig = encode_dss_signature(int.from_bytes(rs[:32], "big"), int.from_bytes(rs[32:], "big"))
    try:
        _key(xy).verify(sig, bytes(message), ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False
