"""The shuffler: board -> mechanism + custody core -> link, in one bounded
polling loop, like the shoe's main.py (and under firmware/shuffler/, so the
shoe's image never carries it).

Boot order: the file system against the manifest first, as the shoe
(manifest.boot; docs/security.md, "The code"): a listed file missing
or altered, a file nobody deployed (moved into quarantine/ before anything
can import it) or a missing manifest leaves the shuffler halted, saying why
in its hello and doing nothing else. Then the known-answer self-test (SHA-256, HMAC-SHA256, HMAC-DRBG)
before anything is sent; the card set; the session (the journal replay
rebuilds the link's state); then the device (entropy start-up test, the
custody state restored after a power cut, the elevator homed). A failed
self-test leaves the shuffler saying why in its hello and doing nothing
else. Each pass of the loop feeds the watchdog, serves the link, watches the
door and feeds at most one card.
"""

import binascii
import gc
import hashlib
import os
import sys

MANIFEST = "manifest.json"


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def _root():
    """The directory this main runs from, and whether it is a deployed image:
    ``shoe deploy --device shuffler`` installs this file as the image's
    main.py at its root, beside manifest.json. Run as ``-m shuffler.main``
    (the emulator, the heap probes) the code is a declared image's modules
    in a directory many emulated flashes share
    (host_tools/sim/shuffler_emulate.py ``stage_code``), with no deploy
    manifest: there is nothing deployed to check."""
    path = globals().get("__file__", "main.py")
    cut = path.rfind("/")
    root = path[:cut] if cut > 0 else "."
    name = path[cut + 1:] if cut >= 0 else path
    deployed = name in ("main.py", "main.mpy") and not root.endswith("shuffler")
    return root, deployed


def _check_files():
    """(halt, tilt, manifest digest): manifest.boot before any
    other firmware module is imported, as firmware/main.py runs it for the
    shoe (the same steps: a manifest.py beside manifest.mpy would be
    imported in its place, so it goes to quarantine/ first)."""
    root, deployed = _root()
    if not deployed:
        return None, None, ""
    moved = []
    if _exists(root + "/manifest.py") and _exists(root + "/manifest.mpy"):
        if not _exists(root + "/quarantine"):
            os.mkdir(root + "/quarantine")
        os.rename(root + "/manifest.py", root + "/quarantine/manifest.py")
        moved.append("manifest.py")
    import manifest
    return manifest.boot(root, moved)  # boot-only: its heap goes back before the shuffler loads


def _halt(reason):
    """A listed file is missing or altered: none of its code may run, so
    nothing is imported and nothing is sent, as the shoe halts."""
    sys.stderr.write("halted: %s\n" % reason)
    import time
    while True:  # no watchdog runs yet: halted until reflashed
        time.sleep(1)


def _known_answers():
    if binascii.hexlify(hashlib.sha256(b"abc").digest()) != \
            b"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad":
        return "self-test: SHA-256 known answer failed"
    from link import hmac
    # RFC 4231 test case 2.
    if binascii.hexlify(hmac.digest(b"Jefe", b"what do ya want for nothing?")) != \
            b"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843":
        return "self-test: HMAC-SHA256 known answer failed"
    from shuffler import drbg
    # NIST CAVP HMAC_DRBG.rsp [SHA-256], no reseed, COUNT = 0: instantiate,
    # generate 1024 bits, generate 1024 bits; the first 16 bytes of the second.
    d = drbg.HmacDrbg()
    d.instantiate_with(binascii.unhexlify("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488"),
                       binascii.unhexlify("659ba96c601dc69fc902940805ec0ca8"), b"")
    out = bytearray(128)
    d.generate_into(out)
    d.generate_into(out)
    if binascii.hexlify(out[:16]) != b"e528e9abf2dece54d47c7e75e5fe3021":
        return "self-test: HMAC-DRBG known answer failed"
    return None


def _self_test():
    try:
        return _known_answers()
    except Exception as e:
        return "self-test: %s" % e


def boot_stages():
    """boot() in stages: a generator that yields None between them and
    (board, session, device) last. The 32-bit VM of the heap probe
    (host_tools/qa/shuffler_heap.py) collects garbage only between its
    top-level steps, so it runs one stage a step, as a board would collect
    during the boot; boot() runs them all."""
    try:
        halt, files, digest = _check_files()
    except Exception as e:  # a check that crashes has failed, and proves nothing
        halt, files, digest = "self-test: %s" % e, None, ""
    if halt is not None:
        _halt(halt)
    # The check's garbage (a file object and a hash per file, the listing)
    # goes before the board's buffers are made, so they find one clean run.
    yield None
    import board_config
    from link.outbox import Outbox
    from shuffler.link import OUTBOX_BYTES, OUTBOX_SLOTS
    outbox = Outbox(OUTBOX_BYTES, OUTBOX_SLOTS)
    board = __import__(board_config.MODULE, None, None, ("Board",)).Board(board_config)
    board.manifest = digest
    # A part shuffling is unsafe without (boards/parts.py; the emulator's
    # board builds its parts through it, board_machine.py not yet: parts.py's
    # names take the 32-bit VM's name pools past their 1,260th name, 6 are
    # left; MicroPython 1.27.0 wasm32, python -m host_tools.qa.shuffler_heap32;
    # docs/shuffler.md "Footprint").
    refused = getattr(board, "halt", None)
    # The link key first: with a secure element it is
    # derived by a boot-only module (drivers/atecc608_link.py) that is let go
    # at once, and the hole it leaves is filled by the modules loaded next,
    # not left among the session's and device's buffers. Without it the
    # shuffler halts and signs its hellos under the all-zero key, as the
    # shoe does (firmware/main.py), so the pit tells "no key" from "wrong key".
    try:
        board.key()
    except Exception as e:
        board._key = bytes(32)
        refused = refused or str(e)
    board.feed()
    yield None
    from cardset import registry
    reg = registry.load(board.cardset_path)
    yield None
    from link.journal import Journal
    from shuffler.device import Device
    from shuffler.link import ShufflerSession
    yield None
    # Files nobody deployed were quarantined: the shuffler stays halted
    # (hellos saying why) until it is looked at and reflashed.
    problem = files if files is not None else refused or _self_test()
    gc.collect()
    yield None
    session = ShufflerSession(board, board_config, Journal(board.journal_path), outbox)
    session.boot(problem)
    degraded = getattr(board, "degraded", None)
    if degraded and session.halt is None:
        session.error(degraded)   # the part that is missing, and its bus's answer
    yield None
    device = Device(board, session, reg)
    session.device = device   # for the bench questions (shuffler/probes.py)
    yield None   # its buffers are made; the start-up (entropy test, custody restored, homing) makes garbage
    if problem is None and session.tilt is None:
        device.start()
    yield board, session, device


def boot():
    """Everything up to the loop: (board, session, device). Kept
    apart from run() so that a probe can measure the booted heap."""
    for booted in boot_stages():
        gc.collect()
    return booted


def run():
    board, session, device = boot()
    gc.collect()
    if hasattr(gc, "mem_free"):
        session.heap_free = gc.mem_free()   # left after boot, for `status` (link/core.py)
    import board_config
    from shuffler.link import COMPACT_BYTES
    compact_at = getattr(board_config, "JOURNAL_COMPACT", COMPACT_BYTES)
    while True:
        board.feed()
        try:
            session.step()
            if session.halt is None and session.tilt is None:
                line = board.operator_line()
                if line is not None:
                    device.button(line)
                device.step()
        except Exception as e:  # bad input never stops the machine
            session.error("internal error: %s" % e)
            sys.print_exception(e) if hasattr(sys, "print_exception") else None
        board.lights(device.phase == 0 and session.tilt is None and session.halt is None,
                     device.sealed(), device.faulted())
        if device.phase == 0:
            session.maybe_compact(compact_at)
            board.idle()  # nothing running: give the CPU back


if __name__ == "__main__":
    run()
