"""The link's MAC key, derived at boot by the secure element and held only
in RAM (docs/security.md, "The key at rest"). Boot-only: a board's
``key()`` imports this, derives the key once, and lets it go
(lazy.unload), so a device in play holds none of its code."""

import hashlib

from drivers.atecc608 import LINK_LABEL, LINK_SLOT


def link_key_from(se, path):
    """link_key with the peer kept at ``path`` (PEER_FILE on the flash), or
    None when the flash holds none (a board provisioned before the chip,
    or an unprovisioned emulated chip: the key file is read instead)."""
    try:
        with open(path, "rb") as f:
            peer = f.read()
    except OSError:
        return None
    return link_key(se, peer)


def link_key(se, peer):
    """The link's MAC key, derived at boot and held only in RAM:
    SHA-256(LINK_LABEL || ECDH(chip's LINK_SLOT key, ``peer``)), ``peer``
    the public half of the key pair `shoe deploy` made and then dropped
    (link_peer.bin on the flash). The pit's copy is the same value, made on
    the technician's side from the other half (docs/security.md)."""
    shared = bytearray(32)
    se.ecdh(LINK_SLOT, peer, shared)
    h = hashlib.sha256(LINK_LABEL)
    h.update(shared)
    return h.digest()
