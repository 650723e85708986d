"""The shuffler's boot and loop: board -> mechanism + custody core -> link,
in one bounded polling loop, like the shoe's main.py (and under
firmware/shuffler/, so the shoe's image never carries it). Compiled to .mpy
on the flash; the image's main.py (shuffler/entry.py) runs the boot check
first and hands its result over.

Boot order: the file system against the manifest first (shuffler/entry.py),
then the known-answer self-test (SHA-256, HMAC-SHA256, HMAC-DRBG) before
anything is sent; the card set; the session (the journal replay rebuilds
the link's state); then the device (entropy start-up test, the custody
state restored after a power cut, the elevator homed). A file nobody
deployed, or a failed self-test, leaves the shuffler saying why in its
hello and doing nothing else. Each pass of the loop feeds the watchdog,
serves the link, watches the door and feeds at most one card.
"""

import gc
import sys

def boot_stages(checked=None):
    """boot() in stages: a generator that yields None between them and
    (board, session, device) last. The 32-bit VM of the heap probe
    (host_tools/qa/shuffler_heap32.py) collects garbage only between its
    top-level steps, so it runs one stage a step, as boot() collects between
    them. ``checked``: the boot check's (halt, tilt, manifest digest) from
    the image's main.py (shuffler/entry.py), which halts before this module
    is imported when ``halt`` is set; None when run as ``-m shuffler.main``
    (the emulator's benches, the 64-bit heap probe), a declared image's modules
    with no deploy manifest: nothing deployed to check."""
    files, digest = checked[1:] if checked else (None, "")
    import board_config
    from link.outbox import Outbox
    from shuffler.link import OUTBOX_BYTES, OUTBOX_SLOTS
    outbox = Outbox(OUTBOX_BYTES, OUTBOX_SLOTS)
    board = __import__(board_config.MODULE, None, None, ("Board",)).Board(board_config)
    board.manifest = digest
    # A part shuffling is unsafe without (boards/parts.py; the emulator's
    # board builds its parts through it, board_machine.py not yet: parts.py
    # adds 7 names, as many as are left before the 32-bit VM's next name pool;
    # MicroPython 1.27.0 wasm32, python -m host_tools.qa.shuffler_heap32;
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
    if files is None and not refused:
        # Boot-only code: let go once it has run (lazy.py), as manifest.py is.
        from shuffler import selftest
        refused = selftest.run()
        selftest = None
        from lazy import unload
        unload("shuffler.selftest")
    problem = files if files is not None else refused
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


def boot(stages=None):
    """Everything up to the loop: (board, session, device), a collection
    between stages. Kept apart from run() so that a probe can measure the
    booted heap. ``stages``: shuffler/entry.py's, the boot check first."""
    for booted in stages or boot_stages():
        gc.collect()
    return booted


def run(stages=None):
    board, session, device = boot(stages)
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
