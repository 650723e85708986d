"""Shoe keys on the pit PC: the one place that reads and writes them.

A shoe key is the HMAC key every link frame is signed with (docs/protocol.md):
whoever can read it can forge a shoe's record or command it. So a key file is
written 0600 inside a directory made 0700 (the staging tree of `shoe deploy`,
the emulator's flash, the pit PC's key directory), and a key file that group
or others can read is refused when it is read, rather than trusted: that file
may already have been copied, and saying so is the only safe answer.
"""

import hashlib
import os
import stat

from host_tools.exits import ShoeError

KEY_BYTES = 32
FILE_MODE = 0o600
DIR_MODE = 0o700


class KeyFileError(ShoeError, ValueError):
    """A key file cannot be used; the message says why and what to do."""


def key_id(key):
    """A fingerprint that names the key in a store or a log without revealing it."""
    return hashlib.sha256(key).hexdigest()[:16]


def read_key(path):
    """The 32-byte key in ``path``; KeyFileError if it cannot be read, is not
    exactly 32 bytes, or is readable by group or others.

    The mode is checked on the descriptor the key was read from, so the file
    judged is the file read.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise KeyFileError("cannot read key file %s: %s" % (path, exc.strerror or exc)) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise KeyFileError("key file %s is not a regular file" % path)
        key = f.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise KeyFileError("key file %s holds %s bytes; a shoe key is exactly %d random bytes"
                           % (path, len(key) if len(key) <= KEY_BYTES else "more than %d" % KEY_BYTES,
                              KEY_BYTES))
    if mode & 0o077:
        raise KeyFileError(
            "key file %s can be read by %s (mode %03o): a shoe key must be private; run "
            "chmod 600 %s, and give the shoe a new key if anyone else may have copied it"
            % (path, "others" if mode & 0o007 else "its group", stat.S_IMODE(mode), path))
    return key


def private_dir(path):
    """Make directory ``path`` (and missing parents) 0700.

    A directory this call creates is 0700. An existing one that group or
    others can enter is narrowed to 0700 when it is ours and not a shared
    sticky directory such as /tmp; otherwise KeyFileError, since a key
    inside it would not be private.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        private_dir(parent)
    try:
        os.mkdir(path, DIR_MODE)
        os.chmod(path, DIR_MODE)  # mkdir's mode passes through the umask
        return
    except FileExistsError:
        pass
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise KeyFileError("%s is not a directory" % path)
    if st.st_mode & 0o077:
        if st.st_uid != os.getuid() or st.st_mode & stat.S_ISVTX:
            raise KeyFileError("%s is open to other users (mode %03o) and not ours to close: "
                               "keep keys in a private directory" % (path, stat.S_IMODE(st.st_mode)))
        os.chmod(path, DIR_MODE)


def write_key(path, key):
    """Write ``key`` to ``path`` as a 0600 file in a 0700 directory.

    The file is created with mode 0600 from its first byte (never written
    world-readable and then narrowed), and an existing file is narrowed
    before it is overwritten.
    """
    if len(key) != KEY_BYTES:
        raise KeyFileError("a shoe key is exactly %d bytes, not %d" % (KEY_BYTES, len(key)))
    private_dir(os.path.dirname(os.path.abspath(os.fspath(path))))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(fd, FILE_MODE)
        f.write(key)
        f.flush()
        os.fsync(fd)


def deployed_manifest(key_path):
    """The SHA-256 (hex) of the deploy record `shoe deploy` wrote beside the
    key (``<SHOE_ID>.manifest.json``, the device's manifest.json byte for
    byte): what the shoe's hello and signed checkpoints must name. None
    when there is no record."""
    record = os.path.splitext(os.fspath(key_path))[0] + ".manifest.json"
    try:
        with open(record, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


class Keys:
    """Shoe keys by shoe id: ``DIR/<shoe_id>.key`` (0600, as write_key leaves them), for
    the central consumer and `shoe verify --key-dir`.
    A missing key is looked for again later (it may be installed while the
    consumer runs); a key is read once."""

    def __init__(self, directory):
        self.dir = directory
        self.cache = {}
        from firmware.link import auth
        self._derive = auth.frames_key

    def frames_key(self, shoe_id):
        fkey = self.cache.get(shoe_id)
        if fkey is None:
            if os.sep in shoe_id or shoe_id.startswith("."):
                return None
            path = os.path.join(self.dir, shoe_id + ".key")
            if not os.path.exists(path):
                return None
            fkey = self.cache[shoe_id] = self._derive(read_key(path))
        return fkey
