"""The shoe: board -> reader -> game core -> link, in one bounded polling loop.

A polling loop rather than asyncio: every step has a bounded cost (reads
never wait, frames are sent a few per step), the watchdog is fed once per
pass, and the same loop runs on the boards and in the unix VM.

Nothing is sent before the boot self-test has run: the file system against
the manifest first (manifest.boot; docs/security.md, "The code"),
then known answers, then the journal (Session.boot).
"""

import binascii
import hashlib
import json
import os
import sys
import time

MANIFEST = "manifest.json"
SESSION_ROOM = 8192
# The names sys.modules is sized for before the shoe's modules load: the
# resident set with the board's (about 40) and the on-demand ones, with a
# few to spare (the footprint bench loads them all, tests/e2e).
MODULES_RESERVE = 52
NO_KEY = bytes(32)   # the link key of a shoe that has none (_check_key)
# An error report takes heap (its text, and its tag's garbage,
# link/auth.py TAG_GARBAGE): this much is held from boot and given up only
# when a report finds none, so the report of running out still goes out.
REPORT_RESERVE = 2048
# A constant of the code, so it needs no heap: what the shoe says when even
# the report of an error found no heap.
NO_HEAP = "internal error: out of memory, and its report found no heap either"

# Bits of board.buttons() and board.lights() (docs/design.md).
BUTTON_BETS = 1
BUTTON_EXPOSED = 2
BUTTON_NEW_SHOE = 4
LIGHT_PLAYER = 1
LIGHT_BANKER = 2
LIGHT_STOP = 4


def _reserve_modules():
    """Grow sys.modules' table (one block, 8 bytes a slot in 32 bits) to
    MODULES_RESERVE names while the heap is whole. Regrown at the last
    import instead, among the holes the imports leave, it found no run long
    enough (the 64-bit VM: 752 bytes for 47 slots, with 34 KiB free in holes
    of at most 336 bytes). A MicroPython dict keeps its table when names are
    removed, so placeholders put in and taken out leave it sized."""
    mods = sys.modules
    k = 0
    while len(mods) < MODULES_RESERVE:
        mods[-1 - k] = None   # small ints: no heap of their own
        k += 1
    while k:
        k -= 1
        del mods[-1 - k]


def _dir(path):
    cut = path.rfind("/")
    return path[:cut] if cut > 0 else "."


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def _check_files():
    """(halt, tilt, manifest digest): manifest.boot, run before any other
    firmware module is imported. The one module imported before it is
    manifest itself, so a .py beside manifest.mpy (it would be imported in
    its place) is moved into quarantine/ here first (as the shuffler's
    main.py does: the one step that cannot be in a module)."""
    root = _dir(globals().get("__file__", "main.py"))
    moved = []
    if _exists(root + "/manifest.py") and _exists(root + "/manifest.mpy"):
        if not _exists(root + "/quarantine"):
            os.mkdir(root + "/quarantine")
        os.rename(root + "/manifest.py", root + "/quarantine/manifest.py")
        moved.append("manifest.py")
    import manifest
    return manifest.boot(root, moved)  # boot-only: its heap goes back before the shoe loads


def _check_manifest():
    """The reason the shoe must not start, halted or tilted, or None."""
    halt, tilt, _ = _check_files()
    return halt or tilt


def _known_answers(session=None):
    from baccarat import cards, game
    from link import frame, hmac

    out = bytearray(16)
    frame.crc32_into(b"123456789", 0, 9, out, 0)
    if bytes(out[:8]) != b"cbf43926":
        return "self-test: CRC-32 known answer failed"
    # RFC 4231 test case 2.
    if binascii.hexlify(hmac.digest(b"Jefe", b"what do ya want for nothing?")) != \
            b"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843":
        return "self-test: HMAC-SHA256 known answer failed"
    # The core: burn 2C + 2 cards, then Player 9H KS (a natural 9) against
    # Banker 2C 3D (5): Ch 10 says the Player wins on two cards.
    results = []

    def keep(buf, n):
        if bytes(buf[:14]) == b'{"type":"resul':
            results.append(bytes(buf[:n]))

    # At boot the session's refill game, idle until the first refill, plays
    # the known answer: a third game made here took a heap hole at boot that
    # the session later missed.
    if session is None:
        g = game.Game(keep)
    else:
        g = session.scratch
        g.events.emit = keep
    try:
        g.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
        for name in ("2C", "4S", "5S"):
            g.card(cards.parse(name), False)
        g.bets()
        for name in ("9H", "2C", "KS", "3D"):
            g.card(cards.parse(name), False)
    finally:
        if session is not None:
            g.events.emit = session._scratch_emit  # as the session made it
            g.reset()
    r = results[0] if len(results) == 1 else b""
    for part in (b'"winner":"player"', b'"player_total":9', b'"banker_total":5'):
        if r.find(part) < 0:
            return "self-test: game core known answer failed (no %s)" % part.decode()
    return None


def _self_test(part):
    try:
        return part()
    except Exception as e:  # a self-test that crashes has failed
        return "self-test: %s" % e


def _halt(reason):
    sys.stderr.write("halted: %s\n" % reason)
    while True:  # no watchdog runs yet: the shoe stays halted until reflashed
        time.sleep(1)


def _check_key(board):
    """The halt reason when the board has no link key (the secure element
    that derives it does not answer, or the key file is gone), else None.
    The shoe then signs its hellos with the all-zero key, so the pit can
    tell "this shoe has no key" from "a wrong key" (docs/protocol.md 4):
    a hello under a key anyone knows proves nothing and is never recorded."""
    try:
        board.key()
        return None
    except Exception as e:
        board._key = NO_KEY
        return "no link key (%s): nothing this shoe sends can be verified" % e


def report(session, e, reserve):
    """Report ``e``, an exception the main loop caught, as ``internal
    error``. When the report itself finds no heap, the held ``reserve``
    (``reserve[0]``, REPORT_RESERVE bytes) is given up and NO_HEAP sent,
    which needs nothing of its own: the shoe never fails silently, and the
    loop goes on (never the REPL). ``keep_reserve`` takes it back later."""
    import gc
    try:
        session.error("internal error: %s" % e)
        return
    except MemoryError:
        pass
    if reserve[0] is None:
        # Said once already, and nothing taken back since: the shoe is
        # out of heap for good, and a report a pass would only flood.
        gc.collect()
        return
    reserve[0] = None
    gc.collect()
    try:
        session.error(NO_HEAP)
    except MemoryError:
        gc.collect()


def keep_reserve(reserve):
    """Hold REPORT_RESERVE bytes again if ``report`` gave them up (called
    where the loop collects, with no card due)."""
    if reserve[0] is None:
        try:
            reserve[0] = bytearray(REPORT_RESERVE)
        except MemoryError:
            pass


def _lights(session, game):
    if session.tilt is not None or session.halt is not None:
        return LIGHT_STOP
    due = session.game.next_due()
    if due < game.P1 or due > game.B3:
        return LIGHT_STOP
    # P1 B1 P2 B2 P3 B3 alternate from 0: even is the Player's.
    return LIGHT_BANKER if due & 1 else LIGHT_PLAYER


def run():
    try:
        halt, tilt, digest = _check_files()
    except Exception as e:  # a check that crashes has failed, and proves nothing
        halt, tilt, digest = "self-test: %s" % e, None, ""
    if halt is not None:
        _halt(halt)
    # Imported only now (it is one of the checked files), which also lets
    # this file import on a PC where no board_config has been generated.
    # The large buffers first (the outbox's ring, the card set), before the
    # imports below scatter small objects over the heap: MicroPython's heap
    # never moves objects, so later no hole might be big enough for them.
    from link.outbox import Outbox
    outbox = Outbox()
    # Room for the session's buffers (frames in and out, the event buffers of
    # its game and of its refill's scratch game, the journal's record), held
    # from here and given back just before the session is made: those blocks
    # of about 1 KiB each then find one run of free heap, not scattered holes.
    room = bytearray(SESSION_ROOM)
    _reserve_modules()
    import board_config
    try:
        board = __import__(board_config.MODULE, None, None, ("Board",)).Board(board_config)
    except Exception as e:  # no link to say it on: halted, never the REPL
        _halt("board: %s" % e)
    board.manifest = digest
    board.feed()
    parts = getattr(board, "parts", None)
    refused = parts.halt if parts is not None else None   # a part dealing is unsafe without
    no_key = _check_key(board)
    if refused is None:
        refused = no_key
    cardset = None
    set_problem = None
    if getattr(board, "reader", None) is not None:
        # Only a shoe with a reader pays the heap for the card-set checks.
        import reading as _reading
        cardset, set_problem = _reading.load(board)
    from baccarat import game
    from link.journal import Journal
    from link.session import Session

    import gc
    room = None
    gc.collect()
    # The journal on a ring of raw flash where the board has one and
    # board_config sizes it (link/ring.py: no sector erase on a card's
    # path), else a littlefs file.
    ring = getattr(board_config, "JOURNAL_RING", 0)
    journal = None
    if ring and hasattr(board, "journal_store"):
        try:
            from link.ring import RingJournal
            journal = RingJournal(board.journal_path, board.journal_store(ring))
        except Exception as e:  # no ring: halted, and the hello says why
            refused = refused or "journal ring: %s" % e
    if journal is None:
        journal = Journal(board.journal_path)
    session = Session(board, board_config, journal, outbox)
    problem = tilt or refused or _self_test(lambda: _known_answers(session))
    board.feed()
    gc.collect()  # the self-test's throw-away results
    reading = None
    if cardset is not None:
        reading = _reading.start(board, session, cardset)
    session.boot(problem)
    if set_problem is not None:
        session.error(set_problem)
    degraded = parts.degraded() if parts is not None else ""
    if degraded and session.halt is None:
        session.error("dealing goes on without: " + degraded)
    # The heap left for play, for `status` (a technician's acceptance reads it).
    gc.collect()
    if hasattr(gc, "mem_free"):
        session.heap_free = gc.mem_free()
    # A board may add a step of its own to each pass, run where the buttons
    # are read: the emulator's dealer channel (firmware/emulator/shoe_board.py).
    # No shoe's board has one.
    extra = getattr(board, "step", None)
    idle = getattr(board, "idle", None)
    reserve = [bytearray(REPORT_RESERVE)]
    was_empty = False
    was_phase = -1
    while True:
        board.feed()
        phase = session.game.phase
        if phase != was_phase and (phase == game.OPEN or phase == game.NO_SHOE):
            # The per-card path's one garbage, its tags' (link/auth.py),
            # is collected here, each time betting opens or the shoe ends
            # and no card is due, so a collection does not fall on a
            # card's 50 ms (docs/cost_model.md).
            gc.collect()
            keep_reserve(reserve)
        was_phase = phase
        try:
            session.step()
            if reading is not None and session.tilt is None and session.halt is None:
                reading.step()
            if extra is not None:
                extra(session, reading)
            pressed = board.buttons()
            if pressed & BUTTON_BETS:
                session.bets()
            if pressed & BUTTON_EXPOSED:
                session.exposed()
            if pressed & BUTTON_NEW_SHOE:
                d, des, exp, batch = session.shoe_values
                session.new_shoe(d, des, exp, batch=batch)
            empty = board.empty()
            if empty and not was_empty:
                session.empty()
            was_empty = empty
        except Exception as e:  # bad input never stops the shoe (docs/design.md)
            report(session, e, reserve)
        board.lights(_lights(session, game))
        board.gate(session.tilt is None and session.halt is None and session.game.next_due() >= 0)
        if idle is not None:
            idle()


if __name__ == "__main__":
    run()
