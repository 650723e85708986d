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

The manifest covers every file on the device, not only those it hashes:
``files`` (path -> SHA-256: code, board_config, the key) and ``data``, the
few names the device writes itself or that carry their own check (the
journal and its companions, link/journal.py; the card set, which carries its
own SHA-256, cardset/registry.py). Anything else on the file system is a
stray (``strays``): a file nobody deployed, such as a ``.py`` that
MicroPython would import in place of the deployed ``.mpy``.
"""

import binascii
import hashlib
import json
import os

NAME = "manifest.json"
CHUNK = 512
# The names a device's own code writes at run time, or that carry their own
# check: journal.bin and the suffixes link/journal.py adds to it, the
# journal ring's block list and its one-block files (boards/ring_flash.py; a
# name ending in "/" covers a folder) and the emulator's NOR flash for it
# (emulator/shoe_board.py), the card set, and the shuffler's custody state
# with its temporary copy (shuffler/device.py STATE_FILE): a deployed
# shuffler's first power cycle after a load would otherwise quarantine its
# custody state and tilt (tests/e2e/test_boot_manifest.py keeps these in step
# with the code). Each name is over ten characters, so a constant of this
# module, not an interned name: the list costs the boot's name pool nothing.
DATA = ("journal.bin", "journal.bin.tilt", "journal.bin.mark", "journal.bin.bad",
        "journal.bin.tmp", "journal.bin.ring", "journal.bin.ring.d/", "journal.bin.nor",
        "cardset.bin", "custody.json", "custody.json.tmp")
QUARANTINE = "quarantine"
_DIR = 0x4000


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


def read(root):
    """(manifest dict, lower-hex SHA-256 of manifest.json, None), or (None,
    "", why) when it is missing or is not a manifest."""
    path = root + "/" + NAME
    try:
        digest = file_sha256(path)
    except OSError:
        return None, "", "self-test: %s is missing: nothing on this device is vouched for" % NAME
    try:
        with open(path) as f:
            m = json.load(f)
        files = m["files"]
        data = m.get("data", [])
        if not isinstance(files, dict) or not isinstance(data, list):
            raise ValueError("files or data of the wrong kind")
    except Exception as e:   # any damage: unreadable, not JSON, fields missing
        return None, digest, "self-test: %s is not a valid manifest (%s)" % (NAME, e)
    return m, digest, None


def walk(root, rel=""):
    """Every file under ``root`` as a path relative to it, directories left out."""
    out = []
    base = root + "/" + rel if rel else root
    for name in sorted(os.listdir(base)):
        path = rel + "/" + name if rel else name
        if os.stat(root + "/" + path)[0] & _DIR:
            out.extend(walk(root, path))
        else:
            out.append(path)
    return out


def strays(root, m):
    """Files under ``root`` the manifest ``m`` neither lists nor names as data."""
    files = m["files"]
    data = m.get("data", [])
    folders = [d for d in data if d.endswith("/")]
    return [p for p in walk(root) if p != NAME and p not in files and p not in data
            and not [d for d in folders if p.startswith(d)]]


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def quarantine(root, rel):
    """Move ``rel`` under quarantine/ (kept for inspection, out of every import path)."""
    parts = (QUARANTINE + "/" + rel).split("/")
    at = root
    for part in parts[:-1]:
        at = at + "/" + part
        if not _exists(at):
            os.mkdir(at)
    os.rename(root + "/" + rel, root + "/" + QUARANTINE + "/" + rel)


def boot(root, moved):
    """The boot's check, one function for the shoe (firmware/main.py) and
    the shuffler (firmware/shuffler/main.py): ``boot_check``, then this
    module leaves the heap (lazy.py) before the device's own modules load.
    Returns (halt, tilt, digest of manifest.json).

    One step cannot be here: before this module is imported, a
    manifest.py beside manifest.mpy (it would be imported, and run, in its
    place) must be moved into quarantine/, so each main.py does that itself
    (the one file MicroPython never takes from a .mpy) and passes it in
    ``moved``."""
    result = boot_check(root, moved)
    from lazy import unload
    unload("manifest")
    return result


def boot_check(root, moved):
    """The boot's check of the whole file system (firmware/main.py): returns
    (halt, tilt, digest of manifest.json). ``halt`` names a listed file that
    is missing or altered, or a missing or damaged manifest: code nobody
    vouches for must not run, so nothing is imported and nothing is sent.
    ``tilt`` names the first file nobody deployed (each is moved into
    quarantine/ before anything can import it; ``moved`` lists any main.py
    moved already): every file that stays is verified, so the device may
    report the tilt with its verified code."""
    m, digest, tilt = read(root)
    if m is None:
        # Without a manifest nothing on the flash is vouched for: any module
        # imported next could be anyone's (a link/reports.py beside the
        # deployed .mpy, say), and the link key is derived by that code. So
        # nothing is imported and nothing is sent: the device halts.
        return tilt, None, digest
    halt = check(root, m["files"])
    if halt is None:
        early = len(moved)
        for rel in strays(root, m):
            if not rel.startswith(QUARANTINE + "/"):
                quarantine(root, rel)
            elif rel[len(QUARANTINE) + 1:] in moved[:early]:
                continue   # moved by main.py this boot, already counted
            moved.append(rel)
    if moved:
        first = moved[0]
        twin = first[:-3] + ".mpy"
        if first.endswith(".py") and (first == "manifest.py" or twin in m["files"]):
            why = "%s would be imported in place of the deployed %s" % (first, twin)
        else:
            why = "%s is not in the manifest" % first
        tilt = "self-test: %s (%d file(s) not deployed, in %s/)" % (why, len(moved), QUARANTINE)
    return halt, tilt, digest


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
