"""The shoe's per-card path allocates nothing but its tags: the session's
inputs (journal record written and flushed, game core, event into the
outbox) and its step (framing, CRC, link write) run with MicroPython's heap
locked, so any allocation would raise MemoryError. The one exception is the
tag itself (link/auth.py): MicroPython's C ``hashlib`` makes a hash object
and a digest per message, so the signer runs with the lock lifted and the
garbage each tag leaves is measured against ``auth.TAG_GARBAGE``. Run from the .mpy files `shoe deploy`
stages, at the emulator board's heap, in the 64-bit unix VM and in the 32-bit
wasm32 VM (an allocation only a 32-bit board makes fails there)."""

import pytest

from support import wasm32vm
from host_tools import deploy
from host_tools.sim import vmcode
from host_tools.qa.bench import footprint

from firmware.link import auth

# Every dealing action (no more bets, card, cover, exposed, empty) and the
# link step that signs and frames its events, each under the lock once warm.
PROGRAM = vmcode.SINK_BOARD + vmcode.SHUFFLED_DECK + r"""
import micropython
from link.journal import Journal
from link.session import Session
from baccarat import game
import board_config

s = Session(SinkBoard(), board_config, Journal("journal.bin"))
s.boot()
import gc
sign = s.signer.sign_into
tag_most = [0, 0]   # the most heap one tag took, and how many tags were measured


def sign_unlocked(kind, seq, link, lstart, lend, payload, start, end, out, at):
    # The per-card path's one allocation (link/auth.py): let it, and measure it.
    locked_now = warm   # the loop below locks the heap for warm actions only
    if locked_now:
        micropython.heap_unlock()
    before = gc.mem_alloc()
    sign(kind, seq, link, lstart, lend, payload, start, end, out, at)
    used = gc.mem_alloc() - before   # negative when a collection ran in between: not counted
    if used > tag_most[0]:
        tag_most[0] = used
    tag_most[1] += 1
    if locked_now:
        micropython.heap_lock()


s.signer.sign_into = sign_unlocked
warm = False
s.up = True
s.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
deck = shuffled_deck(8, 7)
EXPOSE_AT = 150
COVER_AT = 300
BETS, CARD, COVER, EXPOSED, EMPTY = 0, 1, 2, 3, 4
NAMES = ("bets", "card", "cover", "exposed", "empty")
locked = [0, 0, 0, 0, 0]
g = s.game


def act(kind, c, up):
    if kind == BETS:
        s.bets()
    elif kind == CARD:
        s.card(c, up)
    elif kind == COVER:
        s.cover()
    elif kind == EXPOSED:
        s.exposed()
    else:
        s.empty()
    s.step()


i = 0
kind = BETS
while g.phase != game.NO_SHOE and i < 416:
    if g.phase == game.OPEN:
        kind = BETS
    elif i == COVER_AT and kind != COVER:
        kind = COVER
    elif i == EXPOSE_AT and kind == CARD:
        kind = EXPOSED
    elif i > COVER_AT + 1 and g.phase == game.DEALING:
        kind = EMPTY  # mid-round: the shoe cannot finish it (13E)
    else:
        kind = CARD
    warm = i > 40
    ok = True
    if warm:
        micropython.heap_lock()
    try:
        act(kind, deck[i], i == 0)
    except MemoryError:
        ok = False
    if warm:
        micropython.heap_unlock()
        locked[kind] += 1
    if not ok:
        print("allocated under the heap lock:", NAMES[kind], "at card", i)
        raise SystemExit(1)
    if kind == CARD or kind == EXPOSED and i == EXPOSE_AT:
        i += 1
    # The host's ack: HMAC objects, outside the card path. It arrives as a
    # frame, so the link hears from the host: without that the link goes
    # down after DOWN_MS of wall time (a loaded machine or the slower wasm32
    # VM gets there mid-shoe) and the link_down report, a timer's event and
    # not a card's, allocates once under the lock.
    s.acked_to(s.seq)
    s.last_rx = s.board.ticks_ms()
print(" ".join([str(n) for n in locked]), s.seq, s.signed, g.phase == game.NO_SHOE, tag_most[0], tag_most[1])
"""


def _run(which, tmp_path, program):
    manifest = deploy.stage("emulator", tmp_path, "HOT", bytes(32))
    if which == "micropython":
        proc = footprint.run_in_vm(tmp_path, manifest["heap"], program)
        return proc.returncode, proc.stdout, proc.stderr
    rc, out, err = wasm32vm.run_micropython(["-c", program], heap=manifest["heap"],
                                            extra_paths=[str(tmp_path)], cwd=str(tmp_path))
    return rc, out.decode(), err.decode()


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_every_dealing_action_passes_the_session_with_the_heap_locked(tmp_path, which):
    """In wasm32 an integer past 31 bits is a heap object, as on the boards:
    arithmetic on one fails there though the 64-bit unix VM passes."""
    rc, out, err = _run(which, tmp_path, PROGRAM)
    assert rc == 0, (out + err).strip()
    words = out.split()
    bets, cards, cover, exposed, empty, seq, signed = map(int, words[:7])
    assert bets > 30 and cards > 250 and (cover, exposed, empty) == (1, 1, 1)
    assert seq > 400 and signed == seq and words[7] == "True"
    tag_most, tags = int(words[8]), int(words[9])
    # Every tag was measured, and the most any one left is the bound the
    # firmware states (in 32 bits; the 64-bit VM's objects are twice the size).
    assert tags >= signed
    assert 0 < tag_most <= auth.TAG_GARBAGE * (2 if which == "micropython" else 1), tag_most


FIRST_SIGHT = vmcode.LOCK_HEAP + r"""
from baccarat import game
g = game.Game(lambda buf, n: None)


def all_cards():
    for c in range(52):
        g.events.out.reset()
        g.events.card_field(c)


lock_heap()
try:
    all_cards()
finally:
    micropython.heap_unlock()
print(bytes(g.events.out.buf[:g.events.out.n]).decode())
"""


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_each_card_name_is_written_without_allocating_the_first_time(tmp_path, which):
    """A card's name must cost nothing even when its rank or suit has not been
    seen before in this VM: a str index interns a new one-letter string, which
    takes heap whenever the interned-string pool is full. That happened in CI
    (tests/e2e/test_intake.py, heap locked); lock_heap makes it certain."""
    rc, out, err = _run(which, tmp_path, FIRST_SIGHT)
    assert rc == 0, (out + err).strip()
    assert out.strip() == ',"card":"KS"'
