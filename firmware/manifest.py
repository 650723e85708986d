"""The firmware manifest: every file `shoe deploy` installs, with its SHA-256.

One implementation for every place that hashes firmware files, so they
cannot disagree on what a file's hash is: main.py's boot self-test, `shoe
deploy` when it stages (CPython) and when it verifies the copy (this file's
source runs on the device), and the emulator when it writes its board_config.

Files are read in fixed chunks into one buffer: hashing a 30 KiB .mpy on a
board costs 512 bytes of heap, not 30 KiB.

At boot this is the one firmware module imported before the check. It is in
the manifest like any other file, so a damaged copy either fails to import
or fails its own hash, and either way the shoe halts (main.py).
"""

import binascii
import hashlib
import json

NAME = "manifest.json"
CHUNK = 512


def file_sha256(path, buf=None):
    """The lower-hex SHA-256 of the file at ``path``; OSError if it cannot be
    read. ``buf``: a bytearray to read into, to reuse one over many files."""
    if buf is None:
        buf = bytearray(CHUNK)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(buf if n == len(buf) else memoryview(buf)[:n])
    return binascii.hexlify(h.digest()).decode()


def load(root):
    """The ``files`` map (path -> hex SHA-256) of root/manifest.json, or None
    when there is no manifest: a development tree is not checked."""
    try:
        f = open(root + "/" + NAME)
    except OSError:
        return None
    with f:
        return json.load(f)["files"]


def check(root, files):
    """Why the files under ``root`` differ from ``files``, or None when every
    listed file is there with its listed hash. Stops at the first problem."""
    buf = bytearray(CHUNK)
    for path in sorted(files):
        try:
            got = file_sha256(root + "/" + path, buf)
        except OSError:
            return "self-test: %s listed in the manifest is missing" % path
        if got != files[path]:
            return "self-test: %s does not match the manifest (sha256 %s..., expected %s...)" % (
                path, got[:12], files[path][:12])
    return None


def report(paths):
    """Print one "<sha256> <path>" line per file, or "missing <path>": what
    `shoe deploy` reads back from the device after copying."""
    buf = bytearray(CHUNK)
    for path in paths:
        try:
            print(file_sha256(path, buf), path)
        except OSError:
            print("missing", path)
