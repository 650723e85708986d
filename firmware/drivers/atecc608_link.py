"""Keys derived at boot by the secure element and held only in RAM: the
link's MAC key, and the shuffler's vault key (docs/security.md, "The key
at rest"). Boot-only: a board's ``key()`` imports this, derives its keys
once, and lets it go (lazy.unload), so a device in play holds none of its
code."""

import hashlib

from drivers.atecc608 import LINK_LABEL, LINK_SLOT

# The shuffler's vault key (shuffler/vault.py): its peer on the flash (a
# public key; provisioning dropped the private half) and its label.
VAULT_PEER_FILE = "vault_peer.bin"
VAULT_LABEL = b"shuffler-vault-key/1"
# The journal's seal key (link/journal.py, link/chipcount.py): derived with
# the link's peer under its own label, so the pit, which holds the link key
# (SHA-256 of the other label), holds nothing that makes or checks a seal.
JOURNAL_LABEL = b"shoe-journal-key/1"


def link_key_from(se, path):
    """link_key with the peer kept at ``path`` (PEER_FILE on the flash), or
    None when the flash holds none (a board provisioned before the chip,
    or an unprovisioned emulated chip: the key file is read instead)."""
    return derive_from(se, path, LINK_LABEL)


def derive_from(se, path, label):
    """SHA-256(``label`` || ECDH(the chip's LINK_SLOT key, the public key
    in the file ``path``)), or None when there is no such file. Each key
    a device derives this way has its own peer (whose private half
    provisioning dropped) and its own label: the link key, the shuffler's
    vault key (shuffler/vault.py), independent of each other."""
    try:
        with open(path, "rb") as f:
            peer = f.read()
    except OSError:
        return None
    return derive(se, peer, label)


def link_key(se, peer):
    """The link's MAC key, derived at boot and held only in RAM:
    SHA-256(LINK_LABEL || ECDH(chip's LINK_SLOT key, ``peer``)), ``peer``
    the public half of the key pair `shoe deploy` made and then dropped
    (link_peer.bin on the flash). The pit's copy is the same value, made on
    the technician's side from the other half (docs/security.md)."""
    return derive(se, peer, LINK_LABEL)


def derive(se, peer, label):
    shared = bytearray(32)
    se.ecdh(LINK_SLOT, peer, shared)
    h = hashlib.sha256(label)
    h.update(shared)
    return h.digest()
